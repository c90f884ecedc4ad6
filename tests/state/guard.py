"""A guard for tests of code that must bound its own database reads.

Such a test, run on code that does not bound them, would hang the suite. Inside
`with guarded(engine):`, statements still running after `seconds` are stopped from outside
— SQLite's `interrupt()`, PostgreSQL's cancel request, again and again until the block
ends — and the test then fails, saying the guard had to step in. The code under test
never sees the guard, except as a statement that failed.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from sqlalchemy import Connection, Engine, event

# Far above the bounds the guarded tests set (2 s at most), so only a hang trips it.
GUARD_S = 10.0
_AGAIN_S = 0.05


@contextmanager
def guarded(engine: Engine, *held: Connection, seconds: float = GUARD_S) -> Iterator[None]:
    """Fail the test, instead of hanging, when the block's statements run past `seconds`.

    Watched: every connection the engine hands out inside the block, and the connections
    `held`, opened before it.
    """
    live: dict[int, Any] = {id(c): c.connection.dbapi_connection for c in held}
    lock = threading.Lock()

    def checkout(dbapi: Any, _record: Any, _proxy: Any) -> None:
        with lock:
            live[id(dbapi)] = dbapi

    event.listen(engine, "checkout", checkout)
    done = threading.Event()
    fired = threading.Event()

    def watch() -> None:
        if done.wait(seconds):
            return
        fired.set()
        while not done.is_set():
            with lock:
                connections = list(live.values())
            for dbapi in connections:
                _stop(engine, dbapi)
            done.wait(_AGAIN_S)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        watcher.join()
        event.remove(engine, "checkout", checkout)
    if fired.is_set():
        pytest.fail(f"the database work did not end within {seconds} s: the guard stopped it")


def _stop(engine: Engine, dbapi: Any) -> None:
    if engine.dialect.name == "sqlite":
        dbapi.interrupt()
    else:
        dbapi.cancel_safe(timeout=1.0)
