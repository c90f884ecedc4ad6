"""Every bound `keel serve` puts on what a caller sends, in one place.

A caller of the API is not trusted the way a brain's author is: whatever a request holds,
the server answers it with a status that says what was wrong — 413 for a body too large to
read, 422 for a value past a bound, naming the field — and never with a 500, a process
that holds an unbounded value, or a run it accepted and then lost. docs/service.md and
docs/limits.md list these for callers; keep the three in step. (Bounds on a brain's own
content are `keel.brain.limits`.)
"""

from __future__ import annotations

from datetime import UTC, datetime

from keel.brain.limits import Range

# The bytes of one request's body, counted as they arrive (a chunked body has no length
# up front). Far above any turn, event or run a caller sends; `keel serve --max-body`
# sets it, within `BODY_BYTES`, for a webhook that sends more (or a server that wants less).
MAX_BODY_BYTES = 1 << 20
BODY_BYTES = Range(low=1 << 10, high=1 << 30)  # 1 KiB to 1 GiB

# Ids (bots, chats, contexts, entity keys, message ids) and texts (messages) are bounded so
# one request cannot make the server hold or store an unbounded value.
MAX_NAME = 512
MAX_TEXT = 100_000
MAX_LIST = 100

# Levels of nesting in a free-form JSON value (an event's payload, a scenario's vars), the
# value itself being the first. Every layer below — the runs' journal, brain code's frames,
# the database — walks such a value level by level; this keeps each walk far from
# Python's recursion limit.
MAX_JSON_DEPTH = 32

# Times a caller names: within what every database and Python's datetime hold, in UTC.
EARLIEST = datetime(1970, 1, 1, tzinfo=UTC)
LATEST = datetime(9000, 1, 1, tzinfo=UTC)
