"""A brain snapshot: every spec that loaded, indexed for the turn's look-ups, plus the skips.

A snapshot never changes; a content edit produces a new one. Look-ups a turn needs (a
context by id, the contexts of one directory) are dictionary reads, so a turn's cost does
not grow with the size of the brain.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from keel.brain.constitution import Access, Manifest
from keel.brain.specs import (
    ContextSpec,
    EntitySpec,
    FeatureSpec,
    ReachEntry,
    RoleSpec,
    SkillSpec,
    Skip,
    SqlFile,
)

DirKey = tuple[str, tuple[str, ...]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Brain:
    """Everything that loaded from one brain directory, and what did not."""

    root: Path
    manifest: Manifest = field(default_factory=Manifest)
    access: Access = field(default_factory=Access)
    features: Mapping[str, FeatureSpec] = field(default_factory=dict)
    contexts: Mapping[str, ContextSpec] = field(default_factory=dict)
    roles: Mapping[str, RoleSpec] = field(default_factory=dict)
    entities: Mapping[str, EntitySpec] = field(default_factory=dict)
    skills: Mapping[str, SkillSpec] = field(default_factory=dict)
    state_sql: tuple[SqlFile, ...] = ()
    # Code files (`*.context.py`, `*.hook.py`, `*.pipeline.py`) with no spec beside them.
    orphan_code: tuple[str, ...] = ()
    # Contexts with a code half (`<id>.context.py`), sorted: what a `'*'` role matches.
    with_code: tuple[str, ...] = ()
    # Each bot's chat policy, `constitution/<bot>.engage.py`, by bot.
    engage: Mapping[str, str] = field(default_factory=dict)
    # Ids of contexts and entities whose feature is switched off, and that feature.
    switched_off: Mapping[str, str] = field(default_factory=dict)
    skips: tuple[Skip, ...] = ()
    by_dir: Mapping[DirKey, tuple[str, ...]] = field(default_factory=dict)
    # Contexts by `when` word, so a turn looks at the few `always`/`ask` ones, not all.
    by_when: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # Views some context carries: they travel with that context, not in a role's state.
    claimed_views: frozenset[str] = frozenset()
    # Context ids whose file did not load, and why: a turn of a role listing one warns.
    failed_contexts: Mapping[str, Skip] = field(default_factory=dict)

    def admitted(self, role: RoleSpec, word: str) -> tuple[str, ...]:
        """Contexts whose `when` holds `word` that the role admits, sorted by id.

        Walks the role's own list, or the brain's index for `'*'`, so the cost follows
        what the role names, not the size of the brain.
        """
        listed = role.contexts or ()
        if "*" in listed:
            return self.by_when.get(word, ())
        return tuple(
            sorted(i for i in set(listed) if i in self.contexts and word in self.contexts[i].when)
        )

    def entity(self, kind: str, ident: str) -> EntitySpec | None:
        """A heartbeat, hook or scenario by kind and id."""
        return self.entities.get(f"{kind}:{ident}")

    def layout_reach(self, entity: EntitySpec) -> tuple[ReachEntry, ...]:
        """The contexts of the entity's directory and every one above it, to the feature root.

        Only contexts whose `when` holds run or reply join: those are the links a reach
        serves. Nearest directory first.
        """
        found: list[ReachEntry] = []
        for depth in range(len(entity.dir), -1, -1):
            for ident in self.by_dir.get((entity.feature, entity.dir[:depth]), ()):
                when = self.contexts[ident].when
                if "run" in when or "reply" in when:
                    found.append(ReachEntry(context=ident))
        return tuple(found)

    def reach_of(self, entity: EntitySpec) -> tuple[ReachEntry, ...]:
        """The entity's reach: its own `reach:` if it has one, else the layout."""
        return entity.reach if entity.reach is not None else self.layout_reach(entity)


class SnapshotSource(Protocol):
    """Where a long-lived holder gets the snapshot for each turn: the live, watched brain
    (`keel.brain.source.BrainSource`) or one read once through the snapshot cache
    (`keel.brain.snapshot_cache.CachedSource`)."""

    @property
    def root(self) -> Path:
        """The brain directory, resolved."""

    def current(self) -> Brain:
        """The snapshot for this turn."""

    def close(self) -> None:
        """Stop following the brain's files, if anything follows them."""
