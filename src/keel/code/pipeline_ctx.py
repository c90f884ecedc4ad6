"""What a pipeline is handed inside its worker: the `ctx` whose calls Keel carries out.

A pipeline is `async def run(ctx, vars)`. Each of its ctx calls — `run_agent`,
`bind_context`, `unbind_context`, `send`, `open_topic`, `request_approval`,
`await_approval` — leaves
the worker as an `ask` message (the call's name and JSON arguments) and is awaited: Keel
carries it out, as a durable step of the run, and answers with the call's JSON result or
with why it could not. The pipeline then sees `CallFailed` (or `TerminalError`, when Keel
says the run cannot go on), which it may catch. Calls go one at a time, in the order the
pipeline makes them: `asyncio.gather` over ctx calls works, but runs them in turn.

The pipeline's timeout counts its own work only. While a call waits for Keel, the worker
stops the pipeline's clock (`pause`); the answer brings its new deadline (see
`keel.code.pipelines`).

A replayed run runs its pipeline again from the start, and Keel answers the calls made
before from its journal. So a pipeline must make the same calls in the same order when it
gets the same answers: no clock, no random numbers, no I/O of its own between calls.
`ctx.started_at` (when the run started) and `ctx.random` (a generator seeded with the
run's id) are the same on every replay.

Standard library only; asyncio and random are imported when a pipeline first needs them.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Mapping, Sequence
from datetime import datetime
from typing import TYPE_CHECKING, Any

from keel.code.brain_api import CallLog, Signal, _no_such
from keel.code.define import CallFailed, TerminalError
from keel.code.protocol import FrameTooLarge, frame

if TYPE_CHECKING:
    import asyncio
    import random

CALLS = (
    "run_agent",
    "bind_context",
    "unbind_context",
    "send",
    "open_topic",
    "request_approval",
    "await_approval",
)


class Cancelled(BaseException):
    """Keel stopped the pipeline: nothing waits for its run any more. It ends here.

    A `BaseException`, so `except Exception` in a pipeline does not swallow it.
    """


class Bridge:
    """One running pipeline's end of its ctx calls: ask Keel, then wait for the answer.

    `send` writes a message to Keel; `pause` stops the call's clock and returns the time
    it stopped (it raises when the pipeline's time is already up). `deliver` is called
    from the worker's reading thread with each answer.
    """

    def __init__(
        self, ident: int, *, send: Callable[[dict[str, Any]], None], pause: Callable[[], float]
    ) -> None:
        self._ident = ident
        self._send = send
        self._pause = pause
        self._guard = threading.Lock()
        self._seq = 0
        self._waiting: tuple[int, asyncio.Future[Any], asyncio.AbstractEventLoop] | None = None
        self._turn: asyncio.Lock | None = None
        self._stopped: str | None = None

    async def ask(self, name: str, args: dict[str, Any]) -> Any:
        """Have Keel carry out one call; its result, or the error Keel gave as an exception."""
        import asyncio

        if self._turn is None:
            self._turn = asyncio.Lock()
        async with self._turn:
            if self._stopped is not None:
                raise Cancelled(self._stopped)
            loop = asyncio.get_running_loop()
            future: asyncio.Future[Any] = loop.create_future()
            with self._guard:
                self._seq += 1
                seq = self._seq
                self._waiting = (seq, future, loop)
            message = {"op": "ask", "id": self._ident, "seq": seq, "name": name, "args": args}
            try:
                frame(message | {"at": 0.0})  # too large to send: the pipeline hears it now
                message["at"] = self._pause()
            except FrameTooLarge as exc:
                self._forget(seq)
                raise ValueError(
                    f"ctx.{name}: its arguments are too large to send ({exc})"
                ) from None
            except BaseException:
                self._forget(seq)
                raise
            self._send(message)
            answer = await future
        return self._outcome(name, answer)

    def deliver(self, message: Mapping[str, Any]) -> None:
        """Keel's answer to the call waiting now (from the worker's reading thread)."""
        with self._guard:
            if "cancel" in message:
                self._stopped = str(message["cancel"])
            waiting = self._waiting
            if waiting is None or waiting[0] != message.get("seq"):
                return
            self._waiting = None
        _, future, loop = waiting
        with contextlib.suppress(RuntimeError):  # the pipeline's loop has closed: it ended
            loop.call_soon_threadsafe(_settle, future, message)

    def _forget(self, seq: int) -> None:
        with self._guard:
            if self._waiting is not None and self._waiting[0] == seq:
                self._waiting = None

    def _outcome(self, name: str, answer: Mapping[str, Any]) -> Any:
        if "cancel" in answer:
            raise Cancelled(str(answer["cancel"]))
        error = answer.get("error")
        if isinstance(error, Mapping):
            said = str(error.get("said", ""))
            if error.get("terminal"):
                raise TerminalError(said)
            raise CallFailed(said, call=name, kind=str(error.get("type", "")))
        return answer.get("value")


def _settle(future: asyncio.Future[Any], message: Mapping[str, Any]) -> None:
    if not future.done():
        future.set_result(message)


class PipelineCtx:
    """The `ctx` of `run(ctx, vars)`: the run's facts, and the calls Keel carries out."""

    def __init__(
        self, *, bridge: Bridge, log: CallLog, signal: Signal, args: Mapping[str, Any]
    ) -> None:
        self.log = log
        self.signal = signal
        self.scenario: str = args["scenario"]
        self.run_id: str = args["run_id"]
        self.started_at = datetime.fromisoformat(args["started_at"])
        self._bridge = bridge
        self._random: random.Random | None = None

    @property
    def random(self) -> random.Random:
        """Random numbers that are the same on every replay of the run (seeded by its id)."""
        if self._random is None:
            import random

            self._random = random.Random(self.run_id)
        return self._random

    async def run_agent(
        self,
        *,
        agent: str,
        prompt: str,
        entity: str | None = None,
        reach: Sequence[Mapping[str, Any]] | None = None,
    ) -> Any:
        """One agent turn of the run; `entity` keys the reach, `reach` replaces it."""
        args = {
            "agent": _text("run_agent", "agent", agent),
            "prompt": _text("run_agent", "prompt", prompt, empty=True),
            "entity": _text("run_agent", "entity", entity, optional=True),
            "reach": _reach(reach),
        }
        return await self._bridge.ask("run_agent", args)

    async def bind_context(
        self,
        *,
        context: str,
        entity: str | None = None,
        chat: str | None = None,
        thread: str | None = None,
        bot: str | None = None,
    ) -> Any:
        """Bind a chat (or one thread of it) to a context, keyed by `entity`."""
        args = {"context": _text("bind_context", "context", context)}
        args |= {"entity": _text("bind_context", "entity", entity, optional=True)}
        return await self._bridge.ask(
            "bind_context", args | _where("bind_context", chat, thread, bot)
        )

    async def unbind_context(
        self,
        *,
        context: str,
        chat: str | None = None,
        thread: str | None = None,
        bot: str | None = None,
    ) -> Any:
        """Undo a binding made with `bind_context`."""
        args = {"context": _text("unbind_context", "context", context)}
        return await self._bridge.ask(
            "unbind_context", args | _where("unbind_context", chat, thread, bot)
        )

    async def send(
        self,
        *,
        text: str,
        chat: str | None = None,
        about: Mapping[str, Any] | None = None,
        thread: str | None = None,
    ) -> Any:
        """Post a message with the run's origin, in `chat` (the run's own when None) and
        `thread` (a topic `open_topic` answered; by default the run's own in its own chat);
        `about` keys it: {'entity': key} and/or {'context': id}."""
        args = {
            "chat": _text("send", "chat", chat, optional=True),
            "text": _text("send", "text", text),
            "about": _about(about),
        }
        if thread is not None:
            args["thread"] = _text("send", "thread", thread)
        return await self._bridge.ask("send", args)

    async def open_topic(self, chat: str | None = None, title: str | None = None) -> Any:
        """Open a forum topic titled `title` in `chat` (the run's own when None); its
        thread id, at once — bind it or post there with `thread=`. A chat surface opens
        the topic itself before it delivers anything to that thread."""
        args = {
            "chat": _text("open_topic", "chat", chat, optional=True),
            "title": _text("open_topic", "title", title),
        }
        return await self._bridge.ask("open_topic", args)

    async def request_approval(
        self, *, text: str, chat: str | None = None, about: Mapping[str, Any] | None = None
    ) -> Any:
        """Post an approval card in `chat` (the run's own when None); its id, for
        `await_approval`. `about` keys the card as for `send`, so a reply to it comes back
        about that entity."""
        args = {
            "chat": _text("request_approval", "chat", chat, optional=True),
            "text": _text("request_approval", "text", text),
            "about": _about(about),
        }
        return await self._bridge.ask("request_approval", args)

    async def await_approval(self, card: str) -> Any:
        """Wait (durably, for as long as it takes) for a person: True approved, False not."""
        args = {"card": _text("await_approval", "card", card)}
        return await self._bridge.ask("await_approval", args)

    def __getattr__(self, name: str) -> Any:
        names = ("scenario", "run_id", "started_at", "random", "log", "signal", *CALLS)
        hint = ""
        if name in ("now", "time", "today"):
            hint = " — a pipeline must not read the clock: use ctx.started_at"
        raise _no_such("ctx of the pipeline", name, names, hint)


def _text(
    call: str, name: str, value: object, *, optional: bool = False, empty: bool = False
) -> Any:
    if value is None and optional:
        return None
    if not isinstance(value, str) or (not value and not empty):
        seen = repr(value) if isinstance(value, str) else type(value).__name__
        raise TypeError(f"ctx.{call}: {name} must be a non-empty string, got {seen}")
    return str(value)


def _where(call: str, chat: object, thread: object, bot: object) -> dict[str, Any]:
    return {
        "chat": _text(call, "chat", chat, optional=True),
        "thread": _text(call, "thread", thread, optional=True),
        "bot": _text(call, "bot", bot, optional=True),
    }


def _reach(reach: object) -> list[dict[str, Any]] | None:
    if reach is None:
        return None
    if not isinstance(reach, list | tuple):
        raise TypeError(
            "ctx.run_agent: reach must be a list of {'context': ..., 'entity': ...}, "
            f"got {type(reach).__name__}"
        )
    entries: list[dict[str, Any]] = []
    for index, entry in enumerate(reach):
        if not isinstance(entry, Mapping) or not set(entry) <= {"context", "entity"}:
            raise TypeError(
                f"ctx.run_agent: reach[{index}] must be {{'context': ..., 'entity': ...}}, "
                f"got {entry!r}"
            )
        entries.append(
            {
                "context": _text("run_agent", f"reach[{index}].context", entry.get("context")),
                "entity": _text(
                    "run_agent", f"reach[{index}].entity", entry.get("entity"), optional=True
                ),
            }
        )
    return entries


def _about(about: object) -> dict[str, Any] | None:
    if about is None:
        return None
    if not isinstance(about, Mapping) or not about or not set(about) <= {"entity", "context"}:
        raise TypeError(
            f"ctx.send: about must be {{'entity': key}} and/or {{'context': id}}, got {about!r}"
        )
    return {key: _text("send", f"about.{key}", value) for key, value in about.items()}
