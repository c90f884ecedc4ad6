"""The worker processes of a pool, and what they say: which are ready, busy, doomed or dead.

Every method here runs with the pool's lock held, from whichever thread holds it: the
pool's own thread, or a caller reading its batch's answers. A worker is *doomed* when a
call on it ran past its deadline: it takes no more calls, and it is killed as soon as
nothing still running on it can finish in time, while a fresh worker takes its place.
A worker that dies fails what it was running; the calls that only ran beside the one that
crashed it are marked `crowded`, for the pool to run again.

A pipeline waiting for the answer to one of its `ctx` calls is paused (see
`keel.code.batches`): it runs nothing, so it never keeps a doomed worker alive. When such
a worker is killed, or dies, the pipeline is marked `moved`: its caller runs it again on
another worker, answering the calls it had made from the record.

A render's `ctx.query` arrives as a `query` message: it waits in its batch for the batch's
caller, who holds the turn's connection (`keel.code.batches`). Workers are started by the
pool's own thread only (`fill`): a worker dies with the thread that started it
(`keel.code.boundary`), and that thread lives as long as the pool.
"""

from __future__ import annotations

import logging
import math
import selectors
import threading
import time
from pathlib import Path
from typing import Any

from keel.code.batches import Pending
from keel.code.process import WorkerProcess
from keel.code.protocol import BrokenChannel
from keel.code.query_relay import queried
from keel.code.replies import died, not_run, reply_of, timed_out

LOG = logging.getLogger("keel.code")
# How long past a deadline Keel waits for the worker's own word on the call (which says
# the line it reached); a worker too busy to say is not waited for any longer.
GRACE_S = 0.02
_RESPAWN_BACKOFF_S = 1.0

Worker = WorkerProcess[Pending]


class Workers:
    """A pool's worker processes, kept at `size` (plus the doomed ones on their way out)."""

    def __init__(
        self,
        root: Path,
        hello: dict[str, Any],
        env: dict[str, str],
        size: int,
        changed: threading.Condition,
    ) -> None:
        self.root = root
        self.hello = hello
        self.env = env
        self.size = size
        self.changed = changed
        self.all: list[Worker] = []
        self.selector: selectors.BaseSelector | None = None
        self.closing = False
        self.spawn_error: str | None = None
        self.retry_at = 0.0
        self.started = 0
        self.noted = False

    # -- the pool's shape -----------------------------------------------------------------

    def fill(self, *, force: bool = False) -> None:
        """Start workers until the pool is full again (a failed start waits a little)."""
        if self.closing or (not force and time.monotonic() < self.retry_at):
            return
        while sum(not w.doomed for w in self.all) < self.size:
            try:
                worker: Worker = WorkerProcess(self.root, self.hello, self.env)
            except OSError as exc:
                self.spawn_error = f"no worker process could be started: {exc}"
                self.retry_at = time.monotonic() + _RESPAWN_BACKOFF_S
                LOG.error("%s", self.spawn_error)
                self.changed.notify_all()  # whoever waits for the pool to be ready: it won't be
                return
            self.started += 1
            self.all.append(worker)
            if self.selector is not None and worker.err is not None:
                self.selector.register(worker.err, selectors.EVENT_READ, ("err", worker))
            self.watch(worker)

    def pick(self) -> Worker | None:
        """The least busy worker that takes calls, ready ones first; start one if none."""
        open_ = [w for w in self.all if not w.doomed]
        if not open_:
            self.fill(force=True)
            open_ = [w for w in self.all if not w.doomed]
        if not open_:
            return None
        return min(open_, key=lambda w: (not w.ready, len(w.running)))

    def settled(self) -> bool:
        """Whether the pool is full of ready workers and none is on its way out."""
        ready = [w for w in self.all if w.ready and not w.doomed]
        return len(ready) == self.size and len(self.all) == self.size

    def doom(self, ident: int) -> None:
        """Retire the worker running this call — unless it is still starting: then the call
        only waited for it, and the worker will drop it unrun, its deadline being past."""
        for worker in self.all:
            if ident in worker.running:
                worker.doomed = worker.doomed or worker.ready

    def watch(self, worker: Worker) -> None:
        """Have the pool's thread listen to the worker's socket: for answers while no caller
        reads them itself, and for room to write while something waits to be sent."""
        if self.selector is None or worker not in self.all:
            return
        # At most one caller reads a worker's socket at a time (`readers` is 0 or 1).
        wanted = (selectors.EVENT_READ if worker.readers == 0 else 0) | (
            selectors.EVENT_WRITE if worker.out else 0
        )
        registered = worker.sock in self.selector.get_map()
        if wanted and not registered:
            self.selector.register(worker.sock, wanted, ("sock", worker))
        elif wanted and self.selector.get_key(worker.sock).events != wanted:
            self.selector.modify(worker.sock, wanted, ("sock", worker))
        elif not wanted and registered:
            self.selector.unregister(worker.sock)

    def stop_hearing_errors(self, worker: Worker) -> None:
        """The worker's stderr has ended: stop listening to it."""
        err = worker.err
        if self.selector is not None and err is not None and err in self.selector.get_map():
            self.selector.unregister(err)

    # -- what they say --------------------------------------------------------------------

    def read(self, worker: Worker) -> None:
        """Take in whatever the worker has sent; bury it if it hung up."""
        if worker not in self.all:
            return
        try:
            messages, open_ = worker.receive()
        except BrokenChannel as exc:
            LOG.error("code worker %s broke the channel (%s); it is replaced", worker.pid, exc)
            messages, open_ = [], False
        for message in messages:
            self._heard(worker, message)
        if not open_:
            self.died(worker)

    def _heard(self, worker: Worker, message: dict[str, Any]) -> None:
        op, ident = message.get("op"), message.get("id")
        if op == "ready":
            self._ready(worker, message)
            return
        if not isinstance(ident, int):
            return
        if op == "done":
            pending = worker.running.pop(ident, None)
            if pending is not None:
                pending.resolve(reply_of(pending.job, message))
        elif op == "overdue":
            pending = worker.running.get(ident)
            worker.doomed = True
            if pending is not None:
                line, loading = message.get("line"), bool(message.get("loading"))
                pending.resolve(timed_out(pending.job, line, loading=loading))
        elif op == "finished":
            worker.running.pop(ident, None)
        elif op == "ask":
            self._asked(worker, message)
        elif op == "query":
            queried(self, worker, message)

    def _ready(self, worker: Worker, message: dict[str, Any]) -> None:
        worker.ready = True
        self.spawn_error = None
        notes = message.get("notes")
        if notes and not self.noted:
            self.noted = True  # the same on every worker: said once
            LOG.info("brain code runs with fewer limits here: %s", "; ".join(map(str, notes)))
        self.changed.notify_all()

    def _asked(self, worker: Worker, message: dict[str, Any]) -> None:
        """A pipeline's ctx call: pause its clock and hand the ask to its caller."""
        pending = worker.running.get(message["id"])
        if pending is None or pending.asks is None:
            return
        pending.pause(float(message.get("at", time.monotonic())))
        if pending.reply is None and not pending.abandoned:
            pending.asks.append(message)
            pending.batch.wake.set()
            return
        # No one will answer it (its caller has gone, or it was timed out meanwhile): the
        # pipeline is told to stop, on its own clock again.
        deadline = pending.resume(time.monotonic())
        stop = {"cancel": "its run is no longer waiting for it", "deadline": deadline}
        worker.send({"op": "answer", "id": pending.id, "seq": message.get("seq"), **stop})
        if worker.out:
            self.watch(worker)

    def holding(self, ident: int) -> Worker | None:
        """The live worker running this call, if any."""
        return next((w for w in self.all if ident in w.running), None)

    def expire(self) -> None:
        """Answer every call past its deadline (and grace) as timed out; doom its worker."""
        now = time.monotonic()
        for worker in self.all:
            for pending in worker.running.values():
                if pending.reply is None and now >= pending.deadline + GRACE_S:
                    pending.resolve(timed_out(pending.job, None))
                    self.doom(pending.id)

    def retire(self) -> None:
        """Kill each doomed worker once nothing running on it can still finish in time."""
        now = time.monotonic()
        for worker in list(self.all):
            if worker.doomed and all(
                now >= p.deadline or p.paused for p in worker.running.values()
            ):
                for pending in worker.running.values():
                    pending.moved = pending.paused
                self.remove(worker)
        self.fill()

    def next_due(self) -> float | None:
        """When something is next due: a deadline, a doomed worker's end, a new start."""
        times = [
            p.deadline + (GRACE_S if p.reply is None else 0.0)
            for w in self.all
            for p in w.running.values()
            if (p.reply is None or w.doomed) and math.isfinite(p.deadline)
        ]
        if self.spawn_error is not None:
            times.append(self.retry_at)
        return min(times) if times else None

    def died(self, worker: Worker) -> None:
        """The worker hung up: reap it, and fail what it was running, saying why."""
        worker.drain_errors()
        worker.reap()  # if it lives on all the same, reaping kills it; its group goes too
        worker.drain_errors()
        how = worker.end_words()
        unanswered = [p for p in worker.running.values() if p.reply is None]
        if not worker.ready:
            # It never started: starting more at once would only fail the same way.
            said = worker.last_words()
            self.spawn_error = f"a worker process {how} while starting" + (
                f": {said}" if said else ""
            )
            self.retry_at = time.monotonic() + _RESPAWN_BACKOFF_S
            LOG.error("%s", self.spawn_error)
            for pending in unanswered:
                pending.resolve(not_run(pending.job, self.spawn_error))
        elif not self.closing:
            LOG.warning(
                "code worker %s %s with %d call(s) in flight", worker.pid, how, len(unanswered)
            )
        # A fatal signal leaves the crashing thread's traceback: the call whose file is in it
        # did it, and the others only ran beside it.
        lines = {p.id: worker.crash_line(str(self.root / p.job.path)) for p in unanswered}
        culprit = next((p.job.path for p in unanswered if lines[p.id] is not None), None)
        for pending in unanswered:
            mine = lines[pending.id] is not None
            # A pipeline waiting for Keel's answer ran nothing when the process died.
            pending.moved = pending.paused and not mine
            pending.crowded = len(unanswered) > 1 and not mine
            reply = died(
                pending.job,
                how,
                lines[pending.id],
                beside=len(unanswered) - 1,
                culprit=None if mine else culprit,
            )
            pending.resolve(reply)
        worker.running.clear()
        self.remove(worker)

    def remove(self, worker: Worker) -> None:
        """Kill and reap the worker, fail what it still ran, and close what it held."""
        if self.selector is not None:
            for fileobj in (worker.sock, worker.err):
                if fileobj is not None and fileobj in self.selector.get_map():
                    self.selector.unregister(fileobj)
        worker.kill()
        worker.reap()
        self.all.remove(worker)
        for pending in worker.running.values():
            pending.resolve(not_run(pending.job, "its worker process was stopped"))
        # A caller may still be listening on the socket; the last one out closes it.
        if worker.readers == 0:
            worker.close()
        self.changed.notify_all()
