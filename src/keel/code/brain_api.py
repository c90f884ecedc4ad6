"""What brain code is handed inside a worker: the turn, the event, and its `ctx`.

`match(turn, ctx)` reads `turn.input`, `turn.role`, `turn.surface`, `turn.subject_id` and
`turn.run` (None, or `.feature` and `.reach`, entries with `.context` and `.entity`); a
chat turn's `input` is put together from `turn.lines` (the room's lines before it, each
`.role` and `.text`), `turn.envelope` (`.chat`, `.thread`, `.time`, `.sender`,
`.reply_to`: each `.id` and `.text`) and `turn.message` (the message alone). An
event or an incoming message is a `Record`: a dict whose keys also read as attributes
(`event["ticket_id"]`, `message.text`). A name that is not there raises an error listing
the names that are, so a probe can tell the author what they misspelt.

`ctx` carries `context` (or `hook`, `bot`), `signal` (set when the call's deadline passes:
check it in long loops and waits), `log(...)` (lines that Keel logs with the file), and,
where the call may have them, `query(sql, params)` (render: the brain's database, read
only) and `reach` (a hook's own reach). Whatever the code prints goes to the same log.

Standard library only, like the rest of what a worker imports before brain code.
"""

from __future__ import annotations

import contextvars
import difflib
import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

MAX_LOG_LINES = 100
MAX_LOG_CHARS = 2000


def _no_such(owner: str, name: str, names: Iterable[str], hint: str = "") -> AttributeError:
    options = list(names)
    near = difflib.get_close_matches(name, options, n=1, cutoff=0.6)
    maybe = f" — did you mean '{near[0]}'?" if near else ""
    return AttributeError(
        f"{owner} has no attribute {name!r}{maybe} (it has {', '.join(options)}){hint}"
    )


@dataclass(frozen=True, slots=True)
class Entry:
    """One reach entry: a context and the entity key it is about, if any."""

    context: str
    entity: str | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """The feature run a turn is."""

    feature: str
    reach: tuple[Entry, ...] = ()

    def __getattr__(self, name: str) -> Any:
        raise _no_such("turn.run", name, ("feature", "reach"))


@dataclass(frozen=True, slots=True)
class Turn:
    """The turn `match` is asked about."""

    input: str
    role: str
    surface: str
    subject_id: str | None
    run: Run | None
    message: str = ""
    envelope: Record | None = None
    lines: tuple[Record, ...] = ()

    def __getattr__(self, name: str) -> Any:
        raise _no_such("turn", name, TURN_NAMES)

    @classmethod
    def of(cls, data: Mapping[str, Any]) -> Turn:
        run = data.get("run")
        envelope = data.get("envelope")
        return cls(
            input=data["input"],
            role=data["role"],
            surface=data["surface"],
            subject_id=data.get("subject_id"),
            run=None if run is None else Run(feature=run["feature"], reach=entries(run["reach"])),
            message=data.get("message", ""),
            envelope=None if envelope is None else Record(envelope, name="turn.envelope"),
            lines=tuple(Record(line, name="a line") for line in data.get("lines", ())),
        )


TURN_NAMES = ("input", "role", "surface", "subject_id", "run", "message", "envelope", "lines")


def entries(items: Iterable[Mapping[str, Any]]) -> tuple[Entry, ...]:
    return tuple(Entry(context=i["context"], entity=i.get("entity")) for i in items)


class Record(dict[str, Any]):
    """A dict whose keys read as attributes too; nested dicts are Records as well."""

    def __init__(self, data: Mapping[str, Any], *, name: str = "the record") -> None:
        super().__init__({k: _record(v, f"{name}.{k}") for k, v in data.items()})
        object.__setattr__(self, "_name", name)

    def __getattr__(self, name: str) -> Any:
        if name in self:
            return self[name]
        raise _no_such(object.__getattribute__(self, "_name"), name, self.keys())

    def __setattr__(self, name: str, value: Any) -> None:
        self[name] = value


def _record(value: Any, name: str) -> Any:
    if isinstance(value, Mapping):
        return Record(value, name=name)
    if isinstance(value, list):
        return [_record(v, name) for v in value]
    return value


class Signal:
    """Set when the call's deadline has passed: stop and return."""

    def __init__(self) -> None:
        self._set = False
        # An Event costs more to make than a short call takes; most calls never wait.
        self._event: threading.Event | None = None
        self._lock = threading.Lock()

    @property
    def aborted(self) -> bool:
        return self._set

    def is_set(self) -> bool:
        return self._set

    def wait(self, timeout: float | None = None) -> bool:
        """Sleep up to `timeout` seconds, waking early when the deadline passes."""
        with self._lock:
            if self._event is None:
                self._event = threading.Event()
                if self._set:
                    self._event.set()
            event = self._event
        return event.wait(timeout)

    def raise_if_aborted(self) -> None:
        if self._set:
            raise TimeoutError("the call's deadline has passed")

    def set(self) -> None:
        with self._lock:
            self._set = True
            event = self._event
        if event is not None:
            event.set()


class CallLog:
    """Lines one call logged or printed, bounded so a chatty loop cannot fill memory."""

    def __init__(self) -> None:
        self.lines: list[str] = []
        self.dropped = 0
        self._partial = ""

    def __call__(self, *parts: object) -> None:
        self.add(" ".join(str(p) for p in parts))

    def add(self, line: str) -> None:
        if len(self.lines) >= MAX_LOG_LINES:
            self.dropped += 1
            return
        if len(line) > MAX_LOG_CHARS:
            line = line[:MAX_LOG_CHARS] + " [...]"
        self.lines.append(line)

    def write(self, text: str) -> None:
        """Take printed text: whole lines are logged, a partial one waits for its end."""
        *whole, self._partial = (self._partial + text).split("\n")
        for line in whole:
            self.add(line)
        if len(self._partial) > MAX_LOG_CHARS:
            self.add(self._partial)
            self._partial = ""

    def finish(self) -> list[str]:
        if self._partial:
            self.add(self._partial)
            self._partial = ""
        if self.dropped:
            return [*self.lines, f"[{self.dropped} more lines not kept]"]
        return list(self.lines)


CURRENT: contextvars.ContextVar[CallLog | None] = contextvars.ContextVar("keel_call", default=None)


class PrintSink:
    """Stands in for sys.stdout and sys.stderr: what a call prints joins its log."""

    encoding = "utf-8"
    errors = "replace"

    def write(self, text: str) -> int:
        log = CURRENT.get()
        # Text printed outside any call (from a thread the code started) has no call to
        # belong to, and nowhere safe to go: it is dropped.
        if log is not None:
            log.write(str(text))
        return len(text)

    def flush(self) -> None:
        return None

    def isatty(self) -> bool:
        return False

    def writable(self) -> bool:
        return True


class Ctx:
    """The second argument of every brain function: what the call may use."""

    def __init__(self, *, owner: str, log: CallLog, signal: Signal, **given: Any) -> None:
        self._owner = owner
        self.log = log
        self.signal = signal
        self._given = given

    def __getattr__(self, name: str) -> Any:
        given: dict[str, Any] = self.__dict__.get("_given", {})
        if name in given:
            return given[name]
        hint = ""
        if name == "query":
            hint = " — only render(entity, ctx) reads the database"
        elif name == "reach":
            hint = " — only a hook's gate is given the hook's reach"
        names = ("log", "signal", *given)
        raise _no_such(f"ctx of {self.__dict__.get('_owner', 'this call')}", name, names, hint)


Query = Callable[..., list[dict[str, Any]]]
