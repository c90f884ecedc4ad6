"""What `keel serve` needs of runs: the `RunsBackend` protocol, and the build without runs.

Runs (heartbeats, hooks, scenarios) and their approval cards live in their own package;
the service and the dashboard only list, show, start and decide through this protocol,
so either side can change without the other. A backend returns plain values (`Run`,
`RunStep`, `Card`), None for an id it does not know (the service answers 404), raises
`Refused` for what it will not do (409: a card already decided, a run that cannot start)
and `UsageError` for what cannot be asked (422). `NoRuns` is the backend of a build
without runs: every call raises `RunsUnavailable`, which the service answers with 501 and
the dashboard shows as one line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Literal, Protocol

from typing_extensions import override

from keel.brain.specs import ReachEntry
from keel.errors import KeelError
from keel.link.values import Conversation, RunRef

RunStatus = Literal["pending", "running", "waiting", "done", "failed", "cancelled"]
CardStatus = Literal["pending", "approved", "denied"]


class RunsUnavailable(KeelError):
    """This build of Keel cannot run heartbeats, hooks or scenarios."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStep:
    """One step of a run: a turn it took, a tool it called, a card it waits on."""

    name: str
    status: RunStatus
    started_at: datetime | None = None
    finished_at: datetime | None = None
    turn_id: int | None = None  # the step's turn in the journal, when it took one
    detail: str = ""

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "status": self.status,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "turn_id": self.turn_id,
            "detail": self.detail,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Card:
    """An approval card: a tool call of a risk that waits for a person's decision."""

    id: str
    run_id: str | None
    tool: str
    summary: str  # what the person is asked, in a line
    risk: str
    status: CardStatus = "pending"
    arguments: Mapping[str, Any] = field(default_factory=dict)
    asked_at: datetime | None = None
    decided_at: datetime | None = None
    decided_by: str | None = None
    note: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run_id": self.run_id,
            "tool": self.tool,
            "summary": self.summary,
            "risk": self.risk,
            "status": self.status,
            "arguments": dict(self.arguments),
            "asked_at": _iso(self.asked_at),
            "decided_at": _iso(self.decided_at),
            "decided_by": self.decided_by,
            "note": self.note,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """A run of a heartbeat, hook or scenario: its status, its steps, its cards."""

    id: str
    run: RunRef
    status: RunStatus
    entity: str | None = None  # the entity key the run is about
    started_at: datetime | None = None
    finished_at: datetime | None = None
    steps: tuple[RunStep, ...] = ()
    cards: tuple[Card, ...] = ()
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "run": self.run.key,
            "status": self.status,
            "entity": self.entity,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "steps": [s.to_json() for s in self.steps],
            "cards": [c.to_json() for c in self.cards],
            "error": self.error,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart:
    """What `POST /v1/runs` asks: a heartbeat or scenario, and where it speaks."""

    run: RunRef
    entity: str | None = None
    reach: tuple[ReachEntry, ...] | None = None
    conversation: Conversation | None = None
    input: str = ""


class RunsBackend(Protocol):
    """Runs and approval cards, as the service and the dashboard use them."""

    def unavailable(self) -> str | None:
        """Why this build has no runs (the dashboard says so), or None when it has them."""
        ...

    def runs(self, *, limit: int) -> Sequence[Run]:
        """The newest runs, newest first."""
        ...

    def run(self, run_id: str) -> Run | None:
        """One run with its steps and cards; None when no run has this id."""
        ...

    def start(self, start: RunStart) -> Run:
        """Start a heartbeat or scenario now; `Refused` or `UsageError` say why not."""
        ...

    def fire(
        self, event: str, payload: Mapping[str, Any], conversation: Conversation | None
    ) -> Sequence[Run]:
        """Fire an event: the runs of the hooks it started (none when no hook listens)."""
        ...

    def cards(self) -> Sequence[Card]:
        """The approval cards still pending, oldest first."""
        ...

    def decide(
        self, card_id: str, *, approve: bool, by: str | None, note: str | None
    ) -> Card | None:
        """Approve or deny a pending card; None when no card has this id, `Refused` when it
        was already decided."""
        ...


NOT_BUILT = (
    "runs are not available in this build of Keel: heartbeats, hooks, scenarios and "
    "approval cards arrive with the runs package"
)


class NoRuns(RunsBackend):
    """The backend of a build without runs: it lists nothing and starts nothing."""

    @override
    def unavailable(self) -> str | None:
        return NOT_BUILT

    @override
    def runs(self, *, limit: int) -> Sequence[Run]:
        raise RunsUnavailable(NOT_BUILT)

    @override
    def run(self, run_id: str) -> Run | None:
        raise RunsUnavailable(NOT_BUILT)

    @override
    def start(self, start: RunStart) -> Run:
        raise RunsUnavailable(NOT_BUILT)

    @override
    def fire(
        self, event: str, payload: Mapping[str, Any], conversation: Conversation | None
    ) -> Sequence[Run]:
        raise RunsUnavailable(NOT_BUILT)

    @override
    def cards(self) -> Sequence[Card]:
        raise RunsUnavailable(NOT_BUILT)

    @override
    def decide(
        self, card_id: str, *, approve: bool, by: str | None, note: str | None
    ) -> Card | None:
        raise RunsUnavailable(NOT_BUILT)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
