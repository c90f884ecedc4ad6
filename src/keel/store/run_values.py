"""What the run tables hold, as values: runs, their steps, approval cards, provider usage,
the executors that run workflows, and the messages a chat was sent with their origin.

A run's id is its durable workflow's id. Statuses are closed words: a run is `pending`
(asked, not started), `running`, `waiting` (for a person's approval), `done` or `failed`;
a card is `pending`, `approved`, `denied` or `timed-out` (a timeout denies).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal

from keel.assemble.values import Usage
from keel.brain.specs import EntityKind, ReachEntry
from keel.store.delivery import Delivery

RunStatus = Literal["pending", "running", "waiting", "done", "failed"]
RUN_STATUSES: tuple[RunStatus, ...] = ("pending", "running", "waiting", "done", "failed")
StepStatus = Literal["running", "waiting", "done", "failed"]
STEP_STATUSES: tuple[StepStatus, ...] = ("running", "waiting", "done", "failed")
CardStatus = Literal["pending", "approved", "denied", "timed-out"]
CARD_STATUSES: tuple[CardStatus, ...] = ("pending", "approved", "denied", "timed-out")
# A run that has ended: nothing will change it again.
FINISHED: frozenset[RunStatus] = frozenset({"done", "failed"})


@dataclass(frozen=True, slots=True, kw_only=True)
class RunRow:
    """One run: what it is a run of, where it speaks, what it reaches, how it stands."""

    id: str
    kind: EntityKind
    entity_id: str
    status: RunStatus
    created_at: datetime
    updated_at: datetime
    entity: str | None = None  # the key the run was given (`--entity`, a gate's entity)
    role: str | None = None
    reach: tuple[ReachEntry, ...] = ()
    bot: str | None = None
    chat: str | None = None
    thread: str | None = None
    pin: str | None = None  # the brain's commit (or content hash) the run reads
    model: str | None = None
    executor: str | None = None
    error: str | None = None
    order: Mapping[str, Any] = field(default_factory=dict)

    @property
    def key(self) -> str:
        """`kind:id`, what the run is a run of."""
        return f"{self.kind}:{self.entity_id}"


@dataclass(frozen=True, slots=True, kw_only=True)
class StepRow:
    """One step of a run, in order: its name, how it went, when, and what it produced."""

    run_id: str
    seq: int
    name: str
    status: StepStatus
    started_at: datetime
    finished_at: datetime | None = None
    turn_id: int | None = None
    detail: str = ""
    # The step's result as JSON-native data; None while it has none (or never kept one).
    output: Any = None


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRow:
    """An approval card: a tool call that waits for a person, and the message that asks."""

    id: str
    run_id: str
    tool: str
    arguments: Mapping[str, Any]
    risk: str
    capability: str
    summary: str
    bot: str
    chat: str
    message_id: str
    status: CardStatus
    asked_at: datetime
    timeout_at: datetime
    thread: str | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None
    note: str | None = None
    # Decisions refused because of who made them; the card stayed pending each time.
    refused: tuple[CardRefusal, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class CardRefusal:
    """A decision on a card refused for who made it (`people:`), and why."""

    by: str | None
    at: datetime
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class UsageRow:
    """What one model request cost, as the provider reported it."""

    run_id: str | None
    step: str
    usage: Usage
    at: datetime
    turn_id: int | None = None
    model: str = ""


@dataclass(frozen=True, slots=True, kw_only=True)
class ExecutorRow:
    """A process that runs workflows, and when it last said it is alive."""

    id: str
    host: str
    pid: int
    started_at: datetime
    seen_at: datetime


@dataclass(frozen=True, slots=True, kw_only=True)
class SentMessage:
    """A message the bot sent in a chat, with the origin a reply to it brings back."""

    bot: str
    chat: str
    # None for an answer recorded with no id (an `engine.turn` answer no surface sent).
    message_id: str | None
    text: str
    at: datetime
    thread: str | None = None
    feature: str | None = None
    run: str | None = None
    reach: tuple[ReachEntry, ...] = ()
    pending_card: bool = False
    # None: a message recorded before deliveries were (no surface was asked to send it).
    delivery: Delivery | None = None
    # The context whose lines the message shows (a live widget), and when Keel last
    # edited its text.
    widget: str | None = None
    edited_at: datetime | None = None

    def to_json(self) -> dict[str, Any]:
        """The shape `keel messages --json` prints for one message."""
        return {
            "chat": self.chat,
            "bot": self.bot,
            "thread": self.thread,
            "message_id": self.message_id,
            "text": self.text,
            "at": self.at.isoformat(),
            "origin": {
                "feature": self.feature,
                "run": self.run,
                "reach": [{"context": r.context, "entity": r.entity} for r in self.reach],
                "pending_card": self.pending_card,
                "widget": self.widget,
            },
            "edited_at": None if self.edited_at is None else self.edited_at.isoformat(),
            "delivery": None if self.delivery is None else self.delivery.to_json(),
            "surface_message_id": (
                None if self.delivery is None else self.delivery.surface_message_id
            ),
        }
