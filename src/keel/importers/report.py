"""What one `keel import` did: each rule's context, the files touched, and what to look at.

Paths of source files are relative to the source directory; paths of brain files are
relative to the brain. `to_json()` is what `keel import --json` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from keel.brain.specs import WhenWord
from keel.importers.rules import Notice, Tool, Trigger


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportedRule:
    """One source rule and the context it became."""

    source: str
    tool: Tool
    context: str
    when: tuple[WhenWord, ...]
    trigger: Trigger
    chars: int
    description: str | None = None
    globs: tuple[str, ...] = ()
    code: str | None = None  # the generated `<id>.context.py`, for glob rules
    also: tuple[str, ...] = ()  # the parallel rules merged into this context

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "tool": self.tool,
            "context": self.context,
            "when": list(self.when),
            "trigger": self.trigger,
            "chars": self.chars,
            "description": self.description,
            "globs": list(self.globs),
            "code": self.code,
            "also": list(self.also),
        }


# imported: it became a context; merged: a parallel rule (the same text for another tool)
# folded into another's context; named: a file beside a skill, which the skill's context
# names by path; excluded: by --exclude; skipped: it could not be imported (the reason);
# refused: its context's file could not be written (see `refused`).
Fate = Literal["imported", "merged", "named", "excluded", "skipped", "refused"]
FATES: tuple[Fate, ...] = ("imported", "merged", "named", "excluded", "skipped", "refused")


@dataclass(frozen=True, slots=True, kw_only=True)
class Seen:
    """One source file the import looked at, and what became of it."""

    path: str
    fate: Fate
    context: str | None = None  # the context it became, or the one that names it
    reason: str | None = None  # why it was not imported

    def to_json(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "fate": self.fate,
            "context": self.context,
            "reason": self.reason,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleChange:
    """What the import did to the role named by `--role`."""

    role: str
    path: str
    created: bool
    added: tuple[str, ...] = ()
    dropped: tuple[str, ...] = ()
    # The `contexts_budget.maxActive` the import gave the role, so that its always-on
    # contexts are not stubbed; None when it had room already.
    max_active: int | None = None
    # The `contexts_budget.turnChars` it gave the role, so that the always-on rules fit
    # beside what a turn carries anyway; None when it had room already.
    turn_chars: int | None = None
    # The `sections: context.catalog` budget (tokens) it gave the role, so that the catalog
    # lines of the ask contexts fit; None when it had room already.
    catalog_tokens: int | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "role": self.role,
            "path": self.path,
            "created": self.created,
            "added": list(self.added),
            "dropped": list(self.dropped),
            "max_active": self.max_active,
            "turn_chars": self.turn_chars,
            "catalog_tokens": self.catalog_tokens,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ImportReport:
    """The outcome of one import, file by file and rule by rule."""

    source: str
    brain: str
    feature: str
    rules: tuple[ImportedRule, ...] = ()
    written: tuple[str, ...] = ()
    updated: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    unchanged: tuple[str, ...] = ()
    role: RoleChange | None = None
    warnings: tuple[Notice, ...] = ()
    skipped: tuple[Notice, ...] = ()
    refused: tuple[Notice, ...] = ()
    hint: str | None = None
    # Every file found in a place a tool reads rules from, each with its fate, by path.
    seen: tuple[Seen, ...] = ()

    @property
    def changed(self) -> bool:
        """Whether any brain file was written, updated or removed."""
        return bool(self.written or self.updated or self.removed)

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "brain": self.brain,
            "feature": self.feature,
            "rules": [r.to_json() for r in self.rules],
            "files": {
                "written": list(self.written),
                "updated": list(self.updated),
                "removed": list(self.removed),
                "unchanged": list(self.unchanged),
            },
            "role": None if self.role is None else self.role.to_json(),
            "warnings": [n.to_json() for n in self.warnings],
            "skipped": [n.to_json() for n in self.skipped],
            "refused": [n.to_json() for n in self.refused],
            "hint": self.hint,
            "seen": [f.to_json() for f in self.seen],
        }
