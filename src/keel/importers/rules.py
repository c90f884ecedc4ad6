"""What one source rule file becomes before it is written: a `Rule`, with notes on the way.

Every tool's mapper (`cursor`, `claude`, `copilot`, `windsurf`) reads its files into the
same shape — the text, when it applies (`Trigger`), its catalog line, its globs — so the
rest of the import (ids, files, roles) never asks which tool a rule came from.
"""

from __future__ import annotations

import difflib
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Literal

from keel.importers.frontmatter import SourceFile
from keel.importers.globs import Dialect, Glob, GlobError, split_globs

Tool = Literal["cursor", "claude", "agents", "copilot", "windsurf"]
TOOL_NAMES: Mapping[Tool, str] = {
    "cursor": "Cursor",
    "claude": "Claude Code",
    "agents": "AGENTS.md",
    "copilot": "GitHub Copilot",
    "windsurf": "Windsurf",
}
# always: every turn; description: the agent opens it by its catalog line; manual: a person
# asked for it by name in the tool; glob: the files a turn names decide.
Trigger = Literal["always", "description", "manual", "glob"]
# Rules that link by themselves: always on, or when a prompt names a file they cover.
SELF_LINKING: tuple[Trigger, ...] = ("always", "glob")
DESCRIPTION_LIMIT = 400

# Keys one tool reads that authors carry over to another, which ignores them.
FOREIGN_KEYS: Mapping[str, Tool] = {
    "globs": "cursor",
    "alwaysApply": "cursor",
    "paths": "claude",
    "applyTo": "copilot",
    "trigger": "windsurf",
}


@dataclass(frozen=True, slots=True, kw_only=True)
class Notice:
    """Something to tell about one file: a warning, why it was skipped or refused."""

    path: str
    message: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.message}"

    def to_json(self) -> dict[str, Any]:
        return {"path": self.path, "line": self.line, "message": self.message}


@dataclass(frozen=True, slots=True, kw_only=True)
class Attachment:
    """A file beside a skill's SKILL.md: imported as its own context, or only named."""

    path: str  # relative to the source directory
    source: str | None = None  # the companion rule's source, when it became a context


@dataclass(frozen=True, slots=True, kw_only=True)
class Rule:
    """One source rule, ready to become a context."""

    source: str  # POSIX path relative to the source directory
    tool: Tool
    name: str  # the context id it asks for (collisions are settled later)
    trigger: Trigger
    body: str
    description: str | None = None  # the catalog line; every non-always rule has one
    dialect: Dialect | None = None
    globs: tuple[str, ...] = ()
    attachments: tuple[Attachment, ...] = ()
    also: tuple[str, ...] = ()  # sources of parallel rules merged into this one


@dataclass(frozen=True, slots=True, kw_only=True)
class Mapped:
    """What mapping one source file gave: its rules, warnings, and the files kept out."""

    rules: tuple[Rule, ...] = ()
    warnings: tuple[Notice, ...] = ()
    skipped: tuple[Notice, ...] = ()


class Notes:
    """Warnings gathered while one file is mapped."""

    def __init__(self, doc: SourceFile) -> None:
        self.doc = doc
        self.found: list[Notice] = []

    def warn(self, message: str, *, key: str | None = None, line: int | None = None) -> None:
        where = line if line is not None else (self.doc.line(key) if key else None)
        self.found.append(Notice(path=self.doc.path, message=message, line=where))

    def lenient(self, tool: Tool) -> None:
        """Say so when the frontmatter was read line by line because YAML refused it."""
        if self.doc.lenient is not None:
            self.warn(
                f"the frontmatter is not valid YAML ({self.doc.lenient}); read line by line, "
                f"as {TOOL_NAMES[tool]} does — quote values that start with '*' "
                '(globs: "**/*.ts") to make it valid',
                line=self.doc.lenient_line or 2,
            )

    def foreign(self, tool: Tool, known: Iterable[str]) -> None:
        """Warn about keys this tool ignores: another tool's keys, and misspelt ones."""
        own = set(known)
        for key in self.doc.front:
            if key in own:
                continue
            owner = FOREIGN_KEYS.get(key)
            if owner is not None and owner != tool:
                self.warn(
                    f"'{key}' is {TOOL_NAMES[owner]}'s key; {TOOL_NAMES[tool]} ignores it, "
                    "and so does this import",
                    key=key,
                )
                continue
            near = difflib.get_close_matches(key, sorted(own), n=1, cutoff=0.75)
            if near:
                self.warn(
                    f"unknown key '{key}' — did you mean '{near[0]}'? {TOOL_NAMES[tool]} "
                    "ignores it, and so does this import",
                    key=key,
                )

    def text(self, key: str) -> str | None:
        """A text value of the frontmatter, or None (a non-text value is warned about)."""
        value = self.doc.front.get(key)
        if value is None:
            return None
        if not isinstance(value, str | int | float) or isinstance(value, bool):
            self.warn(f"'{key}' is not text ({type(value).__name__}) — ignored", key=key)
            return None
        return " ".join(str(value).split()) or None

    def globs(self, key: str, dialect: Dialect, *, split_lists: bool = False) -> tuple[str, ...]:
        """The patterns under `key` (a comma-separated text or a list) that compile."""
        value = self.doc.front.get(key)
        if value is None or value == "":
            return ()
        if isinstance(value, str):
            patterns = split_globs(value)
        elif isinstance(value, list):
            patterns = tuple(
                p
                for item in value
                if isinstance(item, str)
                for p in (split_globs(item) if split_lists else (item.strip(),))
                if p
            )
            if any(not isinstance(item, str) for item in value):
                self.warn(f"'{key}' holds items that are not text — they are ignored", key=key)
        else:
            self.warn(f"'{key}' is not a glob list ({type(value).__name__}) — ignored", key=key)
            return ()
        if not patterns:
            # `globs: ","` or `globs: ["", " "]`: written as if it meant something, so say
            # that it holds no pattern (a bare `globs:` is no glob and needs no word).
            if _holds_text(value):
                self.warn(f"'{key}' holds no pattern — read as no globs", key=key)
            return ()
        kept: list[str] = []
        for pattern in patterns:
            try:
                Glob.compile(pattern, dialect)
            except GlobError as exc:
                self.warn(f"glob left out: {exc}", key=key)
                continue
            kept.append(pattern)
        return tuple(kept)


def _holds_text(value: object) -> bool:
    """Whether a frontmatter value has any text but blanks (a list: any of its items)."""
    if isinstance(value, list):
        return any(_holds_text(item) for item in value)
    return isinstance(value, str) and bool(value.strip())


def catalog_line(text: str, notes: Notes | None = None) -> str:
    """A description as one catalog line, cut at `DESCRIPTION_LIMIT` characters."""
    line = " ".join(text.split())
    if len(line) <= DESCRIPTION_LIMIT:
        return line
    cut = line[: DESCRIPTION_LIMIT - 1].rsplit(" ", 1)[0] + "…"
    if notes is not None:
        notes.warn(
            f"the description has {len(line)} characters; the catalog line keeps the first "
            f"{len(cut)} — shorten it in the source",
            key="description",
        )
    return cut


def title_of(body: str, fallback: str) -> str:
    """The first Markdown heading of a body, or `fallback`."""
    for line in body.splitlines():
        found = re.match(r"^#{1,6}\s+(.+?)\s*#*\s*$", line)
        if found:
            return found.group(1)
    return fallback


def first_paragraph(body: str) -> str:
    """The body's first paragraph that is not a heading (Claude Code's default description)."""
    for block in re.split(r"\n\s*\n", body):
        lines = [ln for ln in block.strip().splitlines() if not ln.lstrip().startswith("#")]
        if lines:
            return " ".join(" ".join(lines).split())
    return ""


def describe(
    notes: Notes,
    *,
    tool: Tool,
    trigger: Trigger,
    given: str | None,
    title: str,
    globs: tuple[str, ...],
    manual: str,
) -> str | None:
    """The catalog line: the source's own, else one made up for a glob or manual rule."""
    if given is not None:
        return catalog_line(given, notes)
    if trigger == "glob":
        how = f"for files matching {', '.join(globs)}"
        return generated_description(tool, notes.doc.path, title, how)
    if trigger == "manual":
        return generated_description(tool, notes.doc.path, title, manual)
    return None


def generated_description(tool: Tool, source: str, title: str, how: str) -> str:
    """A catalog line for a rule whose source gives none."""
    return catalog_line(f"{title} — {TOOL_NAMES[tool]} rule {how} ({source})")
