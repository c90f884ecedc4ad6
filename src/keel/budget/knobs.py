"""Budget knobs and their three tiers: the context's file, the role, then MANIFEST.

The nearest tier that names a key wins it; a key no tier names takes Keel's default.
"""

from __future__ import annotations

from dataclasses import dataclass

from keel.brain.constitution import (
    DEFAULT_CHARS,
    DEFAULT_CODE_TIMEOUT_MS,
    DEFAULT_KEEP,
    DEFAULT_MAX_ACTIVE,
    DEFAULT_TURN_CHARS,
    Manifest,
)
from keel.brain.specs import ContextsBudget, ContextSpec, RoleSpec


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnKnobs:
    """The knobs that bound a whole turn's contexts."""

    max_active: int
    turn_chars: int
    rows: int
    code_timeout_ms: int


def first(*values: int | None, default: int) -> int:
    """The first value a tier sets, else the default."""
    for value in values:
        if value is not None:
            return value
    return default


def turn_knobs(role: RoleSpec, manifest: Manifest) -> TurnKnobs:
    """`maxActive`, `turnChars`, `codeTimeoutMs`: role first, then MANIFEST; and state rows."""
    mine, brain = role.contexts_budget, manifest.contexts
    return TurnKnobs(
        max_active=first(mine.max_active, brain.max_active, default=DEFAULT_MAX_ACTIVE),
        turn_chars=first(mine.turn_chars, brain.turn_chars, default=DEFAULT_TURN_CHARS),
        rows=manifest.state_rows,
        code_timeout_ms=first(
            mine.code_timeout_ms, brain.code_timeout_ms, default=DEFAULT_CODE_TIMEOUT_MS
        ),
    )


def context_chars(context: ContextSpec, role: RoleSpec | None, manifest: Manifest) -> int:
    """A context's `chars`: its own file, then the role, then MANIFEST, then the default."""
    mine = role.contexts_budget if role is not None else ContextsBudget()
    return first(context.chars, mine.chars, manifest.contexts.chars, default=DEFAULT_CHARS)


def context_keep(context: ContextSpec, role: RoleSpec | None, manifest: Manifest) -> int:
    """Turns an inferred link to this context sticks after the turn that made it."""
    mine = role.contexts_budget if role is not None else ContextsBudget()
    return first(context.keep, mine.keep, manifest.contexts.keep, default=DEFAULT_KEEP)
