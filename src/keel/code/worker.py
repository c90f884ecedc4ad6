"""A code worker: a long-lived process that runs brain code for Keel.

Started by `keel.code.process` as `python -P -B -m keel.code.worker FD`, in the brain's root
and a session of its own, with stdin and stdout on /dev/null and stderr on a pipe Keel
keeps the tail of (for a crash's traceback). FD is its end of the private channel
(`keel.code.protocol`); the first frame on it says which brain, which process Keel is, and
whether brain code may use the network. Before any brain code loads, the worker gives up
what brain code does not need (`keel.code.boundary.confine`); it holds no database
connection: a render's `ctx.query` asks Keel (`keel.code.ctx_query`).

One call thread at a time reads the channel and watches the clocks (`_lead`); when a
batch arrives it passes that duty to an idle thread and runs the batch itself
(`keel.code.call_threads`). When a deadline passes, the reading thread sets that call's
`ctx.signal`, looks up the line the call has reached, and tells Keel, which answers the
turn right away and retires this worker once nothing still running here can finish in
time. So a call that never returns costs its timeout and this process, nothing more. The
main thread only waits for Keel to hang up.

A pipeline's call talks back: each of its ctx calls goes to Keel as an `ask`, and the
reading thread hands Keel's `answer` to the pipeline (`keel.code.pipeline_ctx`). While it
waits for one, the call's deadline is not watched; the answer brings the new one.

Brain code cannot end the process on purpose: `os._exit` raises `ProcessExit` (a
`SystemExit`) in the call that made it. After each call the worker puts back its working
directory and `sys.stdout`/`sys.stderr`; when it falls idle, every entry of `sys.modules`
that was there at start-up, and ends every process the calls started that still runs
(`keel.code.boundary.end_strays`), before the last call's answer goes. Keel's own process
is never touched.
"""

from __future__ import annotations

import faulthandler
import os
import selectors
import socket
import sys
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from types import FrameType
from typing import Any, NoReturn

from keel.code.boundary import confine, end_strays
from keel.code.brain_api import CURRENT, CallLog, PrintSink, Signal
from keel.code.call_threads import CallThreads
from keel.code.calls import Executor
from keel.code.ctx_query import QueryLink
from keel.code.protocol import RECV_BYTES, BrokenChannel, Frames, FrameTooLarge, frame

# The longest an answer waits to go back with others of its batch.
HOLD_S = 0.001
# How long one thread runs before another that waits takes the interpreter.
SWITCH_S = 0.001
# Keel's own way out of this process; brain code gets `_refuse_exit` as `os._exit`.
_exit = os._exit


class ProcessExit(SystemExit):
    """Raised in place of ending the process when brain code calls `os._exit`."""


def _refuse_exit(status: int) -> NoReturn:
    raise ProcessExit(f"os._exit({status}) was called — brain code must not end its worker process")


@dataclass(slots=True)
class _Running:
    id: int
    deadline: float
    file: str
    signal: Signal = field(default_factory=Signal)
    thread: int | None = None
    overdue: bool = False
    # A pipeline's: its way to Keel, and how many of its asks wait for an answer.
    bridge: Any = None
    waiting: int = 0
    # A render's: its way to Keel's database.
    link: QueryLink | None = None


class Worker:
    """The worker's main loop, its call threads and its deadlines.

    `own_process` (the default) makes the process the worker's: its directory, stdio,
    `os._exit` and modules are set up and kept for brain code. Without it, the loop runs
    as a guest (in a test), touching none of that; `leave` is how it ends when Keel hangs
    up.
    """

    def __init__(
        self,
        sock: socket.socket,
        hello: Mapping[str, Any],
        *,
        own_process: bool = True,
        leave: Callable[[int], object] = _exit,
        frames: Frames | None = None,
        early: Sequence[dict[str, Any]] = (),
        notes: Sequence[str] = (),
    ) -> None:
        self._sock = sock
        self._own = own_process
        self._leave = leave
        self._gone = False
        self._left = threading.Event()
        self._selector = selectors.DefaultSelector()
        self._root = Path(hello["root"])
        self._home = str(self._root)
        self._executor = Executor(self._root)
        self._notes = list(notes)
        # What arrived with the hello: the rest of a frame, and messages already whole.
        self._frames = frames or Frames()
        self._early = list(early)
        self._send_lock = threading.Lock()
        self._state_lock = threading.Lock()
        self._running: dict[int, _Running] = {}
        self._threads = CallThreads()
        self._outbox = bytearray()
        self._held_since: float | None = None
        self._sink = PrintSink()
        self._baseline: dict[str, Any] = {}

    def serve(self) -> None:
        """Run until Keel closes the channel (or kills this process)."""
        if self._own:
            self._settle()
        self._selector.register(self._sock, selectors.EVENT_READ)
        self._send({"op": "ready", "notes": self._notes} if self._notes else {"op": "ready"})
        self._threads.queue(self._take(self._early))
        self._threads.relay(self._lead)
        self._left.wait()
        self._selector.close()

    def _lead(self) -> None:
        """Read the channel and watch the clocks until a batch arrives; then hand both to
        another thread, and run the batch in this one.

        So the thread that woke for the batch runs it: no second wake-up between a batch's
        arrival and its first call, which on a busy machine costs more than the calls.
        """
        self._threads.keep_spare()
        while not self._gone:
            if self._selector.select(self._until_next_tick()):
                jobs = self._read()
                if jobs:
                    self._threads.queue(jobs)
                    self._threads.relay(self._lead)
                    return
            self._check_deadlines()

    def _hang_up(self) -> None:
        """Keel is gone: leave (in a process of its own, at once — hung call threads must
        not keep it alive)."""
        self._gone = True
        if self._own:
            end_strays()
        self._leave(0)
        self._left.set()

    def _settle(self) -> None:
        """Make this process a home for brain code."""
        os.chdir(self._root)
        # A call that ends the process would take every call beside it down too: os._exit
        # raises in that call instead, and fails only it.
        os._exit = _refuse_exit
        faulthandler.enable(file=sys.__stderr__ or sys.stderr, all_threads=True)
        sys.stdout = sys.stderr = self._sink
        self._baseline = dict(sys.modules)
        # Calls that compute hold the interpreter in turns; the reading thread must get its
        # turn within Keel's grace past a deadline to say where they were (5 ms each by
        # default: six busy calls could keep it waiting past the grace).
        sys.setswitchinterval(SWITCH_S)

    def _read(self) -> list[Callable[[], None]]:
        """The calls that arrived, as jobs (none when Keel hung up)."""
        try:
            data = self._sock.recv(RECV_BYTES)
            messages = self._frames.feed(data) if data else None
        except (OSError, BrokenChannel):
            messages = None
        if messages is None:
            self._hang_up()
            return []
        return self._take(messages)

    def _take(self, messages: Sequence[dict[str, Any]]) -> list[Callable[[], None]]:
        jobs: list[Callable[[], None]] = []
        now = time.monotonic()
        for message in messages:
            if message.get("op") == "answer":
                self._deliver(message)
                continue
            if message.get("op") == "rows":
                self._deliver_rows(message)
                continue
            if message.get("op") != "calls":
                continue
            shared = message.get("shared", [])
            calls = [_with_shared(c, shared) for c in message["calls"]]
            # A call whose deadline passed before it arrived (it waited for this worker to
            # start) is not run at all: Keel has answered it already.
            for call in calls:
                if call["deadline"] <= now:
                    self._send({"op": "finished", "id": call["id"]})
            jobs += [self._job(c) for c in calls if c["deadline"] > now]
        return jobs

    def _job(self, call: Mapping[str, Any]) -> Callable[[], None]:
        # The deadline is absolute on the monotonic clock, which every process on the machine
        # shares: the worker gives up at the very moment Keel stops waiting.
        entry = _Running(
            id=call["id"], deadline=call["deadline"], file=os.path.join(self._home, call["path"])
        )
        if call["kind"] == "pipeline":
            from keel.code.pipeline_ctx import Bridge  # here: only pipelines pay for it

            entry.bridge = Bridge(entry.id, send=self._send, pause=lambda: self._pause(entry))
        elif call["kind"] == "render":
            entry.link = QueryLink(entry.id, send=self._send, deadline=entry.deadline)
        with self._state_lock:
            self._running[entry.id] = entry
        return lambda: self._run(entry, call)

    def _pause(self, entry: _Running) -> float:
        """A pipeline asks Keel something: stop its clock, unless its time is already up."""
        with self._state_lock:
            now = time.monotonic()
            if entry.overdue or now >= entry.deadline:
                raise TimeoutError("the pipeline's time was up before this ctx call")
            entry.waiting += 1
            return now

    def _deliver(self, message: Mapping[str, Any]) -> None:
        """Keel's answer to a pipeline's ask: its clock runs again, to the deadline Keel set."""
        with self._state_lock:
            entry = self._running.get(message.get("id", -1))
            if entry is None or entry.bridge is None or entry.overdue:
                return
            entry.waiting = max(0, entry.waiting - 1)
            entry.deadline = float(message.get("deadline", entry.deadline))
        entry.bridge.deliver(message)

    def _deliver_rows(self, message: Mapping[str, Any]) -> None:
        """Keel's answer to one of a render's statements."""
        with self._state_lock:
            entry = self._running.get(message.get("id", -1))
        if entry is not None and entry.link is not None:
            entry.link.deliver(message)

    def _run(self, entry: _Running, call: Mapping[str, Any]) -> None:
        entry.thread = threading.get_ident()
        log = CallLog()
        token = CURRENT.set(log)
        try:
            reply = self._executor.execute(
                call,
                signal=entry.signal,
                log=log,
                bridge=entry.bridge,
                query=None if entry.link is None else entry.link.query,
            )
        finally:
            CURRENT.reset(token)
            self._tidy()
        reply["log"] = log.finish()
        with self._state_lock:
            # A pipeline waiting for Keel runs nothing: the modules may be put back under it.
            idle = all(e.waiting for i, e in self._running.items() if i != entry.id)
        if idle:
            # Before the answer goes: Keel's next batch must find the modules put back, and
            # nothing the calls started still running.
            self._restore_modules()
            if self._own:
                end_strays()
        with self._send_lock:
            with self._state_lock:
                self._running.pop(entry.id, None)
            # While more calls wait for a thread, the answer waits a moment too: a batch of
            # quick calls goes back in one write, not one per call.
            hold = self._threads.waiting()
            if entry.overdue:
                self._send_locked({"op": "finished", "id": entry.id}, hold=hold)
            else:
                self._send_locked({"op": "done", "id": entry.id, **reply}, hold=hold)

    def _tidy(self) -> None:
        """Undo what a call may have changed for the calls after it: its cwd, its stdio."""
        if not self._own:
            return
        try:
            moved = os.getcwd() != self._home
        except OSError:
            moved = True
        if moved:
            os.chdir(self._home)
        if sys.stdout is not self._sink or sys.stderr is not self._sink:
            sys.stdout = sys.stderr = self._sink

    def _restore_modules(self) -> None:
        """Put back every module of start-up that brain code replaced or removed.

        Done when the worker falls idle (a whole walk of sys.modules costs more than a
        short call), so the next batch's modules load against the real ones.
        """
        modules = sys.modules
        for name, module in self._baseline.items():
            if modules.get(name) is not module:
                modules[name] = module

    def _until_next_tick(self) -> float | None:
        """Until a deadline passes, or a queued call is due a thread of its own."""
        with self._state_lock:
            times = [e.deadline for e in self._running.values() if not e.overdue and not e.waiting]
        times.extend(t for t in (self._threads.fan_out(), self._flush_if_due()) if t is not None)
        if not times:
            return None
        return max(0.0, min(times) - time.monotonic())

    def _check_deadlines(self) -> None:
        now = time.monotonic()
        with self._state_lock:
            # The usual case, and without waiting for a call thread that is sending.
            if not any(_due(e, now) for e in self._running.values()):
                return
        with self._send_lock:
            with self._state_lock:
                due = [e for e in self._running.values() if _due(e, now)]
                for entry in due:
                    entry.overdue = True
            # Where each call is, read before its signal lets it move on; and every word in
            # one write: call threads that hog the interpreter would otherwise make this
            # thread wait its turn again between two sends, past Keel's grace.
            reached = [(entry, *_line_reached(entry)) for entry in due]
            for entry in due:
                entry.signal.set()
                if entry.link is not None:
                    entry.link.abort()
            for entry, line, loading in reached:
                overdue: dict[str, Any] = {"op": "overdue", "id": entry.id, "line": line}
                if loading:
                    overdue["loading"] = True
                self._send_locked(overdue, hold=True)
            self._flush_locked()

    def _send(self, message: dict[str, Any]) -> None:
        with self._send_lock:
            self._send_locked(message)

    def _send_locked(self, message: dict[str, Any], *, hold: bool = False) -> None:
        try:
            data = frame(message)
        except FrameTooLarge as exc:
            data = frame({"op": "done", "id": message["id"], "too_large": exc.size, "log": []})
        self._outbox += data
        now = time.monotonic()
        if self._held_since is None:
            self._held_since = now
        if not hold or now - self._held_since >= HOLD_S:
            self._flush_locked()

    def _flush_locked(self) -> None:
        if not self._outbox:
            return
        try:
            self._sock.sendall(self._outbox)
        except OSError:
            self._hang_up()
        self._outbox.clear()
        self._held_since = None

    def _flush_if_due(self) -> float | None:
        """Send held answers that have waited long enough; when to look again (or None)."""
        if self._held_since is None:  # read without the lock: nothing held, nothing to do
            return None
        with self._send_lock:
            if self._held_since is not None and time.monotonic() - self._held_since >= HOLD_S:
                self._flush_locked()
            return None if self._held_since is None else self._held_since + HOLD_S


def _due(entry: _Running, now: float) -> bool:
    """Whether a call has run out of time (a pipeline waiting for Keel's answer has not)."""
    return not entry.overdue and not entry.waiting and now >= entry.deadline


def _with_shared(call: dict[str, Any], shared: list[Any]) -> dict[str, Any]:
    """The call with the arguments its batch sent once put back in its `args`."""
    refs = call.get("refs")
    if refs:
        call["args"] = {**call["args"], **{key: shared[i] for key, i in refs.items()}}
    return call


def _line_reached(entry: _Running) -> tuple[int | None, bool]:
    """The line of the brain file that the call's thread is running now, if it is in it;
    and whether that is the file's module level running (the file is still loading, maybe
    in a function the module calls, or in a module it imports)."""
    if entry.thread is None:
        return None, False
    line: int | None = None
    frame_: FrameType | None = sys._current_frames().get(entry.thread)
    while frame_ is not None:
        if frame_.f_code.co_filename == entry.file:
            if line is None:
                line = frame_.f_lineno
            if frame_.f_code.co_name == "<module>":
                return line, True
        frame_ = frame_.f_back
    return line, False


def main(argv: list[str]) -> None:
    sock = socket.socket(fileno=int(argv[1]))
    frames = Frames()
    received: list[dict[str, Any]] = []
    while not received:
        data = sock.recv(RECV_BYTES)
        if not data:
            _exit(0)
        received = frames.feed(data)
    hello = received[0]
    # Before anything else runs here, and before any thread starts (the limits bind the
    # thread that sets them, and the threads it starts).
    notes = confine(keel=hello["keel"], keel_group=hello["group"], network=hello["network"])
    # Calls sent before this worker was up may have come in the same read as the hello.
    Worker(sock, hello, frames=frames, early=received[1:], notes=notes).serve()


if __name__ == "__main__":
    main(sys.argv)
