"""What Keel asks brain code and what it gets back, as plain values.

Every request and every answer here is made of strings, numbers, booleans, None and
tuples of those, so an answer can be journaled with the turn (`to_json`) and read back on a
replay (`from_json`) instead of calling the code again.

A call names the code file by its brain-relative path and carries its own timeout (the
context's `codeTimeoutMs`, else MANIFEST `contexts.codeTimeoutMs`, else 2000 ms). An answer
carries either what the code decided or a `Failure` — never both — and the lines the code
logged while it ran (`ctx.log`, and anything it printed).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from keel.brain.specs import ReachEntry

# "terminal": a pipeline raised TerminalError — its run fails and must not be retried.
FailureKind = Literal["load", "raise", "timeout", "crash", "shape", "terminal"]
JobKind = Literal["match", "render", "gate", "engage", "inspect", "pipeline"]
DEFAULT_TIMEOUT_MS = 2000


@dataclass(frozen=True, slots=True, kw_only=True)
class RunView:
    """The feature run a turn is: its feature and the contexts it reaches."""

    feature: str
    reach: tuple[ReachEntry, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnView:
    """What `match(turn, ctx)` sees of a turn.

    `input` is the turn's input as the agent reads it; `surface` where the turn happens
    (for instance `chat`, `dm` or `run`) and `subject_id` who or what it is about there
    (the chat, the thread, the run's entity); `run` is None for a turn that is no run.
    """

    input: str
    role: str
    surface: str
    subject_id: str | None = None
    run: RunView | None = None
    # A chat turn's parts, which `input` puts together: the message alone, its envelope,
    # and the room's lines before it (speaker, text), oldest first.
    message: str = ""
    envelope: Envelope | None = None
    lines: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        run = self.run
        return {
            "input": self.input,
            "role": self.role,
            "surface": self.surface,
            "subject_id": self.subject_id,
            "run": None
            if run is None
            else {"feature": run.feature, "reach": [_entry(r) for r in run.reach]},
            "message": self.message,
            "envelope": None if self.envelope is None else self.envelope.to_json(),
            "lines": [{"role": role, "text": text} for role, text in self.lines],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Envelope:
    """Where and when a chat message came, who sent it, and the messages it replies to
    (id, text: the text when it is a message this bot sent here, else empty)."""

    chat: str
    thread: str | None = None
    time: str = ""  # ISO 8601, UTC
    sender: str | None = None
    reply_to: tuple[tuple[str, str], ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "chat": self.chat,
            "thread": self.thread,
            "time": self.time,
            "sender": self.sender,
            "reply_to": [{"id": ident, "text": text} for ident, text in self.reply_to],
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Failure:
    """Why a call linked, rendered or decided nothing: the file, the line if known, the fix."""

    file: str
    kind: FailureKind
    reason: str
    line: int | None = None

    def __str__(self) -> str:
        where = f"{self.file}:{self.line}" if self.line is not None else self.file
        return f"{where}: {self.reason}"

    def to_json(self) -> dict[str, Any]:
        return {"file": self.file, "kind": self.kind, "reason": self.reason, "line": self.line}

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> Failure:
        return cls(file=data["file"], kind=data["kind"], reason=data["reason"], line=data["line"])


@dataclass(frozen=True, slots=True, kw_only=True)
class Section:
    """One section a render adds after its context's views."""

    key: str
    text: str


# ---------------------------------------------------------------------------------------
# Calls


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchCall:
    """Ask a context's code whether this turn links it (`keyed`: the context names an entity)."""

    context: str
    path: str
    keyed: bool
    turn: TurnView
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderCall:
    """Ask a context's code for its sections; `views` are the names its keys must not take."""

    context: str
    path: str
    entity: str | None
    views: tuple[str, ...] = ()
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class EngageCall:
    """Ask a bot's chat policy about one incoming message.

    `message` is what the policy reads (`message.text`, ...); `contexts` maps every context
    id of the brain to whether it is keyed, so attach entries can be checked.
    """

    bot: str
    path: str
    message: Mapping[str, Any]
    contexts: Mapping[str, bool]
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class GateCall:
    """Ask a hook's gate what one fire is a run of; `reach` is the hook's own reach."""

    hook: str
    path: str
    event: Mapping[str, Any]
    reach: tuple[ReachEntry, ...] = ()
    timeout_ms: int = DEFAULT_TIMEOUT_MS


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    """One call as the runner sends it: which function of which file, with what, how long.

    `args` is plain JSON; the typed calls above become jobs in `keel.code.runner`.
    """

    kind: JobKind
    path: str
    args: Mapping[str, Any]
    timeout_ms: int = DEFAULT_TIMEOUT_MS


# ---------------------------------------------------------------------------------------
# Answers


@dataclass(frozen=True, slots=True, kw_only=True)
class Reply:
    """What the worker sent back for one call, before its shape is checked.

    `absent`: the file defines no such function (a context with render only, asked to
    match). `line` is where the answering function is defined, for a wrong shape.
    `unplain` describes a value that is not plain data (a set, an object).
    """

    value: Any = None
    failure: Failure | None = None
    absent: bool = False
    line: int | None = None
    unplain: str | None = None
    log: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class MatchAnswer:
    """Whether a context's code links the turn, and with which entity."""

    context: str
    linked: bool = False
    entity: str | None = None
    failure: Failure | None = None
    log: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "linked": self.linked,
            "entity": self.entity,
            "failure": _failure(self.failure),
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> MatchAnswer:
        return cls(
            context=data["context"],
            linked=data["linked"],
            entity=data["entity"],
            failure=_failure_from(data["failure"]),
            log=tuple(data["log"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderAnswer:
    """The sections a context's code adds (none when it failed)."""

    context: str
    entity: str | None
    sections: tuple[Section, ...] = ()
    failure: Failure | None = None
    log: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "context": self.context,
            "entity": self.entity,
            "sections": [{"key": s.key, "text": s.text} for s in self.sections],
            "failure": _failure(self.failure),
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> RenderAnswer:
        return cls(
            context=data["context"],
            entity=data["entity"],
            sections=tuple(Section(key=s["key"], text=s["text"]) for s in data["sections"]),
            failure=_failure_from(data["failure"]),
            log=tuple(data["log"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class EngageAnswer:
    """A chat policy's verdict on one message.

    `engage` None is no verdict (the policy returned None, or failed): the bot's chat rules
    decide. `dropped` holds one reason per attach entry that was left out.
    """

    engage: bool | None = None
    attach: tuple[ReachEntry, ...] = ()
    dropped: tuple[str, ...] = ()
    failure: Failure | None = None
    log: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "engage": self.engage,
            "attach": [_entry(a) for a in self.attach],
            "dropped": list(self.dropped),
            "failure": _failure(self.failure),
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> EngageAnswer:
        return cls(
            engage=data["engage"],
            attach=tuple(_entry_from(a) for a in data["attach"]),
            dropped=tuple(data["dropped"]),
            failure=_failure_from(data["failure"]),
            log=tuple(data["log"]),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class GateAnswer:
    """A gate's decision as it said it: a reach replacing the hook's, an entity, or neither.

    `line` is where the gate is defined, for a decision the reach cannot take.
    """

    reach: tuple[ReachEntry, ...] | None = None
    entity: str | None = None
    failure: Failure | None = None
    line: int | None = None
    log: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Inspection:
    """What a code file exports, as doctor reports it: its functions, or why it failed."""

    path: str
    functions: tuple[str, ...] = ()
    async_functions: tuple[str, ...] = ()
    lines: Mapping[str, int | None] = field(default_factory=dict)
    failure: Failure | None = None
    # What the module printed or logged while it loaded.
    log: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class GateResult:
    """What one fire is a run of: its reach (keyed where the gate said) and its entity."""

    hook: str
    reach: tuple[ReachEntry, ...] = ()
    entity: str | None = None
    failure: Failure | None = None
    log: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "hook": self.hook,
            "reach": [_entry(r) for r in self.reach],
            "entity": self.entity,
            "failure": _failure(self.failure),
            "log": list(self.log),
        }

    @classmethod
    def from_json(cls, data: Mapping[str, Any]) -> GateResult:
        return cls(
            hook=data["hook"],
            reach=tuple(_entry_from(r) for r in data["reach"]),
            entity=data["entity"],
            failure=_failure_from(data["failure"]),
            log=tuple(data["log"]),
        )


def _entry(entry: ReachEntry) -> dict[str, Any]:
    return {"context": entry.context, "entity": entry.entity}


def _entry_from(data: Mapping[str, Any]) -> ReachEntry:
    return ReachEntry(context=data["context"], entity=data["entity"])


def _failure(failure: Failure | None) -> dict[str, Any] | None:
    return None if failure is None else failure.to_json()


def _failure_from(data: Mapping[str, Any] | None) -> Failure | None:
    return None if data is None else Failure.from_json(data)
