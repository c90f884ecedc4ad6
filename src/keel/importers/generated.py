"""The text of every file `keel import` writes, and how a re-run knows the files it wrote.

A context file carries `# imported from "<source>" by keel import` as the first line of
its frontmatter (a YAML comment, so Keel's strict frontmatter does not see it), and its
code half the same line at its top. The FEATURE.md and the role file the import creates
carry `# written by keel import`. A file without its line is the author's: never
overwritten, never removed.

Every file here has a fixed shape, and text from the repository — a path, a description, a
glob — enters it only as a literal written by `keel.importers.quoting.quoted`, which YAML
and Python read back as exactly that text: a folder named `x\nentity: ...` cannot add a
key to a frontmatter or a statement to code. Rule bodies are Markdown after the
frontmatter, data to the brain. `brain_refusal` reads a file back with the brain's own
parser before it is written.
"""

from __future__ import annotations

import ast
import re
import sys
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path

from keel.brain.files import Location, location_of, parse_file
from keel.brain.limits import CHARS
from keel.brain.reading import size_limit
from keel.brain.specs import WhenWord
from keel.budget import render_block
from keel.errors import ContentError
from keel.importers.globs import Dialect
from keel.importers.quoting import quoted, shown, unquoted
from keel.importers.rules import TOOL_NAMES, Notice, Rule, Tool

WRITTEN = "# written by keel import"
_OWNER = re.compile(r'^# imported from ("(?:[^"\\]|\\.)*") by keel import(?:\s|$)')
# The marker as versions before quoting wrote it: the path as it was, on one line.
_OLD_OWNER = re.compile(r"^# imported from (.+?) by keel import(?:\s|$)")
_HEAD_LINES = 4


def marker(source: str) -> str:
    """The line that says which source a context file was imported from."""
    return (
        f"# imported from {quoted(source)} by keel import — edit the source and re-run; "
        "delete this line to keep your own edits"
    )


def owner_of(text: str) -> str | None:
    """The source a file was imported from, if `keel import` wrote it."""
    for line in text.splitlines()[:_HEAD_LINES]:
        found = _OWNER.match(line)
        source = unquoted(found.group(1)) if found is not None else None
        if source is not None:
            return source
        old = _OLD_OWNER.match(line)
        if old is not None:
            return old.group(1)
    return None


def written_by_import(text: str) -> bool:
    """Whether a FEATURE.md or role file is one `keel import` created."""
    return any(line.startswith(WRITTEN) for line in text.splitlines()[:_HEAD_LINES])


def block_chars(context: str, instructions: str) -> int:
    """The size of the context's block as Keel renders it (`keel.budget.render_block`)."""
    block = render_block(
        context=context, entity=None, instructions=instructions, views=(), chars=sys.maxsize
    )
    assert block is not None, "a block always fits in sys.maxsize characters"
    return block.chars


def context_chars(
    source: str, ident: str, body: str, turn_chars: int | None
) -> tuple[int, tuple[Notice, ...]]:
    """The context's `chars`: its rendered block and a tenth, in hundreds — whole, however
    long, as the tools load it; and a warning for the source when it is large for a turn
    of `turn_chars` (None: the role is sized for it, `keel import --role`)."""
    needed = block_chars(ident, body)
    chars = min(-(-(needed + max(100, needed // 10)) // 100) * 100, CHARS.high)
    if turn_chars is None or needed <= turn_chars // 2:
        return chars, ()
    if needed > turn_chars:
        why = (
            f"{needed:,} characters once rendered, more than a turn's contexts may use "
            f"together (contexts.turnChars {turn_chars:,}): a role that admits it stubs it on "
            "every turn unless its turnChars has room — re-run with --role ROLE, which sizes "
            "the role, or split it into smaller rules"
        )
    else:
        why = (
            f"{needed:,} characters once rendered, over half of contexts.turnChars "
            f"({turn_chars:,}) — it crowds out other contexts; re-run with --role ROLE, which "
            "sizes the role, or consider splitting it"
        )
    return chars, (Notice(path=source, message=why),)


def instructions(rule: Rule, ids: Mapping[str, str]) -> str:
    """The rule's text, followed for a skill by the files beside it and how to reach them."""
    if not rule.attachments:
        return rule.body
    folder = rule.source.rsplit("/", 1)[0]
    lines = [rule.body, "", f"Files beside this skill in the repository ({shown(folder)}/):"]
    for attachment in rule.attachments:
        inner = shown(attachment.path[len(folder) + 1 :])
        ident = ids.get(attachment.source) if attachment.source else None
        where = f'open it with context_open("{ident}")' if ident else f"at {shown(attachment.path)}"
        lines.append(f"- {inner} — {where}")
    return "\n".join(lines)


def context_text(
    *,
    source: str,
    description: str | None,
    when: Sequence[WhenWord],
    chars: int,
    body: str,
    also: Sequence[str] = (),
) -> str:
    """A `<id>.context.md` file; `also`, the parallel rules it stands for, as comments."""
    lines = ["---", marker(source)]
    lines.extend(f"# also stands for {quoted(s)}, the same rule for another tool" for s in also)
    if description is not None:
        lines.append(f"description: {quoted(description)}")
    lines.append(f"when: [{', '.join(when)}]")
    lines.append(f"chars: {chars}")
    lines.append("---")
    return "\n".join(lines) + "\n" + body + "\n"


def code_text(*, source: str, tool: Tool, dialect: Dialect, globs: Sequence[str]) -> str:
    """A `<id>.context.py` whose `match` links the context beside it when a named file
    matches one of `globs`."""
    items = [quoted(g) for g in globs]
    inline = ", ".join(items)
    if len(inline) > 60:
        listed = "[\n" + "".join(f"        {item},\n" for item in items) + "    ]"
    else:
        listed = f"[{inline}]"
    return f'''{marker(source)}
"""Links the context beside this file when the turn's input names a file its globs match.

The globs are {TOOL_NAMES[tool]}'s, read as {TOOL_NAMES[tool]} reads them.

`keel import` rewrites this file on every run: change the source rule instead.
"""

from keel.code import define_context
from keel.importers.globs import GlobSet

GLOBS = GlobSet.of(
    {quoted(dialect)},
    {listed},
)


def match(turn, ctx=None):
    return {{}} if GLOBS.matches_text(turn.input or "") else None


context = define_context(match=match)
'''


def feature_text(source_name: str, tools: Iterable[Tool]) -> str:
    """The feature's FEATURE.md; the repository's name is shown printable (`shown`)."""
    names = ", ".join(sorted({TOOL_NAMES[t] for t in tools}))
    name = shown(source_name)
    return f"""---
{WRITTEN} — it rewrites this file while this line is here
title: {quoted(f"{name} coding rules")}
description: {quoted(f"Coding-agent rules of {name} ({names}), imported by keel import.")}
---
Each rule file of {name} is a context here, named after its tool and place. Edit the
rules where they live and re-run `keel import`: the files that start with an "imported from"
line are rewritten or removed, and files without that line are left alone.
"""


def role_text(
    role: str,
    source_name: str,
    contexts: Sequence[str],
    *,
    max_active: int | None = None,
    turn_chars: int | None = None,
    catalog_tokens: int | None = None,
) -> str:
    """A new role for the imported contexts: a CLI coding agent that may open them, with
    room for `max_active` contexts and `turn_chars` characters a turn when given."""
    name = shown(source_name)
    listed = "".join(f"  - {c}\n" for c in contexts) if contexts else ""
    key = "contexts:\n" + listed if contexts else "contexts: []\n"
    knobs = [("maxActive", max_active), ("turnChars", turn_chars)]
    given = "".join(f"  {k}: {v}\n" for k, v in knobs if v is not None)
    budget = f"contexts_budget:\n{given}" if given else ""
    if catalog_tokens is not None:
        budget += f"sections:\n  context.catalog: {catalog_tokens}\n"
    return f"""---
{WRITTEN} — `keel import --role {role}` keeps contexts: in step with the rules
description: {quoted(f"A coding agent working in {name}, under its imported rules.")}
agent: cli
capabilities:
  - context:read
{key}{budget}---
You are a coding agent working in the {name} repository. Its always-on rules are in
front of you. The others are in your catalog, those for particular files too: when the task
touches what one describes, open it with context_open and follow it.
"""


def brain_refusal(path: str, text: str) -> str | None:
    """Why the brain would refuse `text` as its file at `path` (relative to the brain), or
    None: the last guard before a write, through the brain's own reader and parser."""
    try:
        raw = text.encode("utf-8")
    except UnicodeEncodeError:
        return "it would hold a character that is not text (half of a surrogate pair)"
    limit = size_limit(path)
    if len(raw) > limit:
        return (
            f"it would hold {len(raw):,} bytes, over the limit of {limit:,} for a brain file "
            "(docs/limits.md) — split the source rule"
        )
    location = location_of(path)
    if not isinstance(location, Location):
        return str(location) if location is not None else "not a file the brain reads"
    if location.kind == "code":
        try:
            ast.parse(text, filename=path)
        except (SyntaxError, ValueError) as exc:
            return f"its code does not parse ({exc})"
        return None
    parsed = parse_file(Path(), path, location, raw)
    return _reason(parsed.errors[0]) if parsed.errors else None


def _reason(error: ContentError) -> str:
    return f"line {error.line}: {error.reason}" if error.line is not None else error.reason
