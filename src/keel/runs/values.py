"""What a run is asked to do (`RunOrder`) and what it decided at its start (`RunPlan`).

Both travel through the workflow's journal, so both are JSON-native with a `to_json` and a
`from_json`: the order is the workflow's argument, the plan its first step's result.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from keel.brain.specs import ENTITY_KINDS, EntityKind, ReachEntry
from keel.errors import UsageError
from keel.link.values import Conversation, RunRef
from keel.store.runs import reach_json, reach_of


def _kind(value: Any) -> EntityKind:
    for kind in ENTITY_KINDS:
        if value == kind:
            return kind
    raise UsageError(f"a run's kind is one of {', '.join(ENTITY_KINDS)}, not {value!r}")


@dataclass(frozen=True, slots=True, kw_only=True)
class RunOrder:
    """A run to make: of what, about which key, where it speaks, with which model.

    `reach` replaces the entity's reach for this run; `event` and `payload` are a hook's
    fire; `vars` a scenario's; `bot`, `chat`, `thread` say where it speaks when the entity
    does not (an event's chat, a caller's); `model` is a model spec (None: the process's,
    else the role's or MANIFEST's); `at` is when it was asked (a heartbeat's tick).
    """

    id: str
    kind: EntityKind
    entity_id: str
    at: str
    entity: str | None = None
    reach: tuple[ReachEntry, ...] | None = None
    event: str | None = None
    payload: Mapping[str, Any] = field(default_factory=dict)
    vars: Mapping[str, Any] = field(default_factory=dict)
    bot: str | None = None
    chat: str | None = None
    thread: str | None = None
    input: str = ""
    model: str | None = None

    @property
    def ref(self) -> RunRef:
        return RunRef(kind=self.kind, id=self.entity_id)

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "kind": self.kind,
            "entity_id": self.entity_id,
            "at": self.at,
            "entity": self.entity,
            "reach": None if self.reach is None else reach_json(self.reach),
            "event": self.event,
            "payload": dict(self.payload),
            "vars": dict(self.vars),
            "bot": self.bot,
            "chat": self.chat,
            "thread": self.thread,
            "input": self.input,
            "model": self.model,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunOrder:
        reach = data.get("reach")
        return cls(
            id=data["id"],
            kind=_kind(data["kind"]),
            entity_id=data["entity_id"],
            at=data["at"],
            entity=data.get("entity"),
            reach=None if reach is None else reach_of(reach),
            event=data.get("event"),
            payload=data.get("payload") or {},
            vars=data.get("vars") or {},
            bot=data.get("bot"),
            chat=data.get("chat"),
            thread=data.get("thread"),
            input=data.get("input") or "",
            model=data.get("model"),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RunPlan:
    """What a run decided at its start, and keeps for its whole life (replays included)."""

    run_id: str
    ref: RunRef
    role: str
    reach: tuple[ReachEntry, ...]
    conversation: Conversation
    model: str  # the model spec the run answers with ("none": no model call)
    entity: str | None = None
    feature: str | None = None
    pin: Mapping[str, Any] | None = None  # keel.runs.commits.Pin.to_json()
    timeout_s: float = 0.0  # how long an approval card waits

    def to_json(self) -> dict[str, Any]:
        return {
            "run_id": self.run_id,
            "kind": self.ref.kind,
            "entity_id": self.ref.id,
            "role": self.role,
            "reach": reach_json(self.reach),
            "bot": self.conversation.bot,
            "chat": self.conversation.chat,
            "thread": self.conversation.thread,
            "model": self.model,
            "entity": self.entity,
            "feature": self.feature,
            "pin": None if self.pin is None else dict(self.pin),
            "timeout_s": self.timeout_s,
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RunPlan:
        return cls(
            run_id=data["run_id"],
            ref=RunRef(kind=_kind(data["kind"]), id=data["entity_id"]),
            role=data["role"],
            reach=reach_of(data["reach"]),
            conversation=Conversation(
                bot=data["bot"], chat=data["chat"], thread=data.get("thread")
            ),
            model=data["model"],
            entity=data.get("entity"),
            feature=data.get("feature"),
            pin=data.get("pin"),
            timeout_s=float(data.get("timeout_s") or 0.0),
        )
