"""The brain's content as typed, immutable values.

These are what the loader produces from files on disk and what every later stage reads.
Paths are POSIX strings relative to the brain root, so a spec reads the same on any
machine and in any checkout.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import timedelta
from typing import Literal

WhenWord = Literal["run", "chat", "reply", "ask", "always"]
WHEN_WORDS: tuple[WhenWord, ...] = ("run", "chat", "reply", "ask", "always")

EntityKind = Literal["heartbeat", "hook", "scenario"]
ENTITY_KINDS: tuple[EntityKind, ...] = ("heartbeat", "hook", "scenario")

AgentKind = Literal["api", "cli"]

# How much harm a tool call can do; the tool registry gives each tool one.
RiskClass = Literal["safe", "moderate", "dangerous"]
RISK_CLASSES: tuple[RiskClass, ...] = ("safe", "moderate", "dangerous")
# What `approvals:` says of a risk class or a capability.
Decision = Literal["required", "none"]


@dataclass(frozen=True, slots=True, kw_only=True)
class ViewRef:
    """One `data:` entry of a context: a view shown whole, or filtered `by` a column."""

    view: str
    by: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class WidgetSpec:
    """`widget:` of a context: a chat message that shows one of its views as numbered
    lines, each made of the `line` columns of a row, under `title`."""

    view: str
    line: tuple[str, ...]
    title: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ReachEntry:
    """One entry of a reach: a context, and the entity key it is about, if any."""

    context: str
    entity: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class FeatureSpec:
    """A feature: the directory `features/<id>/` and its optional `FEATURE.md`."""

    id: str
    path: str
    enabled: bool = True
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextSpec:
    """A feature context, `<id>.context.md`: instructions in the body, views in `data:`."""

    id: str
    feature: str
    path: str
    dir: tuple[str, ...]
    when: frozenset[WhenWord]
    instructions: str
    description: str | None = None
    entity: str | None = None
    data: tuple[ViewRef, ...] = ()
    chars: int | None = None
    keep: int | None = None
    code_timeout_ms: int | None = None
    code_path: str | None = None
    widget: WidgetSpec | None = None

    @property
    def keyed(self) -> bool:
        """A context keyed by an entity (`entity:` names what its key is)."""
        return self.entity is not None


@dataclass(frozen=True, slots=True, kw_only=True)
class ContextsBudget:
    """Budget knobs for feature contexts; `None` leaves the key to the next tier."""

    chars: int | None = None
    max_active: int | None = None
    turn_chars: int | None = None
    keep: int | None = None
    code_timeout_ms: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelSpec:
    """What the model chain declares: its name, window, output reserve, input allocation."""

    name: str | None = None
    window: int | None = None
    output_reserve: int | None = None
    input_allocation: int | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ApprovalPolicy:
    """`approvals:` of MANIFEST or a role: whether a call waits for a person's approval.

    `decisions` maps a risk class (`dangerous`) or a capability (`context:bind`) to
    `required` or `none` (risk classes first, then capabilities in file order); `timeout`
    is how long a card waits before it counts as denied. `None` and absent keys leave the
    answer to the next tier (`keel.brain.knobs.approval_required`).
    """

    decisions: tuple[tuple[str, Decision], ...] = ()
    timeout: timedelta | None = None
    # Where cards go: an operators' chat id, `here` (the run's own room), or None (not said:
    # the next tier's, else the run's room).
    chat: str | None = None


def is_person(value: str) -> bool:
    """Whether `value` names a person as a chat surface does (`tg:user:42`)."""
    return value.isprintable() and ":" in value.strip(":")


@dataclass(frozen=True, slots=True, kw_only=True)
class People:
    """`people:` of MANIFEST or a role: the owners, and who may decide which cards.

    `approvers` maps a capability (`message:send`), a risk class or `*` to the people who
    may decide such a card; the entry `owners` stands for the owners. `owners` None leaves
    them to the next tier (a role's `people:` over MANIFEST's, key by key).
    """

    owners: tuple[str, ...] | None = None
    approvers: tuple[tuple[str, tuple[str, ...]], ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class RoleSpec:
    """A role, `<id>.agent.md`: the persona in the body and what the role admits."""

    id: str
    feature: str
    path: str
    persona: str
    description: str | None = None
    # None means the file has no `contexts:` key at all (doctor notes it); () admits none.
    contexts: tuple[str, ...] | None = None
    capabilities: tuple[str, ...] = ()
    skills: tuple[str, ...] = ()
    state: tuple[str, ...] = ()
    agent: AgentKind = "api"
    contexts_budget: ContextsBudget = field(default_factory=ContextsBudget)
    model: ModelSpec = field(default_factory=ModelSpec)
    sections: tuple[tuple[str, int], ...] = ()
    approvals: ApprovalPolicy = field(default_factory=ApprovalPolicy)
    people: People | None = None

    def admits(self, context_id: str) -> bool:
        """Whether `contexts:` lists this context (or `'*'`)."""
        return self.contexts is not None and ("*" in self.contexts or context_id in self.contexts)

    def can(self, capability: str) -> bool:
        """Whether `capabilities:` grants this capability (or `'*'`, which grants every one
        but those a role must name: a brain changing itself is never granted by a wildcard)."""
        if capability in self.capabilities:
            return True
        return "*" in self.capabilities and capability not in NAMED_ONLY


# Capabilities `'*'` does not grant: a role edits its brain only when it says so by name.
NAMED_ONLY = frozenset({"brain:edit", "access:widen"})


@dataclass(frozen=True, slots=True, kw_only=True)
class InlineHook:
    """A hook written in a scenario's frontmatter (`hooks:`): the event that fires it, its
    id (else the scenario's id and the event's), its prompt (else the scenario's body) and
    where it speaks (else where the scenario does)."""

    event: str
    id: str | None = None
    prompt: str | None = None
    bot: str | None = None
    chat: str | None = None
    thread: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class EntitySpec:
    """A heartbeat, hook or scenario: something that runs as a role and reaches contexts."""

    kind: EntityKind
    id: str
    feature: str
    path: str
    dir: tuple[str, ...]
    prompt: str
    agent: str | None = None
    description: str | None = None
    # None: the layout decides the reach; a tuple replaces it (possibly empty).
    reach: tuple[ReachEntry, ...] | None = None
    schedule: str | None = None
    event: str | None = None
    # A hook's gate (`<id>.hook.py`) or a scenario's pipeline (`<id>.pipeline.py`).
    code_path: str | None = None
    # Where its runs speak: the bot and chat (and topic) its answer and messages go to.
    # A hook may leave them to its event.
    bot: str | None = None
    chat: str | None = None
    thread: str | None = None
    # A scenario's inline hooks, as written; each is also a hook of the brain, whose
    # `scenario` names the scenario it came from.
    hooks: tuple[InlineHook, ...] = ()
    scenario: str | None = None
    # A hook's `notice: true`: its run's end is posted in one line where it speaks.
    notice: bool = False

    @property
    def key(self) -> str:
        """`kind:id`, the way a run names what it is a run of."""
        return f"{self.kind}:{self.id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class SkillSpec:
    """A skill, `<id>.skill.md`: its body is the skill's text."""

    id: str
    feature: str
    path: str
    text: str
    description: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SqlFile:
    """One `state/*.sql` file, applied in name order."""

    path: str
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class Skip:
    """A file (or part of one) the loader could not use, and why."""

    path: str
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.path}:{self.line}" if self.line is not None else self.path
        return f"{where}: {self.reason}"
