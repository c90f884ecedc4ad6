"""Settings in tiers: the context's file, the role, then MANIFEST, then Keel's defaults.

The nearest tier that names a key wins it; a key no tier names takes Keel's default. A
turn reads them all through one value, `TurnSettings`, resolved once per brain snapshot and
role (`turn_settings`) and passed to every stage. The families:

- the context knobs (`chars`, `maxActive`, `turnChars`, `keep`, `codeTimeoutMs`);
- section budgets in tokens, by a section's exact id (`render.support_queue`), then its
  family (`render`), in the role's `sections:` before MANIFEST's;
- the model's limits (`model:` — window, output reserve, input allocation);
- approvals (`approvals:` — which tool calls wait for a person, and for how long).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import timedelta

from keel.brain.constitution import (
    DEFAULT_APPROVAL_TIMEOUT,
    DEFAULT_CHARS,
    DEFAULT_CODE_TIMEOUT_MS,
    DEFAULT_KEEP,
    DEFAULT_MAX_ACTIVE,
    DEFAULT_TURN_CHARS,
    Manifest,
)
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextsBudget, ContextSpec, Decision, ModelSpec, RiskClass, RoleSpec


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


def context_code_timeout_ms(context: ContextSpec, role: RoleSpec | None, manifest: Manifest) -> int:
    """How long each call of a context's code may take: its file, the role, MANIFEST."""
    mine = role.contexts_budget if role is not None else ContextsBudget()
    return first(
        context.code_timeout_ms,
        mine.code_timeout_ms,
        manifest.contexts.code_timeout_ms,
        default=DEFAULT_CODE_TIMEOUT_MS,
    )


def context_keep(context: ContextSpec, role: RoleSpec | None, manifest: Manifest) -> int:
    """Turns an inferred link to this context sticks after the turn that made it."""
    mine = role.contexts_budget if role is not None else ContextsBudget()
    return first(context.keep, mine.keep, manifest.contexts.keep, default=DEFAULT_KEEP)


# ---------------------------------------------------------------------------------------
# Section budgets and the model's limits

DEFAULT_BUDGETS: Mapping[str, int] = {
    "sys.time": 40,
    "identity": 200,
    "tenancy": 200,
    "rules": 800,
    "prompt": 3000,
    "skill": 1500,
    "context.catalog": 800,
    "tool": 400,
    "render": 800,
    "history": 4000,
    "context": 1500,
    "current": 4000,
}
DEFAULT_WINDOW = 128_000
DEFAULT_OUTPUT_RESERVE = 4_096


def family(section_id: str) -> str:
    """`render.x` → `render`, `skill.3` → `skill`, `context.a@b` → `context`."""
    if section_id == "context.catalog":
        return section_id
    return section_id.split(".", 1)[0]


@dataclass(frozen=True, slots=True, kw_only=True)
class SectionBudgets:
    """Resolves a section's budget (tokens) through the three tiers."""

    role: Mapping[str, int] = field(default_factory=dict)
    manifest: Mapping[str, int] = field(default_factory=dict)
    defaults: Mapping[str, int] = field(default_factory=lambda: dict(DEFAULT_BUDGETS))

    @classmethod
    def of(cls, role: RoleSpec | None, manifest: Manifest) -> SectionBudgets:
        return cls(
            role=dict(role.sections) if role is not None else {},
            manifest=dict(manifest.sections),
        )

    def __call__(self, section_id: str) -> int | None:
        kind = family(section_id)
        for tier in (self.role, self.manifest):
            for key in (section_id, kind):
                if key in tier:
                    return tier[key]
        return self.defaults.get(section_id, self.defaults.get(kind))


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelLimits:
    """What the model chain declares: its window, the output reserve, the input allocation."""

    name: str
    window: int
    output_reserve: int
    input_allocation: int


def model_limits(role: RoleSpec | None, manifest: Manifest) -> ModelLimits:
    """The role's `model:`, then MANIFEST's, then defaults; allocation = window - reserve."""
    mine = role.model if role is not None else ModelSpec()
    brain = manifest.model
    window = first(mine.window, brain.window, default=DEFAULT_WINDOW)
    reserve = first(mine.output_reserve, brain.output_reserve, default=DEFAULT_OUTPUT_RESERVE)
    allocation = first(mine.input_allocation, brain.input_allocation, default=window - reserve)
    return ModelLimits(
        name=mine.name or brain.name or "default",
        window=window,
        output_reserve=reserve,
        input_allocation=allocation,
    )


# ---------------------------------------------------------------------------------------
# Approvals

# What a risk class needs when no tier names it: only a dangerous call waits for a person.
DEFAULT_DECISIONS: Mapping[RiskClass, Decision] = {
    "safe": "none",
    "moderate": "none",
    "dangerous": "required",
}


# Capabilities whose calls always wait for a person, whatever `approvals:` says: widening
# access starts a client's data reaching a room, which a brain may not let itself do alone.
ALWAYS_APPROVED = frozenset({"access:widen"})


def _role_of(brain: Brain, role: RoleSpec | str | None) -> RoleSpec | None:
    return brain.roles.get(role) if isinstance(role, str) else role


def approval_required(
    brain: Brain, role: RoleSpec | str | None, capability: str, risk: RiskClass
) -> bool:
    """Whether a call of a tool with this capability and risk class waits for a person.

    The role's `approvals:` entries override MANIFEST's, key by key; then an entry for the
    tool's capability (`context:bind`) wins over one for its risk class (`moderate`); with
    neither, only `dangerous` requires approval. An `ALWAYS_APPROVED` capability always
    does. `role` is the role's spec or id (an
    unknown id, or None, leaves MANIFEST alone).
    """
    if capability in ALWAYS_APPROVED:
        return True
    spec = _role_of(brain, role)
    decisions = dict(brain.manifest.approvals.decisions)
    if spec is not None:
        decisions.update(spec.approvals.decisions)
    decision = decisions.get(capability) if capability else None
    if decision is None:
        decision = decisions.get(risk, DEFAULT_DECISIONS[risk])
    return decision == "required"


def approval_timeout(brain: Brain, role: RoleSpec | str | None) -> timedelta:
    """How long an approval card waits before it counts as denied: role, MANIFEST, 2 days."""
    spec = _role_of(brain, role)
    mine = spec.approvals.timeout if spec is not None else None
    return mine or brain.manifest.approvals.timeout or DEFAULT_APPROVAL_TIMEOUT


# ---------------------------------------------------------------------------------------
# Every setting one turn reads, resolved once


class PerContext(dict[str, int]):
    """One setting of each context, by id: resolved through the tiers on first ask, then
    kept (a snapshot's settings do not change)."""

    __slots__ = ("_resolve",)

    def __init__(self, resolve: Callable[[str], int]) -> None:
        super().__init__()
        self._resolve = resolve

    def __missing__(self, ident: str) -> int:
        value = self[ident] = self._resolve(ident)
        return value


class PerSection(dict[str, int | None]):
    """Each section's budget in tokens, by section id, resolved on first ask, then kept."""

    __slots__ = ("_budgets",)

    def __init__(self, budgets: SectionBudgets) -> None:
        super().__init__()
        self._budgets = budgets

    def __missing__(self, section_id: str) -> int | None:
        value = self[section_id] = self._budgets(section_id)
        return value


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnSettings:
    """Every setting a turn of one role reads, in one value: resolved once per brain
    snapshot and role (`turn_settings`), then read by each stage, never re-resolved."""

    role: RoleSpec
    knobs: TurnKnobs
    read_timeout_ms: int  # `state.readTimeoutMs`: each view read's bound
    chars: Mapping[str, int]  # a context's `chars`, by context id
    keep: Mapping[str, int]  # turns an inferred link to a context sticks, by context id
    code_timeout_ms: Mapping[str, int]  # each call of a context's code, by context id
    budgets: Mapping[str, int | None]  # a section's budget in tokens, by section id
    limits: ModelLimits
    opens: bool  # whether the role may call context_open (`context:read`)
    always: tuple[str, ...]  # the `always` contexts the role admits, sorted by id
    # (context id, description) of each `ask` context the role admits, for a role that
    # opens them: the catalog, the same on every turn of the snapshot.
    catalog: tuple[tuple[str, str], ...]


def _settings(brain: Brain, role: RoleSpec) -> TurnSettings:
    manifest, contexts = brain.manifest, brain.contexts
    opens = role.can("context:read")
    return TurnSettings(
        role=role,
        knobs=turn_knobs(role, manifest),
        read_timeout_ms=manifest.state_read_timeout_ms,
        chars=PerContext(lambda i: context_chars(contexts[i], role, manifest)),
        keep=PerContext(lambda i: context_keep(contexts[i], role, manifest)),
        code_timeout_ms=PerContext(lambda i: context_code_timeout_ms(contexts[i], role, manifest)),
        budgets=PerSection(SectionBudgets.of(role, manifest)),
        limits=model_limits(role, manifest),
        opens=opens,
        always=brain.admitted(role, "always"),
        catalog=tuple(
            (ident, contexts[ident].description or "") for ident in brain.admitted(role, "ask")
        )
        if opens
        else (),
    )


# The settings of the snapshots asked about last, by role, the latest last: a process
# serves its live brain and the snapshots its runs are pinned to side by side, and one
# must not push out another's settings while both are in use — a snapshot asked about
# again moves to the end, so edits of the live brain push out only snapshots no longer
# asked about. Each entry holds its role, so a role's id cannot be reused while it is kept.
_KEPT_SNAPSHOTS = 4
_kept: list[tuple[Brain, dict[int, TurnSettings]]] = []


def turn_settings(brain: Brain, role: RoleSpec) -> TurnSettings:
    """The settings of `role`'s turns on this brain snapshot (the same value while both
    are the same objects: an edited file makes a new snapshot, and new settings)."""
    global _kept  # swapped whole, so a thread never reads it half changed
    kept = _kept
    if kept and kept[-1][0] is brain:  # the usual case: the snapshot asked about last
        by_role = kept[-1][1]
    else:
        by_role = next((found for known, found in kept if known is brain), {})
        others = [entry for entry in kept if entry[0] is not brain]
        _kept = [*others[-(_KEPT_SNAPSHOTS - 1) :], (brain, by_role)]
    settings = by_role.get(id(role))
    if settings is None or settings.role is not role:
        settings = by_role[id(role)] = _settings(brain, role)
    return settings
