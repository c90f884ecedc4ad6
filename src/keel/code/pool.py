"""The pool of code workers: every call of brain code goes through here, isolated, bounded.

A `WorkerPool` keeps a few worker processes (`keel.code.worker`, held as
`keel.code.workers.Workers`). A caller hands over a batch of calls — one turn's matches,
then its renders — and waits. The batch goes to the least busy worker in one message, and
the caller reads the answers from that worker's socket itself: on a busy machine, handing
them over from another thread would cost more than the calls. The pool's own thread
starts workers, retires doomed ones, and reads what no caller is waiting for. Nothing can
hold a caller past a call's own deadline:

- a call still running at its deadline is answered as timed out, with the line it had
  reached when the worker can say; its worker takes no more calls and is killed (SIGKILL,
  with anything it started) as soon as nothing else running there can still finish in
  time, and a fresh worker is started in its place;
- a worker that dies (a segfault, a signal) fails the calls it had in flight, saying so;
  the calls that only ran beside the one that crashed it run once more, elsewhere, in
  what is left of their time (`os._exit` never gets that far: in a worker it raises);
- brain code never runs in this process: what it prints, the directory it changes to and
  the modules it replaces stay in its worker.

The pool never grows past its size plus the workers being retired, and each of those is
gone within one timeout; processes are reaped and their descriptors closed, so a storm of
hanging calls leaves nothing behind. The pool is thread-safe: several turns may use it at
once. `keel.code.runner.CodeRunner` adds the typed calls (`match_all`, `render_all`, ...).

A pipeline is a call that talks back (`keel.code.talkback`): its caller does not read the
worker's socket, since answering one ask can take minutes; the pool's thread reads for it
and hands each ask over (`keel.code.pipelines` drives the conversation).

A render's `ctx.query` talks back too, within its own time: the batch's caller runs each
statement with the batch's `reader` in its own thread — the one that holds the turn's
transaction — while it waits for the answers (`keel.code.query_relay`).

Workers get what MANIFEST `code:` allows them (`keel.code.process.environment`, and the
hello's `network`); `reconfigure` applies a changed MANIFEST to the workers started from
then on, and retires the others as soon as their calls are done.
"""

from __future__ import annotations

import contextlib
import itertools
import os
import select
import selectors
import socket
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from types import TracebackType
from typing import Any, Self

from keel.brain.constitution import CodeAccess
from keel.code.batches import Batch, Pending, Reader
from keel.code.process import environment
from keel.code.query_relay import serve_queries
from keel.code.replies import not_run, timed_out
from keel.code.values import Job, Reply
from keel.code.workers import GRACE_S, LOG, Worker, Workers
from keel.errors import UsageError

__all__ = ["GRACE_S", "LOG", "WorkerPool"]

# A call that died with its worker is run again only with at least this much time left.
_RETRY_MARGIN_S = 0.05


class WorkerPool:
    """`workers` processes running one brain's code; use it as a context manager."""

    def __init__(self, root: Path, *, access: CodeAccess | None = None, workers: int = 2) -> None:
        if workers < 1:
            raise UsageError(f"a code runner needs at least one worker, not {workers}")
        root = Path(root).resolve()
        self.access = access or CodeAccess()
        self._lock = threading.Lock()
        self._changed = threading.Condition(self._lock)
        hello, env = _hello(root, self.access), environment(self.access.env)
        self._workers = Workers(root, hello, env, workers, self._changed)
        self._queue: list[Batch] = []
        self._ids = itertools.count(1)
        self._wake_r: socket.socket | None = None
        self._wake_w: socket.socket | None = None
        self._thread: threading.Thread | None = None
        self._closing = False

    @property
    def started_workers(self) -> int:
        """How many worker processes this pool has started in all (replacements included)."""
        return self._workers.started

    # -- life -----------------------------------------------------------------------------

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        error: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        self.close()

    def start(self, *, ready_within_s: float = 30.0) -> None:
        """Start the workers and wait (up to `ready_within_s`) until they can take calls."""
        with self._lock:
            if self._thread is not None:
                return
            selector = selectors.DefaultSelector()
            self._wake_r, self._wake_w = socket.socketpair()
            self._wake_r.setblocking(False)
            self._wake_w.setblocking(False)
            selector.register(self._wake_r, selectors.EVENT_READ, ("wake", None))
            # The pool's thread starts the workers, on its first round: a worker dies with
            # the thread that started it.
            self._workers.selector = selector
            self._thread = threading.Thread(
                target=self._loop, args=(selector,), name="keel-code-runner", daemon=True
            )
            self._thread.start()
        self.wait_ready(ready_within_s)

    def wait_ready(self, timeout_s: float = 30.0) -> bool:
        """Wait until the pool is full of ready workers and none is being retired."""
        until = time.monotonic() + timeout_s
        with self._changed:
            while not self._workers.settled():
                left = until - time.monotonic()
                if left <= 0 or self._closing or self._workers.spawn_error is not None:
                    return False
                self._changed.wait(left)
        return True

    def close(self) -> None:
        """Stop every worker and the pool's thread; calls still waiting fail."""
        with self._lock:
            if self._closing:
                return
            self._closing = True
            thread = self._thread
        self._wake()
        if thread is not None:
            thread.join(timeout=10)

    def reconfigure(self, access: CodeAccess) -> None:
        """Start workers with this MANIFEST `code:` from now on; retire the others once
        the calls they are running are done."""
        with self._lock:
            if access == self.access:
                return
            self.access = access
            workers = self._workers
            workers.hello, workers.env = _hello(workers.root, access), environment(access.env)
            for worker in workers.all:
                worker.doomed = True
        self._wake()

    def pids(self) -> tuple[int, ...]:
        """The process ids of the workers alive now (retiring ones included)."""
        with self._lock:
            return tuple(w.pid for w in self._workers.all)

    # -- calls ----------------------------------------------------------------------------

    def run(
        self, jobs: Sequence[Job], *, retry_crowded: bool = False, reader: Reader | None = None
    ) -> tuple[Reply, ...]:
        """Run the jobs at once; each reply in order, none later than its job's deadline.

        A call whose worker died under it while it ran beside the call that crashed (or
        beside others, when which one did is not known) is run once more, in what is left
        of its own time. With `retry_crowded` (doctor), each such call runs again alone,
        with its whole timeout, so a failure lands on the file that caused it. `reader` runs
        the calls' `ctx.query` statements, in this thread.
        """
        done = self._run_batch(jobs, reader=reader)
        replies = [p.reply or not_run(p.job, "no answer") for p in done]
        again = [i for i, p in enumerate(done) if p.crowded]
        if retry_crowded:
            for index in again:
                self.wait_ready()  # its timeout is for the call, not for a worker to start
                (alone,) = self._run_batch([done[index].job], reader=reader)
                replies[index] = alone.reply or replies[index]
            return tuple(replies)
        now = time.monotonic()
        again = [i for i in again if done[i].deadline - now > _RETRY_MARGIN_S]
        retried = self._run_batch(
            [done[i].job for i in again], [done[i].deadline for i in again], reader=reader
        )
        for index, pending in zip(again, retried, strict=True):
            replies[index] = pending.reply or replies[index]
        return tuple(replies)

    def _run_batch(
        self,
        jobs: Sequence[Job],
        deadlines: Sequence[float] | None = None,
        *,
        reader: Reader | None = None,
    ) -> list[Pending]:
        if not jobs:
            return []
        now = time.monotonic()
        batch = Batch(left=len(jobs), reader=reader)
        worker: Worker | None = None
        with self._lock:
            if self._thread is None:
                raise UsageError("the code runner is not started — use `with CodeRunner(...)`")
            for index, job in enumerate(jobs):
                deadline = deadlines[index] if deadlines else now + job.timeout_ms / 1000
                batch.pending.append(
                    Pending(id=next(self._ids), job=job, deadline=deadline, batch=batch)
                )
            if self._closing:
                for pending in batch.pending:
                    pending.resolve(not_run(pending.job, "the code runner is closed"))
                return batch.pending
            if any(not w.doomed for w in self._workers.all):
                worker = self._dispatch(batch)
            else:
                self._queue.append(batch)  # the pool's thread starts a worker for it
            reading = worker is not None and worker.readers == 0
            if worker is not None and reading:
                # No one else listens to this worker now: this caller does, and the pool's
                # thread leaves its answers alone until it is done.
                worker.readers = 1
                self._workers.watch(worker)
        if worker is None:
            self._wake()
        if worker is not None and reading:
            self._read_answers(batch, worker)
        else:
            self._wait(batch)  # another caller, or the pool's thread, reads the answers
        return batch.pending

    def _dispatch(self, batch: Batch) -> Worker | None:
        """Send the batch to the least busy worker, which this caller will then listen to.

        One worker takes the whole batch: one message and one wake-up each way, however
        many calls. Inside it, quick calls share a thread and slow ones fan out, so they
        still run at once; several turns at once spread over the workers.
        """
        worker = self._workers.pick()
        if worker is None:
            for pending in batch.pending:
                error = self._workers.spawn_error or "no worker"
                pending.resolve(not_run(pending.job, error))
            return None
        for pending in batch.pending:
            worker.running[pending.id] = pending
        worker.send(batch.message())
        if worker.out:
            self._workers.watch(worker)
            self._wake()
        return worker

    def _read_answers(self, batch: Batch, worker: Worker) -> None:
        """Wait for the batch by reading the worker's socket in this very thread."""
        last = max(p.deadline for p in batch.pending)
        poll = select.poll()
        poll.register(worker.sock.fileno(), select.POLLIN)
        try:
            while not batch.done.is_set():
                left = last + GRACE_S - time.monotonic()
                if left <= 0:
                    self._time_out(batch)
                    return
                if poll.poll(max(1, int(left * 1000))):
                    with self._lock:
                        self._workers.read(worker)
                        if worker not in self._workers.all:
                            break  # it died: what it ran has its answer now
                    serve_queries(batch, self._lock, self._workers, self._wake)
        finally:
            with self._lock:
                worker.readers = 0
                alive = worker in self._workers.all
                if alive:
                    # Hand the socket back to the pool's thread, for other callers' answers.
                    self._workers.watch(worker)
                else:
                    worker.close()
            if worker.doomed or not alive:
                self._wake()  # the pool's thread retires it and starts its replacement
        self._wait(batch)

    def _wait(self, batch: Batch) -> None:
        last = max(p.deadline for p in batch.pending)
        if batch.reader is None:
            if not batch.done.wait(max(0.0, last + GRACE_S - time.monotonic())):
                self._time_out(batch)
            return
        while True:  # another thread reads the answers; this one runs the statements
            batch.wake.clear()
            serve_queries(batch, self._lock, self._workers, self._wake)
            if batch.done.is_set():
                return
            left = last + GRACE_S - time.monotonic()
            if left <= 0:
                self._time_out(batch)
                return
            batch.wake.wait(left)

    def _time_out(self, batch: Batch) -> None:
        """Past every deadline of the batch: what has not answered has timed out, whoever
        was to say so, and its worker is retired."""
        with self._lock:
            for pending in batch.pending:
                if pending.reply is None:
                    pending.resolve(timed_out(pending.job, None))
                    self._workers.doom(pending.id)
        self._wake()

    # -- the pool's thread ----------------------------------------------------------------

    def _loop(self, selector: selectors.BaseSelector) -> None:
        try:
            while True:
                with self._lock:
                    if self._closing:
                        break
                    for batch in self._queue:
                        self._dispatch_queued(batch)
                    self._queue.clear()
                    self._workers.fill()
                    for worker in self._workers.all:
                        self._workers.watch(worker)
                    due = self._workers.next_due()
                timeout = None if due is None else max(0.0, due - time.monotonic())
                events = selector.select(timeout)
                with self._lock:
                    for key, mask in events:
                        self._on_event(key.data, mask)
                    self._workers.expire()
                    self._workers.retire()
        finally:
            with self._lock:
                self._shutdown(selector)

    def _dispatch_queued(self, batch: Batch) -> None:
        """A batch that found no worker: send it now (its caller waits on `done`)."""
        self._dispatch(batch)

    def _on_event(self, data: tuple[str, Worker | None], mask: int) -> None:
        what, worker = data
        if worker is None:
            self._drain_wake()
            return
        if worker not in self._workers.all:
            return
        if what == "err":
            if not worker.drain_errors():
                self._workers.stop_hearing_errors(worker)
            return
        if mask & selectors.EVENT_WRITE:
            worker.flush()
            self._workers.watch(worker)
        # While a caller reads this socket itself, an event the selector saw before the
        # caller took it over is the caller's to handle, not this thread's.
        if mask & selectors.EVENT_READ and worker.readers == 0:
            self._workers.read(worker)

    def _wake(self) -> None:
        if self._wake_w is None:
            return
        # A full socket means a wake-up is already waiting; a closed one, the pool is gone.
        with contextlib.suppress(OSError):
            self._wake_w.send(b"\0")

    def _drain_wake(self) -> None:
        if self._wake_r is None:
            return
        with contextlib.suppress(OSError):  # empty now (BlockingIOError), or closed
            while self._wake_r.recv(4096):
                pass

    def _shutdown(self, selector: selectors.BaseSelector) -> None:
        """Fail what still waits, kill every worker, and close the pool's own sockets."""
        for batch in self._queue:
            for pending in batch.pending:
                pending.resolve(not_run(pending.job, "the code runner is closed"))
        self._queue.clear()
        self._closing = self._workers.closing = True
        for worker in list(self._workers.all):
            self._workers.remove(worker)
        selector.close()
        self._workers.selector = None
        for sock in (self._wake_r, self._wake_w):
            if sock is not None:
                sock.close()
        self._changed.notify_all()


def _hello(root: Path, access: CodeAccess) -> dict[str, Any]:
    """The first message a worker reads: its brain, who Keel is, and what it may reach."""
    keel = os.getpid()
    return {
        "op": "hello",
        "root": str(root),
        "keel": keel,
        "group": os.getpgrp(),
        "network": access.network,
    }
