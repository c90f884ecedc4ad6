"""What `keel serve` needs of runs: the `RunsBackend` protocol, and the server without runs.

Runs (heartbeats, hooks, scenarios) and their approval cards live in their own package;
the service and the dashboard only list, show, start and decide through this protocol,
so either side can change without the other. A backend returns plain values (`Run`,
`RunStep`, `Card`), None for an id it does not know (the service answers 404), raises
`Refused` for what it will not do (409: a card already decided, a run that cannot start)
and `UsageError` for what cannot be asked (422). The application's lifespan calls `open`
at start-up and `close` at shutdown, so a backend can host what runs its runs (the worker
of `keel.web.dbos_runs`).

`NoRuns` is the backend of a server without runs — a build without them, `keel serve
--no-worker`, a database in memory: every call raises `RunsUnavailable` with the reason,
which the service answers with 501 and the dashboard shows as one line. `RunsDown` is a
backend that has runs but cannot serve them now (its worker stopped): 503.
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
CardStatus = Literal["pending", "approved", "denied", "timed-out"]


class RunsUnavailable(KeelError):
    """This server does not run heartbeats, hooks or scenarios; the message says why."""


class RunsDown(RunsUnavailable):
    """This server runs them, but cannot now (its worker stopped); the message says why."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStep:
    """One step of a run: a turn it took, a tool it called, a card it waits on."""

    name: str
    status: RunStatus
    seq: int | None = None  # its place among the run's steps, from 1
    started_at: datetime | None = None
    finished_at: datetime | None = None
    turn_id: int | None = None  # the step's turn in the journal, when it took one
    detail: str = ""

    @property
    def ms(self) -> float | None:
        """How long the step took, when it has finished."""
        if self.started_at is None or self.finished_at is None:
            return None
        return round((self.finished_at - self.started_at).total_seconds() * 1000, 1)

    def to_json(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "name": self.name,
            "status": self.status,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "ms": self.ms,
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
    # Decisions refused for who made them: {by, at, reason} each; the card stayed pending.
    refused: tuple[Mapping[str, Any], ...] = ()

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
            "refused": [dict(r) for r in self.refused],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Run:
    """A run of a heartbeat, hook or scenario: its status, its steps, its cards.

    A run read whole also carries what it did, as `keel runs BRAIN show ID --json` prints
    it: `turns` (each as `keel turn --json` prints one), `messages` (each as `keel messages
    --json` shows one), the provider's `usage`, and whether it was `refused`. In a listing
    these are None: not read, and left out of its JSON.
    """

    id: str
    run: RunRef
    status: RunStatus
    entity: str | None = None  # the entity key the run is about
    role: str | None = None
    conversation: Conversation | None = None  # where it speaks
    reach: tuple[ReachEntry, ...] = ()
    model: str | None = None
    pin: str | None = None  # the brain commit (or content hash) the run reads
    started_at: datetime | None = None
    finished_at: datetime | None = None
    steps: tuple[RunStep, ...] = ()
    cards: tuple[Card, ...] = ()
    error: str | None = None
    refused: bool | None = None  # it failed because Keel refused what it did
    turns: tuple[Mapping[str, Any], ...] | None = None
    messages: tuple[Mapping[str, Any], ...] | None = None
    usage: Mapping[str, int] | None = None

    def to_json(self) -> dict[str, Any]:
        where = self.conversation
        data: dict[str, Any] = {
            "id": self.id,
            "kind": self.run.kind,
            "run": self.run.key,
            "entity_id": self.run.id,
            "status": self.status,
            "entity": self.entity,
            "role": self.role,
            "bot": where.bot if where is not None else None,
            "chat": where.chat if where is not None else None,
            "thread": where.thread if where is not None else None,
            "reach": [{"context": r.context, "entity": r.entity} for r in self.reach],
            "model": self.model,
            "pin": self.pin,
            "started_at": _iso(self.started_at),
            "finished_at": _iso(self.finished_at),
            "steps": [s.to_json() for s in self.steps],
            "cards": [c.to_json() for c in self.cards],
            "error": self.error,
        }
        if self.refused is not None:
            data["refused"] = self.refused
        if self.turns is not None:
            data["turns"] = [dict(t) for t in self.turns]
        if self.messages is not None:
            data["messages"] = [dict(m) for m in self.messages]
        if self.usage is not None:
            data["usage"] = dict(self.usage)
        return data


@dataclass(frozen=True, slots=True, kw_only=True)
class Where:
    """Where a caller says a run speaks: each field named replaces the run's own (its
    file's `bot:`, `chat:`, `thread:`), and one left None keeps it — except that a thread
    belongs to its chat, so naming the chat alone speaks in the whole chat."""

    bot: str | None = None
    chat: str | None = None
    thread: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class RunStart:
    """What `POST /v1/runs` asks: a heartbeat or scenario, where it speaks, who answers.

    `model` is a model spec (`keel run --model`); None leaves it to the server's
    `--model`, else the role's or MANIFEST's. `vars` are a scenario's.
    """

    run: RunRef
    entity: str | None = None
    reach: tuple[ReachEntry, ...] | None = None
    where: Where = field(default_factory=Where)
    input: str = ""
    vars: Mapping[str, Any] = field(default_factory=dict)
    model: str | None = None


class RunsBackend(Protocol):
    """Runs and approval cards, as the service and the dashboard use them."""

    def open(self) -> None:
        """Start what this backend runs in the server's process (at the app's start-up)."""
        return None

    def close(self) -> None:
        """Stop it (at the app's shutdown); a backend that was never opened does nothing."""
        return None

    def unavailable(self) -> str | None:
        """Why this build has no runs (the dashboard says so), or None when it has them."""
        ...

    def runs(self, *, limit: int) -> Sequence[Run]:
        """The newest runs, newest first."""
        ...

    def run(self, run_id: str) -> Run | None:
        """One run with its steps and cards; None when no run has this id."""
        ...

    def start(self, start: RunStart, *, run_id: str | None = None) -> Run:
        """Start a heartbeat or scenario now (under `run_id` when given: starting that id
        again starts nothing new); `Refused` or `UsageError` say why not."""
        ...

    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        where: Where,
        *,
        model: str | None = None,
        event_id: str | None = None,
    ) -> Sequence[Run]:
        """Fire an event: the runs of the hooks it started (none when no hook listens).

        With `event_id`, firing the same event again starts nothing new: its runs are
        answered as they stand."""
        ...

    def cards(self) -> Sequence[Card]:
        """The approval cards still pending, oldest first."""
        ...

    def decide(
        self,
        card_id: str,
        *,
        approve: bool,
        by: str | None,
        note: str | None,
        person: str | None = None,
    ) -> Card | None:
        """Approve or deny a pending card as `person`; None when no card has this id,
        `Refused` when it was already decided or the brain's `people:` does not let
        `person` decide it."""
        ...


NOT_BUILT = (
    "runs are not available in this build of Keel: heartbeats, hooks, scenarios and "
    "approval cards arrive with the runs package"
)


class NoRuns(RunsBackend):
    """The backend of a server without runs: it lists nothing and starts nothing, and
    says why (`reason`: by default, a build without them)."""

    def __init__(self, reason: str = NOT_BUILT) -> None:
        self.reason = reason

    @override
    def unavailable(self) -> str | None:
        return self.reason

    @override
    def runs(self, *, limit: int) -> Sequence[Run]:
        raise RunsUnavailable(self.reason)

    @override
    def run(self, run_id: str) -> Run | None:
        raise RunsUnavailable(self.reason)

    @override
    def start(self, start: RunStart, *, run_id: str | None = None) -> Run:
        raise RunsUnavailable(self.reason)

    @override
    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        where: Where,
        *,
        model: str | None = None,
        event_id: str | None = None,
    ) -> Sequence[Run]:
        raise RunsUnavailable(self.reason)

    @override
    def cards(self) -> Sequence[Card]:
        raise RunsUnavailable(self.reason)

    @override
    def decide(
        self,
        card_id: str,
        *,
        approve: bool,
        by: str | None,
        note: str | None,
        person: str | None = None,
    ) -> Card | None:
        raise RunsUnavailable(self.reason)


def _iso(moment: datetime | None) -> str | None:
    return moment.isoformat() if moment is not None else None
