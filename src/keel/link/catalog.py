"""The catalog: one line per `ask` context a role admits, for roles that can open them.

It depends only on the role and the brain, never on the turn, so it stays the same from
turn to turn and does not break a prompt cache.
"""

from __future__ import annotations

from keel.brain.knobs import turn_settings
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec


def catalog(brain: Brain, role: RoleSpec) -> tuple[tuple[str, str], ...]:
    """(context id, description) for each ask context the role admits, sorted by id."""
    return turn_settings(brain, role).catalog
