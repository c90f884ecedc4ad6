"""Processes that start on a brain's database together, for the tests that need several.

`together` starts one conductor process that, for each URL in turn, forks the starters
that begin together and collects what each saw. The conductor comes from a fork server
that has Keel imported, and runs no thread of its own, so its forks are safe and cost
milliseconds (forking pytest's own process would be neither). `opener` is one process that
opens a database once; the tests kill it while it builds. Nothing here asserts.
"""

from __future__ import annotations

import multiprocessing
import os
import sqlite3
from collections.abc import Iterator
from contextlib import closing, contextmanager
from multiprocessing.context import ForkServerContext
from multiprocessing.process import BaseProcess
from multiprocessing.queues import Queue
from multiprocessing.synchronize import Barrier, Event
from pathlib import Path
from typing import Any

from keel.brain import load_brain
from keel.brain.snapshot import Brain
from keel.link.values import Binding
from keel.state.database import connect
from keel.state.files import apply_state
from keel.state.scripts import views_defined
from keel.store import MIGRATIONS, Store

# (process id, "ok" or "error", what it saw or the error)
Outcome = tuple[int, str, Any]


def _server() -> ForkServerContext:
    ctx = multiprocessing.get_context("forkserver")
    ctx.set_forkserver_preload([__name__])
    return ctx


def together(task: str, root: Path, count: int, urls: list[str]) -> list[list[Outcome]]:
    """Run `count` starters of `task` together on each URL in turn; their outcomes per URL."""
    ctx = _server()
    results: Queue[list[list[Outcome]]] = ctx.Queue()
    conductor = ctx.Process(target=_conduct, args=(task, str(root), count, urls, results))
    conductor.start()
    try:
        return results.get(timeout=600)
    finally:
        conductor.join(timeout=60)


@contextmanager
def opener(url: str, root: Path) -> Iterator[BaseProcess]:
    """A process that opens the database once, yielded once it is about to."""
    ctx = _server()
    ready = ctx.Event()
    process = ctx.Process(target=_open, args=(url, str(root), ready))
    process.start()
    try:
        if not ready.wait(timeout=120):
            raise RuntimeError("the opener never got ready")
        yield process
    finally:
        if process.is_alive():
            process.kill()
        process.join(timeout=60)


def completeness(path: Path, brain: Brain) -> list[str]:
    """What the SQLite file at `path` lacks of a database Keel made for `brain`; [] if whole."""
    lacking: list[str] = []
    with closing(sqlite3.connect(f"file:{path}?mode=ro", uri=True)) as db:
        names = {name for (name,) in db.execute("SELECT name FROM sqlite_master")}
        if "keel_migrations" not in names or "keel_state_files" not in names:
            return ["Keel's tables"]
        migrated = {name for (name,) in db.execute("SELECT name FROM keel_migrations")}
        lacking += [name for name, _ in MIGRATIONS if name not in migrated]
        recorded = {path for (path,) in db.execute("SELECT path FROM keel_state_files")}
        lacking += [f.path for f in brain.state_sql if f.path not in recorded]
        for view in views_defined(brain.state_sql):
            if view not in names:
                lacking.append(view)
            else:
                db.execute(f'SELECT count(*) FROM "{view}"').fetchone()
    return lacking


# -- in the conductor and its starters ---------------------------------------------------


def _conduct(
    task: str, root: str, count: int, urls: list[str], results: Queue[list[list[Outcome]]]
) -> None:
    fork = multiprocessing.get_context("fork")
    target = {"start": _start, "apply": _apply}[task]
    trials: list[list[Outcome]] = []
    for url in urls:
        barrier = fork.Barrier(count)
        queue: Queue[Outcome] = fork.Queue()
        processes = [
            fork.Process(target=target, args=(url, root, barrier, queue)) for _ in range(count)
        ]
        for process in processes:
            process.start()
        trials.append([queue.get(timeout=120) for _ in processes])
        for process in processes:
            process.join(timeout=60)
    results.put(trials)


def _start(url: str, root: str, barrier: Barrier, results: Queue[Outcome]) -> None:
    """Open the database as the Engine does, together with the others; write a binding."""
    try:
        brain = load_brain(Path(root))
        barrier.wait(timeout=60)
        engine = connect(url, brain)
        store = Store(engine)
        store.migrate()
        chat = f"tg:chat:{os.getpid()}"
        with store.transaction() as tx:
            tx.bind(Binding(context="ticket", entity=f"T-{os.getpid()}", chat=chat))
        with store.transaction() as tx:
            seen = len(tx.bindings(chat))
        engine.dispose()
        results.put((os.getpid(), "ok", seen))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put((os.getpid(), "error", f"{type(exc).__name__}: {exc}"))


def _apply(url: str, root: str, barrier: Barrier, results: Queue[Outcome]) -> None:
    """`keel state apply` on a database the others apply to at the same moment."""
    try:
        brain = load_brain(Path(root))
        engine = connect(url, brain)
        barrier.wait(timeout=60)
        report = apply_state(engine, brain.state_sql)
        engine.dispose()
        results.put((os.getpid(), "ok", report.ran))
    except BaseException as exc:  # noqa: BLE001 - reported to the parent, which fails the test
        results.put((os.getpid(), "error", f"{type(exc).__name__}: {exc}"))


def _open(url: str, root: str, ready: Event) -> None:
    brain = load_brain(Path(root))
    ready.set()
    connect(url, brain).dispose()
