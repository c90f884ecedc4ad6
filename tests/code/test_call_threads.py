"""A worker's call threads: quick calls share one thread, slow ones get threads of their own."""

from __future__ import annotations

import functools
import threading
import time
from collections.abc import Iterator

import pytest

from keel.code.call_threads import MAX_IDLE, CallThreads


@pytest.fixture
def pool() -> Iterator[CallThreads]:
    """Call threads, with a thread in the worker's place handing out calls that wait."""
    threads = CallThreads()
    stop = threading.Event()

    def tick() -> None:
        while not stop.is_set():
            due = threads.fan_out()
            stop.wait(0.01 if due is None else max(0.0, due - time.monotonic()))

    ticker = threading.Thread(target=tick, daemon=True)
    ticker.start()
    yield threads
    stop.set()
    ticker.join()


def _alive() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "keel-code-call" and t.is_alive()]


def test_queued_calls_run_in_order_on_the_thread_that_was_running() -> None:
    # No one hands out waiting calls here (the reading thread does, after a millisecond):
    # the thread that finishes its job takes every queued call, in order.
    pool = CallThreads()
    ran: list[tuple[int, int]] = []
    done = threading.Event()

    def job(index: int) -> None:
        ran.append((index, threading.get_ident()))
        if index == 49:
            done.set()

    pool.queue([functools.partial(job, i) for i in range(50)])
    pool.relay(lambda: None)
    assert done.wait(10)
    assert [i for i, _ in ran] == list(range(50))
    assert len({t for _, t in ran}) == 1


def test_slow_calls_run_at_once_and_their_threads_do_not_stay(pool: CallThreads) -> None:
    before = len(_alive())
    barrier = threading.Barrier(20, timeout=10)
    finished = threading.Semaphore(0)

    def job() -> None:
        barrier.wait()  # all twenty must be running at once to get past this
        finished.release()

    pool.queue([job] * 20)
    pool.relay(lambda: None)
    for _ in range(20):
        assert finished.acquire(timeout=10)
    # Threads past the idle limit end on their own, right after their call; wait for that.
    until = time.monotonic() + 10
    while len(_alive()) > before + MAX_IDLE and time.monotonic() < until:
        time.sleep(0.01)
    assert len(_alive()) <= before + MAX_IDLE
    assert not pool.waiting()
