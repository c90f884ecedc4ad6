"""Calls that talk back: a pipeline, whose ctx calls are asks its caller answers.

`TalkingPool` adds to the worker pool what a pipeline needs (`keel.code.pipelines` drives
the conversation): `launch` hands the call over without waiting for it, `next_ask` waits
for its next ask or its reply, `answer` sends the answer to one ask and starts the call's
clock again, `abandon` stops it at its next ask. The caller never reads the worker's
socket itself — answering one ask can take minutes — so the pool's thread reads for it.
While an ask waits for its answer the call is paused (`keel.code.batches`): its time
does not run.
"""

from __future__ import annotations

import math
import time
from collections import deque
from collections.abc import Mapping
from typing import Any

from keel.code.batches import Batch, Pending
from keel.code.pool import WorkerPool
from keel.code.replies import not_run
from keel.code.values import Job
from keel.code.workers import GRACE_S
from keel.errors import UsageError


class TalkingPool(WorkerPool):
    """A worker pool that also runs calls that ask things while they run."""

    def launch(self, job: Job) -> Pending:
        """Hand over one call that asks things while it runs; do not wait for it.

        Its caller takes each ask with `next_ask` and answers it with `answer`.
        """
        batch = Batch(left=1)
        deadline = time.monotonic() + job.timeout_ms / 1000
        pending = Pending(id=next(self._ids), job=job, deadline=deadline, batch=batch)
        pending.asks = deque()
        batch.pending.append(pending)
        with self._lock:
            if self._thread is None:
                raise UsageError("the code runner is not started — use `with CodeRunner(...)`")
            if self._closing:
                pending.resolve(not_run(job, "the code runner is closed"))
                return pending
            queued = not any(not w.doomed for w in self._workers.all)
            if queued:
                self._queue.append(batch)
            else:
                self._dispatch(batch)
        if queued:
            self._wake()
        return pending

    def next_ask(self, pending: Pending) -> dict[str, Any] | None:
        """Wait for the call's next ask (returned) or its reply (None).

        The wait ends at the call's deadline, which stands still while an ask is answered.
        """
        asks = pending.asks if pending.asks is not None else deque()
        while True:
            with self._lock:
                if pending.reply is not None:
                    return None
                if asks:
                    return asks.popleft()
                pending.batch.wake.clear()
                deadline = pending.deadline
            if not math.isfinite(deadline):
                # Paused: an ask is being answered (by this caller, from another thread).
                pending.batch.wake.wait(1.0)
                continue
            left = deadline + GRACE_S - time.monotonic()
            if left <= 0:
                self._time_out(pending.batch)
            else:
                pending.batch.wake.wait(left)

    def answer(self, pending: Pending, seq: object, answer: Mapping[str, Any]) -> bool:
        """Send the answer to one ask, and start the call's clock again.

        False when the call has no worker any more (it ended, or its worker was stopped).
        """
        with self._lock:
            worker = self._workers.holding(pending.id)
            if worker is None or pending.reply is not None:
                return False
            now = time.monotonic()
            deadline = pending.resume(now)
            if pending.asks:
                pending.pause(now)  # another ask already waits: the clock stays stopped
            message = {"op": "answer", "id": pending.id, "seq": seq, "deadline": deadline}
            worker.send(message | dict(answer))
            if worker.out:
                self._workers.watch(worker)
        # The pool's thread may sleep past the new deadline; the worker will say when it
        # passes, and the caller's own wait ends there too.
        if worker.out:
            self._wake()
        return True

    def abandon(self, pending: Pending) -> None:
        """The call's caller has gone: stop the pipeline at its next ask (or the one waiting)."""
        with self._lock:
            pending.abandoned = True
            waiting = list(pending.asks or ())
            if pending.asks is not None:
                pending.asks.clear()
        for ask in waiting:
            self.answer(pending, ask.get("seq"), {"cancel": "its run is no longer waiting for it"})
