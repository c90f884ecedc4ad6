"""Every bound Keel puts on a brain's content, in one place.

Brain content is trusted not to be malicious, never to be correct: a huge number, a file
that never ends or a YAML document nested a hundred thousand levels deep must cost only
its own file. Each bound here is checked once, where the content is read or validated,
and a value past it skips its file (or its access rule) with a message that names the
bound. docs/limits.md lists them for brain authors; keep the two in step.
"""

from __future__ import annotations

from dataclasses import dataclass

# -- reading files ----------------------------------------------------------------------

# A content file: a context, role, entity, skill, FEATURE.md, MANIFEST, access.yaml or a
# code file. Far above any real one; a file past it is skipped before it is read whole.
MAX_FILE_BYTES = 1 << 20
# A `state/*.sql` file may carry sample rows, so it gets more room.
MAX_SQL_BYTES = 32 << 20

# -- YAML ---------------------------------------------------------------------------------

# Characters of one YAML document (a frontmatter, MANIFEST.yaml or access.yaml).
MAX_YAML_CHARS = 256 << 10
# Documents the fast (YAML 1.1) parser refuses are read again by the exact (YAML 1.2)
# parser, which is about ten times slower; beyond this size the fast parser's verdict is
# final, so no one file can hold up the load of the rest.
MAX_EXACT_YAML_CHARS = 64 << 10
# Collections nested inside one another, counted through aliases.
MAX_YAML_DEPTH = 64
# Values (nodes) of a document once every alias is expanded: "billion laughs" stops here,
# and so does a document so large that building its values would take seconds (ruamel
# builds some 50,000 a second). An access.yaml holds about six per rule: 4,000 rules fit.
MAX_YAML_NODES = 25_000
# Digits of one integer (Python refuses to read more than 4,300; no setting needs 20).
MAX_INT_DIGITS = 100

# Problems reported for one file; the rest are counted in one line.
MAX_PROBLEMS = 20

# -- text values --------------------------------------------------------------------------

# An entity key bound by access.yaml or named in a reach (as a turn's own keys are).
MAX_ENTITY_CHARS = 200
# A chat id in access.yaml, and a chat, thread or message id a caller names.
MAX_CHAT_ID_CHARS = 256
# A bot's name where a caller names it (access.yaml's bot names are ids: 128).
MAX_BOT_CHARS = 128

# -- brain code's answers -------------------------------------------------------------------

# Sections one `render` may return. Each costs Keel's process a check and a place in the
# block; a render past this many fails closed, like any answer of the wrong shape.
MAX_RENDER_SECTIONS = 64


# -- numeric settings ---------------------------------------------------------------------


@dataclass(frozen=True, slots=True, kw_only=True)
class Range:
    """The values a numeric setting may take, both ends included."""

    low: int
    high: int


CHARS = Range(low=1, high=1_000_000)  # chars: one context's rendered size
MAX_ACTIVE = Range(low=0, high=1_000)  # maxActive: contexts one turn may carry
TURN_CHARS = Range(low=1, high=10_000_000)  # turnChars: all of a turn's contexts
KEEP = Range(low=0, high=10_000)  # keep: turns an inferred link sticks
CODE_TIMEOUT_MS = Range(low=1, high=600_000)  # codeTimeoutMs: one brain-code call
STATE_ROWS = Range(low=0, high=10_000)  # state.rows: rows one view shows
STATE_READ_TIMEOUT_MS = Range(low=1, high=600_000)  # state.readTimeoutMs: one view's read
RETENTION_DAYS = Range(low=0, high=36_500)  # messageOrigins.retentionDays (100 years)
CONTENT_PROBE_SECONDS = Range(low=0, high=3_600)  # contentProbe.context
MODEL_WINDOW = Range(low=1, high=10_000_000)  # model.window (tokens)
OUTPUT_RESERVE = Range(low=0, high=10_000_000)  # model.output_reserve (tokens)
INPUT_ALLOCATION = Range(low=1, high=10_000_000)  # model.input_allocation (tokens)
SECTION_BUDGET = Range(low=1, high=10_000_000)  # sections: a section's budget (tokens)
APPROVAL_TIMEOUT_SECONDS = Range(low=1, high=366 * 86_400)  # approvals.timeout (a year)
MAX_SECTION_ID_CHARS = 200
