"""A worker's call threads: quick calls share a thread, and a slow one holds up no other.

Calls wait in one queue, in order. A thread that finishes a job takes the next call, so a
batch of quick calls runs on the thread that read it from the channel (`relay` passes the
reading on to another thread first), with no wake-up in between. When a call has waited
`FANOUT_S` because every thread is busy — on a slow call, or one that never returns — the
reading thread hands it to an idle thread, or starts one. Calls that need to run at once
still do, each waiting at most about that long for a thread of its own.

A few idle threads are kept for the next batch; past `MAX_IDLE` an idle thread ends, so a
burst of slow calls does not leave its threads behind. A worker that hangs is killed whole
by Keel, threads and all.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable

FANOUT_S = 0.001
MAX_IDLE = 8

Job = Callable[[], None]


class _Slot:
    """An idle thread's mailbox: the call handed to it."""

    __slots__ = ("event", "job")

    def __init__(self) -> None:
        self.job: Job | None = None
        self.event = threading.Event()


class CallThreads:
    """Runs jobs on threads: in order on one when they are quick, at once when they are not."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._waiting: deque[tuple[float, Job]] = deque()
        self._idle: list[_Slot] = []
        self._busy = 0

    def queue(self, jobs: Iterable[Job]) -> None:
        """Queue the jobs for a thread already running (one about to take them itself)."""
        now = time.monotonic()
        with self._lock:
            self._waiting.extend((now, job) for job in jobs)

    def relay(self, job: Job) -> None:
        """Run `job` on an idle thread (a new one only when none is idle)."""
        with self._lock:
            self._hand_out(job)

    def keep_spare(self) -> None:
        """Make sure an idle thread is waiting, so the next hand-out wakes one instead of
        starting one (starting a thread waits for it to run)."""
        with self._lock:
            if self._idle:
                return
            slot = _Slot()
            self._idle.append(slot)
        threading.Thread(
            target=self._serve, args=(slot,), name="keel-code-call", daemon=True
        ).start()

    def waiting(self) -> bool:
        """Whether jobs are queued (a thread will take the next as soon as it is free)."""
        return bool(self._waiting)

    def fan_out(self) -> float | None:
        """Give each job that has waited too long a thread; when to look again (or None)."""
        now = time.monotonic()
        with self._lock:
            while self._waiting and now - self._waiting[0][0] >= FANOUT_S:
                self._hand_out(self._waiting.popleft()[1])
            return self._waiting[0][0] + FANOUT_S if self._waiting else None

    def _hand_out(self, job: Job) -> None:
        """Run `job` on an idle thread or a new one (the lock is held)."""
        self._busy += 1
        if self._idle:
            slot = self._idle.pop()
            slot.job = job
            slot.event.set()
            return
        slot = _Slot()
        slot.job = job
        threading.Thread(
            target=self._serve, args=(slot,), name="keel-code-call", daemon=True
        ).start()

    def _serve(self, slot: _Slot) -> None:
        while True:
            job = slot.job
            slot.job = None
            while job is not None:
                job()
                with self._lock:
                    job = self._waiting.popleft()[1] if self._waiting else None
                    if job is None:
                        self._busy -= 1
                        if len(self._idle) >= MAX_IDLE:
                            return
                        slot.event.clear()
                        self._idle.append(slot)
            slot.event.wait()
