"""Tool folders of a sub-project: `api/.github/`, `api/.cursorrules`, `api/.claude/skills/`.

A repository that holds several projects keeps each one's rules in its own folder, where
the tool finds them when that folder is opened. Imported as one tree, such a rule applies to
its sub-project: the file is mapped as if the sub-project were the root, then scoped — an
always-on rule links for the files under its folder, its globs are read from there, its id
and every path it reports name the folder. (Cursor's and Windsurf's rules folders and
CLAUDE.md/AGENTS.md scope themselves where they are mapped.)
"""

from __future__ import annotations

import dataclasses

from keel.importers.globs import Dialect, escape, within
from keel.importers.ids import slug
from keel.importers.rules import (
    Attachment,
    Mapped,
    Notice,
    Rule,
    generated_description,
    title_of,
)

# The tool folders and files whose place below the root names a sub-project.
_MARKS = ((".github",), (".claude",), (".cursorrules",), (".windsurfrules",))


def split(path: str) -> tuple[str, str]:
    """The sub-project folder of a rule file ("" at the root), and the path inside it."""
    parts = path.split("/")
    for at, part in enumerate(parts):
        if (part,) in _MARKS:
            return "/".join(parts[:at]), "/".join(parts[at:])
    return "", path


def rescope(mapped: Mapped, folder: str) -> Mapped:
    """What mapping a sub-project's file gave, as applying to that folder of the tree."""
    if not folder:
        return mapped
    return Mapped(
        rules=tuple(_rule(r, folder) for r in mapped.rules),
        warnings=tuple(_notice(n, folder) for n in mapped.warnings),
        skipped=tuple(_notice(n, folder) for n in mapped.skipped),
    )


def _rule(rule: Rule, folder: str) -> Rule:
    source = f"{folder}/{rule.source}"
    trigger, dialect, globs = rule.trigger, rule.dialect, rule.globs
    if trigger == "always":
        trigger, dialect, globs = "glob", "cursor", (f"/{escape(folder)}/**",)
    elif dialect is not None:
        globs = tuple(_anchored(folder, g, dialect) for g in globs)
    description = rule.description
    if description is not None:  # a generated one names the file by its path
        description = description.replace(f"({rule.source})", f"({source})")
    elif trigger == "glob":
        title = title_of(rule.body, rule.name)
        description = generated_description(rule.tool, source, title, f"for files under {folder}/")
    return dataclasses.replace(
        rule,
        source=source,
        name=slug(rule.name, *folder.split("/")),
        trigger=trigger,
        dialect=dialect,
        globs=globs,
        description=description,
        attachments=tuple(_attachment(a, folder) for a in rule.attachments),
    )


def _anchored(folder: str, pattern: str, dialect: Dialect) -> str:
    """A glob of the sub-project, read from its folder as its tool reads it."""
    if dialect in ("cursor", "windsurf"):
        return within(folder, pattern)
    negated = pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    while body.startswith("./"):
        body = body[2:]
    if dialect == "claude" or body.startswith("/"):  # anchored at the (sub-project's) root
        scoped = f"/{escape(folder)}/{body.lstrip('/')}"
    elif body.startswith("**/"):
        scoped = f"/{escape(folder)}/{body}"
    else:  # Copilot matches a pattern without a leading `**/` or `/` at any depth
        scoped = f"/{escape(folder)}/**/{body}"
    return ("!" if negated else "") + scoped


def _attachment(attachment: Attachment, folder: str) -> Attachment:
    source = attachment.source
    return Attachment(
        path=f"{folder}/{attachment.path}",
        source=None if source is None else f"{folder}/{source}",
    )


def _notice(notice: Notice, folder: str) -> Notice:
    return dataclasses.replace(notice, path=f"{folder}/{notice.path}")
