"""The one database of a brain: state views and Keel's own tables behind one URL.

The embedded default is a SQLite file inside the brain, `.keel/keel.db`. A SQLite database
that Keel creates (that file, any SQLite file that does not exist yet, or an in-memory one)
is complete when `connect` returns it: Keel's tables migrated and the brain's `state/*.sql`
applied and recorded, in one step that concurrent starters and a kill cannot split. Any
other database is used as it is — its schema belongs to whoever runs it, and
`keel.state.files.apply_state` is how a brain's files reach it on purpose.

PostgreSQL goes through psycopg 3, which SQLAlchemy imports only when such a URL is used, so
`import keel` never needs the driver.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from keel.brain.snapshot import Brain
from keel.brain.specs import SqlFile
from keel.errors import StoreError
from keel.state.files import apply_state
from keel.state.scripts import run_files
from keel.state.sqlite_file import make_whole, write_ahead
from keel.store.sql import begin_unless_store, failing_as, reason
from keel.store.store import Store

DB_DIR = ".keel"
DB_FILE = "keel.db"


def _now() -> datetime:
    return datetime.now(UTC)


def default_url(root: Path) -> str:
    """The embedded default database of the brain at `root`: `<root>/.keel/keel.db`."""
    return f"sqlite:///{(root / DB_DIR / DB_FILE).as_posix()}"


def anchored(url: str) -> str:
    """A SQLite URL whose file is named relative to the working folder, made absolute, so
    the processes that share it (brain code, a worker started elsewhere) open that file."""
    try:
        parsed = make_url(url)
    except ArgumentError:
        return url  # the store says what is wrong with it when it opens
    database = parsed.database or ""
    if parsed.get_backend_name() != "sqlite" or database in ("", ":memory:"):
        return url
    if database.startswith("file:") or Path(database).is_absolute():
        return url
    return parsed.set(database=str(Path(database).resolve())).render_as_string(hide_password=False)


def shown(url: str | URL) -> str:
    """The URL as it may be printed: the password hidden."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<a URL that cannot be parsed>"
    return parsed.render_as_string(hide_password=True)


def connect(url: str, brain: Brain, *, clock: Callable[[], datetime] = _now) -> Engine:
    """An engine on `url`, reachable now; a database Keel creates is complete when it opens.

    A SQLite file that does not exist yet is built whole elsewhere and then put in place
    (see `keel.state.sqlite_file`): Keel's tables migrated, the brain's `state/*.sql`
    applied and recorded, all in one transaction — safe when several processes start at
    once or one is killed. An in-memory database gets the same. Any other database is used
    as it is: `keel.state.files.apply_state` brings the state files to it on purpose.
    """
    parsed = _parse(url)
    where = shown(url)  # as the caller wrote it, not as rewritten for the driver
    created = _sqlite_to_create(parsed)
    file = _sqlite_file(parsed)
    if file is not None:  # built when missing; either way a gone builder's copy is swept
        make_whole(file, lambda temp: _fill(temp, brain, where, clock), where=where)
    engine = _engine(parsed, where)
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot reach the database {where}: {reason(exc)} — {_fix(parsed)}"
        ) from None
    if created is True:
        try:
            apply_state(engine, brain.state_sql, clock=clock)
        except StoreError:
            engine.dispose()
            raise
    return engine


def creates(url: str) -> bool:
    """Whether `connect(url, ...)` would create the database (and so apply state/*.sql)."""
    return _sqlite_to_create(_parse(url)) is not None


def apply_sql(engine: Engine, files: Iterable[SqlFile]) -> None:
    """Run SQL files in order, all in one transaction: a failure names the file and undoes all.

    Nothing is recorded, so running them again runs them again; `apply_state` is the
    recorded, repeatable way to bring a brain's state files to a database.
    """
    todo = tuple(files)
    if not todo:
        return
    undone = "nothing was applied" if len(todo) == 1 else "none of the state files was applied"
    what = f"apply the state files to {shown(engine.url)} ({undone})"
    with Store(engine).transaction() as tx, failing_as(what):
        run_files(tx.connection, todo, undone=undone)


def _fill(temp: Path, brain: Brain, where: str, clock: Callable[[], datetime]) -> None:
    """Build the whole database in `temp`: Keel's tables and the brain's state, recorded."""
    engine = _engine(make_url(f"sqlite:///{temp.as_posix()}"), where)
    try:
        apply_state(engine, brain.state_sql, clock=clock)
    finally:
        engine.dispose()


def _parse(url: str) -> URL:
    try:
        parsed = make_url(url)
    except ArgumentError:
        raise StoreError(
            f"'{shown(url)}' is not a database URL — write e.g. sqlite:///path/to/keel.db "
            "or postgresql://user@host:5432/dbname"
        ) from None
    if parsed.drivername in ("postgresql", "postgres"):
        # psycopg 3 is the driver Keel ships with (the `postgres` extra).
        parsed = parsed.set(drivername="postgresql+psycopg")
    return parsed


def _sqlite_file(url: URL) -> Path | None:
    """The SQLite file a URL names, if it names one (not in memory, not a `file:` URI)."""
    database = url.database or ""
    if url.get_backend_name() != "sqlite" or _in_memory(url) or database.startswith("file:"):
        return None
    return Path(database)


def _in_memory(url: URL) -> bool:
    return (url.database or "") in ("", ":memory:") or url.query.get("mode") == "memory"


def _sqlite_to_create(url: URL) -> Path | bool | None:
    """The SQLite file Keel is about to create, True for an in-memory one, else None."""
    if url.get_backend_name() == "sqlite" and _in_memory(url):
        return True
    path = _sqlite_file(url)
    return None if path is None or path.exists() else path


def _engine(url: URL, where: str) -> Engine:
    options: dict[str, Any] = {}
    if _sqlite_to_create(url) is True:
        # One connection for every thread: a second one would open a second, empty database.
        options = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    try:
        engine = create_engine(url, **options)
    except (NoSuchModuleError, ImportError) as exc:
        hint = (
            "install the PostgreSQL driver: pip install 'keel-engine[postgres]'"
            if url.get_backend_name() == "postgresql"
            else "use a sqlite:// or postgresql:// URL"
        )
        raise StoreError(f"cannot use the database {where}: {exc} — {hint}") from None
    except ArgumentError as exc:
        raise StoreError(f"cannot use the database {where}: {exc} — fix the URL") from None
    if engine.dialect.name == "sqlite":
        _real_sqlite_transactions(engine, in_memory=_sqlite_to_create(url) is True)
    return engine


def _real_sqlite_transactions(engine: Engine, *, in_memory: bool) -> None:
    """Make SQLAlchemy's transactions real transactions on pysqlite, on a journal that
    does not wait for the disk at every commit.

    The sqlite3 module opens a transaction only before DML and commits on its own before
    other statements, so schema changes would escape a rollback. SQLAlchemy's documented
    remedy: let the driver stay out of it, and emit BEGIN when SQLAlchemy begins — except
    on the store's connections, which begin with BEGIN IMMEDIATE themselves.
    A file is also put in write-ahead mode (`keel.state.sqlite_file.write_ahead`).
    """

    @event.listens_for(engine, "connect")
    def _no_driver_transactions(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        if not in_memory:
            write_ahead(dbapi_connection)

    event.listen(engine, "begin", begin_unless_store)


def _fix(url: URL) -> str:
    if url.get_backend_name() == "sqlite":
        return "check that the file's directory exists and is writable, or give another URL"
    return (
        "check that the server is running and that the URL's host, port, user, password "
        "and database name are right, or give another database URL"
    )
