"""The text of every file `keel import` writes, and how a re-run knows the files it wrote.

A context file carries `# imported from <source> by keel import` as the first line of its
frontmatter (a YAML comment, so Keel's strict frontmatter does not see it), and its code
half the same line at its top. The FEATURE.md and the role file the import creates carry
`# written by keel import`. A file without its line is the author's: never overwritten,
never removed.
"""

from __future__ import annotations

import json
import re
import sys
from collections.abc import Iterable, Mapping, Sequence

from keel.brain.specs import WhenWord
from keel.budget import render_block
from keel.importers.globs import Dialect
from keel.importers.rules import TOOL_NAMES, Rule, Tool

WRITTEN = "# written by keel import"
_OWNER = re.compile(r"^# imported from (.+?) by keel import(?:\s|$)")
_HEAD_LINES = 4


def marker(source: str) -> str:
    """The line that says which source a context file was imported from."""
    return (
        f"# imported from {source} by keel import — edit the source and re-run; "
        "delete this line to keep your own edits"
    )


def owner_of(text: str) -> str | None:
    """The source a file was imported from, if `keel import` wrote it."""
    for line in text.splitlines()[:_HEAD_LINES]:
        found = _OWNER.match(line)
        if found is not None:
            return found.group(1)
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


def instructions(rule: Rule, ids: Mapping[str, str]) -> str:
    """The rule's text, followed for a skill by the files beside it and how to reach them."""
    if not rule.attachments:
        return rule.body
    folder = rule.source.rsplit("/", 1)[0]
    lines = [rule.body, "", f"Files beside this skill in the repository ({folder}/):"]
    for attachment in rule.attachments:
        inner = attachment.path[len(folder) + 1 :]
        ident = ids.get(attachment.source) if attachment.source else None
        where = f'open it with context_open("{ident}")' if ident else f"at {attachment.path}"
        lines.append(f"- {inner} — {where}")
    return "\n".join(lines)


def context_text(
    *, source: str, description: str | None, when: Sequence[WhenWord], chars: int, body: str
) -> str:
    """A `<id>.context.md` file."""
    lines = ["---", marker(source)]
    if description is not None:
        lines.append(f"description: {_text(description)}")
    lines.append(f"when: [{', '.join(when)}]")
    lines.append(f"chars: {chars}")
    lines.append("---")
    return "\n".join(lines) + "\n" + body + "\n"


def code_text(
    *, source: str, context: str, tool: Tool, dialect: Dialect, globs: Sequence[str]
) -> str:
    """A `<id>.context.py` whose `match` links the context when a named file matches."""
    items = [_text(g) for g in globs]
    inline = ", ".join(items)
    if len(inline) > 60:
        listed = "[\n" + "".join(f"        {item},\n" for item in items) + "    ]"
    else:
        listed = f"[{inline}]"
    return f'''{marker(source)}
"""Links `{context}` when the turn's input names a file its {TOOL_NAMES[tool]} globs match.

`keel import` rewrites this file on every run: change the source rule instead.
"""

from keel.code import define_context
from keel.importers.globs import GlobSet

GLOBS = GlobSet.of(
    "{dialect}",
    {listed},
)


def match(turn, ctx=None):
    return {{}} if GLOBS.matches_text(turn.input or "") else None


context = define_context(match=match)
'''


def feature_text(source_name: str, tools: Iterable[Tool]) -> str:
    """The feature's FEATURE.md."""
    names = ", ".join(sorted({TOOL_NAMES[t] for t in tools}))
    return f"""---
{WRITTEN} — it rewrites this file while this line is here
title: {_text(f"{source_name} coding rules")}
description: {_text(f"Coding-agent rules of {source_name} ({names}), imported by keel import.")}
---
Each rule file of {source_name} is a context here, named after its tool and place. Edit the
rules where they live and re-run `keel import`: the files that start with an "imported from"
line are rewritten or removed, and files without that line are left alone.
"""


def role_text(
    role: str, source_name: str, contexts: Sequence[str], *, max_active: int | None = None
) -> str:
    """A new role for the imported contexts: a CLI coding agent that may open them, with
    room for `max_active` contexts a turn when given."""
    listed = "".join(f"  - {c}\n" for c in contexts) if contexts else ""
    key = "contexts:\n" + listed if contexts else "contexts: []\n"
    budget = "" if max_active is None else f"contexts_budget:\n  maxActive: {max_active}\n"
    return f"""---
{WRITTEN} — `keel import --role {role}` keeps contexts: in step with the rules
description: {_text(f"A coding agent working in {source_name}, under its imported rules.")}
agent: cli
capabilities:
  - context:read
{key}{budget}---
You are a coding agent working in the {source_name} repository. Its always-on rules are in
front of you. The others are in your catalog, those for particular files too: when the task
touches what one describes, open it with context_open and follow it.
"""


def _text(value: str) -> str:
    """A YAML (and Python) string literal."""
    return json.dumps(value, ensure_ascii=False)
