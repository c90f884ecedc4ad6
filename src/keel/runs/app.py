"""DBOS bootstrap: one launched DBOS per process, and the runtime its workflows reach.

DBOS Transact is a process-global singleton, so a process holds at most one `Runtime`: the
brain's `Engine`, the model to answer with, this process's executor id, and the engines of
the brain commits that runs are pinned to. `launch` starts it; `Runtime.close` stops it.
Workflow code finds it with `current()`.

Where DBOS keeps its journal follows Keel's database: beside a SQLite file, its own file
(`.keel/dbos.sqlite` next to `.keel/keel.db`, never Keel's file: DBOS owns its tables);
on PostgreSQL the same database, in the schema `keel_dbos` — or `<schema>_dbos` when the
URL's `search_path` names one, so two brains (or two tests) in one database stay apart.

The application version is pinned: recovery and scheduling match on it, and a version
that changed with each edit would strand every unfinished run. Change it only for a
workflow change a replay cannot follow, after draining the runs of the old one.

`import dbos` is slow (seconds without byte code): only this package and the run commands
import it, never `import keel`.
"""

from __future__ import annotations

import contextlib
import logging
import os
import secrets
import socket
import threading
import time
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote

from sqlalchemy.engine import Engine as SAEngine
from sqlalchemy.engine import make_url

from keel.errors import StoreError, UsageError
from keel.log import logger
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice
from keel.state.database import shown
from keel.state.sqlite_file import write_ahead
from keel.store.run_values import ExecutorRow

if TYPE_CHECKING:
    from dbos import DBOSConfig

    from keel.runs.commits import Pin
    from keel.runs.pinning import Pinning

LOG = logger("runs")
APP_NAME = "keel"
# Bump only for a workflow change a replay cannot follow (see the module docstring).
APP_VERSION = "keel-runs-2"
DEFAULT_SCHEMA = "keel_dbos"
# How often a process says it is alive, and how long after its last word it counts as dead
# on another host (on its own host, a process that is gone is dead at once).
BEAT_S = 2.0
STALE_S = 30.0
# recv and get_event poll at this interval on SQLite; it also bounds how long `close` waits.
POLL_S = 0.1
# How long `close` waits for the runs working here to leave (a run mid-step finishes it).
LEAVE_S = 10.0
# The key of the message that wakes a parked run to leave.
LEAVE = "leave"

_lock = threading.Lock()
_current: Runtime | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class SystemDatabase:
    """Where DBOS keeps its journal for a Keel database."""

    url: str
    schema: str


def system_database(keel_url: str) -> SystemDatabase:
    """DBOS's system database for Keel's database `keel_url` (see the module docstring)."""
    url = make_url(keel_url)
    if url.get_backend_name() == "sqlite":
        if not url.database or url.database == ":memory:":
            raise UsageError(
                f"runs need a database that outlives the process — {shown(keel_url)} is in "
                "memory; give a SQLite file or a PostgreSQL URL (--db)"
            )
        path = Path(url.database).resolve()
        name = "dbos.sqlite" if path.name == "keel.db" else f"{path.stem}.dbos.sqlite"
        return SystemDatabase(url=f"sqlite:///{(path.parent / name).as_posix()}", schema="")
    return SystemDatabase(url=keel_url, schema=_schema(url.query.get("options")))


def _schema(options: str | tuple[str, ...] | None) -> str:
    """`<search_path>_dbos` when the URL's options set one schema, else `keel_dbos`."""
    for option in [options] if isinstance(options, str) else list(options or ()):
        for word in unquote(option).split():
            name, _, value = word.removeprefix("-c").partition("=")
            if name.strip() == "search_path" and value and "," not in value:
                return f"{value.strip()}_dbos"
    return DEFAULT_SCHEMA


def dbos_config(
    target: SystemDatabase, executor_id: str, engine: SAEngine | None = None
) -> DBOSConfig:
    """The DBOS configuration of a Keel process; `engine` is the system database's engine
    when Keel makes it (`sqlite_engine`)."""
    from dbos import DBOSPortableJSONSerializer

    config: DBOSConfig = {
        "name": APP_NAME,
        "system_database_url": target.url,
        "application_version": APP_VERSION,
        "executor_id": executor_id,
        "log_level": "WARNING",
        "enable_otlp": False,
        "notification_listener_polling_interval_sec": POLL_S,
        # Every value a workflow journals is JSON-native (keel.runs.codec), so the journal
        # reads the same to any Keel and to a person looking at the database.
        "serializer": DBOSPortableJSONSerializer(),
    }
    if target.schema:
        config["dbos_system_schema"] = target.schema
    if engine is not None:
        config["system_database_engine"] = engine
    return config


def sqlite_engine(target: SystemDatabase) -> SAEngine | None:
    """The engine of a SQLite journal, made as DBOS makes it but in write-ahead mode.

    DBOS commits a few times per step; in SQLite's default journal each commit waits for
    the disk, which made most of a run's cost (see `keel.state.sqlite_file.write_ahead`).
    Every connection takes the write lock when it begins (as DBOS's own engine does, so
    writers queue instead of failing) and waits out a busy database. None on PostgreSQL:
    DBOS makes that engine itself.
    """
    if target.schema:
        return None
    from sqlalchemy import create_engine, event

    engine = create_engine(
        target.url, pool_size=20, max_overflow=0, pool_timeout=30, pool_pre_ping=True
    )

    @event.listens_for(engine, "connect")
    def _connect(dbapi_connection: Any, _record: Any) -> None:
        write_ahead(dbapi_connection)
        dbapi_connection.isolation_level = "IMMEDIATE"
        dbapi_connection.execute("PRAGMA busy_timeout=30000")
        dbapi_connection.execute("PRAGMA foreign_keys=ON")

    return engine


class Left(BaseException):
    """Raised in a run's thread when its process closes its runtime while the run waits
    for a person: the thread ends, and the run stays unfinished in DBOS's journal (DBOS
    records the end of a workflow that raised an `Exception` only), to be taken over by a
    live process (`keel.runs.executors`). A `BaseException`, so no handler of a run's
    errors takes it for a failure of the run."""


def executor_id(kind: str) -> str:
    """A new executor id, unique among the processes that share a database."""
    return f"{kind}-{socket.gethostname()}-{os.getpid()}-{secrets.token_hex(3)}"


@dataclass(slots=True, kw_only=True)
class Runtime:
    """What this process's workflows reach: see the module docstring."""

    engine: Engine
    executor: str
    target: SystemDatabase
    model: ModelChoice | None = None
    journal: SAEngine | None = None  # the SQLite journal's engine, which Keel made
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    _pinned: dict[str, Engine] = field(default_factory=dict)
    _pinning: Pinning | None = None
    _stop: threading.Event = field(default_factory=threading.Event)
    _beat: threading.Thread | None = None
    _running: set[str] = field(default_factory=set)
    _parked: dict[str, str] = field(default_factory=dict)  # run id -> the topic it waits on
    _closing: threading.Event = field(default_factory=threading.Event)
    _changes: int = 0  # how often a run here ended or parked: what `wait_change` waits for
    _changed: threading.Condition = field(default_factory=threading.Condition)

    @contextmanager
    def working(self, run_id: str) -> Iterator[None]:
        """Note a run's workflow body running in this process while the block runs."""
        with _lock:
            self._running.add(run_id)
        try:
            yield
        finally:
            with _lock:
                self._running.discard(run_id)

    @contextmanager
    def parked(self, run_id: str, topic: str) -> Iterator[None]:
        """Note a run of this process waiting for a person (a message on `topic`) while the
        block runs. Raises `Left` when this runtime is closing: `close` wakes the runs
        parked here with a message on their topic, and they leave instead of waiting on."""
        with _lock:
            self._parked[run_id] = topic
        self.note_change()
        try:
            if self._closing.is_set():
                raise Left(f"run {run_id} left its process ({self.executor}), which is closing")
            yield
        finally:
            with _lock:
                self._parked.pop(run_id, None)

    @property
    def changes(self) -> int:
        """A count that moves whenever a run started here ends (DBOS has recorded its
        end) or a run here starts to wait for a person: pass it to `wait_change`."""
        return self._changes

    def wait_change(self, since: int, timeout_s: float) -> None:
        """Return once `changes` is no longer `since`, or after `timeout_s`."""
        with self._changed:
            self._changed.wait_for(lambda: self._changes != since, timeout_s)

    def note_change(self) -> None:
        with self._changed:
            self._changes += 1
            self._changed.notify_all()

    @property
    def busy(self) -> int:
        """Workflow bodies running in this process now (a run waiting for a card counts)."""
        return len(self._running)

    def all_parked(self, run_ids: Iterable[str] = ()) -> bool:
        """Whether every run working here, and each of `run_ids`, waits for a person."""
        with _lock:
            return (self._running | set(run_ids)) <= self._parked.keys()

    def pin(self) -> Pin:
        """What the live brain is now: the pin a run starting now takes."""
        if self._pinning is None:
            from keel.runs.pinning import Pinning

            self._pinning = Pinning(self.engine.source)
        return self._pinning.pin()

    def engine_for(self, pin: Pin | None) -> Engine:
        """The engine of the brain as a pin has it: its snapshot's (the live brain for
        none)."""
        if pin is None:
            return self.engine
        from keel.runs.commits import snapshot

        key = pin.files or pin.id
        with _lock:
            found = self._pinned.get(key)
            if found is None:
                root = snapshot(self.engine.source.root, pin)
                _link_files(root, self.engine.source.root)
                found = Engine(root, self.engine.url, counter=self.engine.counter, watch=False)
                self._pinned[key] = found
            return found

    def close(self) -> None:
        """Let the runs working here leave (`leave`), stop this process's DBOS, forget it as
        an executor, close the pinned engines."""
        global _current
        from dbos import DBOS

        self.leave()
        self._stop.set()
        if self._beat is not None:
            self._beat.join(timeout=BEAT_S * 2)
        try:
            with self.engine.store.transaction() as tx:
                tx.remove_executors([self.executor])
        finally:
            DBOS.destroy(workflow_completion_timeout_sec=0)
            if self.journal is not None:
                self.journal.dispose()  # DBOS leaves an engine it did not make alone
            for pinned in self._pinned.values():
                pinned.close()
            self._pinned.clear()
            with _lock:
                if _current is self:
                    _current = None

    def leave(self, timeout_s: float = LEAVE_S) -> int:
        """Wake the runs parked here so that they leave (`Left`), and wait up to
        `timeout_s` for every run working here to end or leave; how many are still working.

        A run mid-step finishes its step first: its process ends without a thread left
        behind, and without killing a step half way. A run still working after the wait
        (a model request slower than that) is left to the process's exit.
        """
        from dbos import DBOS

        self._closing.set()
        with _lock:
            parked = dict(self._parked)
        for run_id, topic in parked.items():
            try:
                DBOS.send(run_id, {LEAVE: self.executor}, topic=topic)
            # A wake that cannot be sent leaves its run waiting where it is: the process
            # ends without it, and the run's thread with the process. Logged whole.
            except Exception:
                LOG.warning("run %s could not be told to leave", run_id, exc_info=True)
        deadline = time.monotonic() + timeout_s
        while self.busy and time.monotonic() < deadline:
            self.wait_change(self._changes, min(POLL_S, max(deadline - time.monotonic(), 0)))
        return self.busy

    def _heartbeat(self) -> None:
        while not self._stop.wait(BEAT_S):
            try:
                with self.engine.store.transaction() as tx:
                    tx.touch_executor(self.executor, datetime.now(UTC))
            except StoreError:  # a missed beat is logged; the next one tries again
                LOG.warning("executor %s could not say it is alive", self.executor, exc_info=True)


def current() -> Runtime:
    """This process's runtime; a `UsageError` outside a launched one."""
    runtime = _current
    if runtime is None:
        raise UsageError(
            "no runs runtime is launched in this process — launch one with keel.runs.service.launch"
        )
    return runtime


def active() -> Runtime | None:
    """This process's runtime, or None."""
    return _current


def launch(
    engine: Engine,
    *,
    kind: str = "run",
    model: ModelChoice | None = None,
    queues: Sequence[str] = (),
) -> Runtime:
    """Launch DBOS for `engine`'s database and make this process's runtime.

    `queues` are the queues this process takes work from (none by default: a command that
    runs one run now takes nobody else's). Raises `UsageError` when a runtime is launched.
    The workflows are registered first (`keel.runs.service.launch` does both).
    """
    global _current
    # Routed through Keel's logging before DBOS adds its own stderr handler.
    logging.getLogger("dbos").addHandler(logging.NullHandler())
    from dbos import DBOS

    target = system_database(engine.url)
    with _lock:
        if _current is not None:
            raise UsageError(
                f"a runs runtime is launched in this process already ({_current.executor}) — "
                "close it first"
            )
        store = engine.store  # Keel's tables exist before any workflow writes to them
        runtime = Runtime(
            engine=engine,
            executor=executor_id(kind),
            target=target,
            model=model,
            journal=sqlite_engine(target),
        )
        try:
            DBOS(config=dbos_config(target, runtime.executor, runtime.journal))
            DBOS.listen_queues(list(queues))
            DBOS.launch()
        except BaseException:
            if runtime.journal is not None:
                runtime.journal.dispose()
            raise
        now = datetime.now(UTC)
        with store.transaction() as tx:
            tx.register_executor(
                ExecutorRow(
                    id=runtime.executor,
                    host=socket.gethostname(),
                    pid=os.getpid(),
                    started_at=now,
                    seen_at=now,
                )
            )
        runtime._beat = threading.Thread(
            target=runtime._heartbeat, name=f"keel-executor-{runtime.executor}", daemon=True
        )
        runtime._beat.start()
        _current = runtime
    return runtime


def describe(runtime: Runtime) -> dict[str, Any]:
    """Where a runtime keeps its journal, for `keel worker` to say at start."""
    return {
        "executor": runtime.executor,
        "journal": shown(runtime.target.url),
        "schema": runtime.target.schema or None,
        "version": APP_VERSION,
    }


def _link_files(snapshot_root: Path, live_root: Path) -> None:
    """Have a snapshot reach the live brain's `files/` (what `file_send` sends): a run
    pins what it reads, not the files it sends, which the chat surface reads from the live
    brain when it delivers them. A snapshot that holds its own `files/` keeps it."""
    live = live_root / "files"
    link = snapshot_root / "files"
    if link.exists() or link.is_symlink() or not live.is_dir():
        return
    with contextlib.suppress(FileExistsError):  # another process linked it first
        link.symlink_to(live.resolve(), target_is_directory=True)
