"""The one database of a brain: state views and Keel's own tables behind one URL.

The embedded default is a SQLite file inside the brain, `.keel/keel.db`. A SQLite database
that Keel creates (that file, any SQLite file that does not exist yet, or an in-memory one)
gets the brain's `state/*.sql` applied once, at creation. Any other database is used as it
is — its schema belongs to whoever runs it, and `apply_sql` is how a brain's files reach it
on purpose.

PostgreSQL goes through psycopg 3, which SQLAlchemy imports only when such a URL is used, so
`import keel` never needs the driver.
"""

from __future__ import annotations

import re
import sqlite3
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

from sqlalchemy import Engine, create_engine, event
from sqlalchemy.engine import URL, make_url
from sqlalchemy.exc import ArgumentError, DBAPIError, NoSuchModuleError, SQLAlchemyError
from sqlalchemy.pool import StaticPool

from keel.brain.snapshot import Brain
from keel.brain.specs import SqlFile
from keel.errors import StoreError

DB_DIR = ".keel"
DB_FILE = "keel.db"

# A dump (`sqlite3 .dump`) wraps itself in BEGIN/COMMIT; inside Keel's own transaction those
# would either fail or end it early, so they are skipped.
_TX_CONTROL = re.compile(
    r"^(BEGIN(\s+(DEFERRED|IMMEDIATE|EXCLUSIVE))?|COMMIT|END)(\s+TRANSACTION)?\s*;?$",
    re.IGNORECASE,
)
_LEADING_COMMENTS = re.compile(r"^(\s*(--[^\n]*(\n|$)|/\*.*?\*/))*\s*", re.DOTALL)


def default_url(root: Path) -> str:
    """The embedded default database of the brain at `root`: `<root>/.keel/keel.db`."""
    return f"sqlite:///{(root / DB_DIR / DB_FILE).as_posix()}"


def shown(url: str | URL) -> str:
    """The URL as it may be printed: the password hidden."""
    try:
        parsed = make_url(url) if isinstance(url, str) else url
    except ArgumentError:
        return "<a URL that cannot be parsed>"
    return parsed.render_as_string(hide_password=True)


def connect(url: str, brain: Brain) -> Engine:
    """An engine on `url`, reachable now; a database Keel creates gets `state/*.sql` once."""
    parsed = _parse(url)
    where = shown(url)  # as the caller wrote it, not as rewritten for the driver
    created = _sqlite_to_create(parsed)
    if isinstance(created, Path):
        try:
            created.parent.mkdir(parents=True, exist_ok=True)
        except OSError as exc:
            raise StoreError(
                f"cannot create the directory for {where}: {exc.strerror} — check that "
                f"{created.parent} is writable, or give another database URL"
            ) from None
    engine = _engine(parsed, where)
    try:
        with engine.connect():
            pass
    except SQLAlchemyError as exc:
        engine.dispose()
        raise StoreError(
            f"cannot reach the database {where}: {_reason(exc)} — {_fix(parsed)}"
        ) from None
    if created is not None:
        try:
            apply_sql(engine, brain.state_sql)
        except StoreError:
            engine.dispose()
            if isinstance(created, Path):
                # Keel made this file: leave nothing behind, so the next connect applies again.
                created.unlink(missing_ok=True)
            raise
    return engine


def creates(url: str) -> bool:
    """Whether `connect(url, ...)` would create the database (and so apply state/*.sql)."""
    return _sqlite_to_create(_parse(url)) is not None


def apply_sql(engine: Engine, files: Iterable[SqlFile]) -> None:
    """Run SQL files in order, all in one transaction: a failure names the file and undoes all."""
    todo = tuple(files)
    if not todo:
        return
    if engine.dialect.name == "sqlite":
        _apply_sqlite(engine, todo)
    else:
        _apply_server(engine, todo)


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


def _sqlite_to_create(url: URL) -> Path | bool | None:
    """The SQLite file Keel is about to create, True for an in-memory one, else None."""
    if url.get_backend_name() != "sqlite":
        return None
    database = url.database or ""
    if database in ("", ":memory:") or url.query.get("mode") == "memory":
        return True
    if database.startswith("file:"):
        return None
    path = Path(database)
    return None if path.exists() else path


def _engine(url: URL, where: str) -> Engine:
    options: dict[str, Any] = {}
    if _sqlite_to_create(url) is True:
        # One connection for every thread: a second one would open a second, empty database.
        options = {"poolclass": StaticPool, "connect_args": {"check_same_thread": False}}
    try:
        engine = create_engine(url, **options)
    except (NoSuchModuleError, ImportError) as exc:
        hint = (
            "install the PostgreSQL driver: pip install 'keel[postgres]'"
            if url.get_backend_name() == "postgresql"
            else "use a sqlite:// or postgresql:// URL"
        )
        raise StoreError(f"cannot use the database {where}: {exc} — {hint}") from None
    except ArgumentError as exc:
        raise StoreError(f"cannot use the database {where}: {exc} — fix the URL") from None
    if engine.dialect.name == "sqlite":
        _real_sqlite_transactions(engine)
    return engine


def _real_sqlite_transactions(engine: Engine) -> None:
    """Make SQLAlchemy's transactions real transactions on pysqlite.

    The sqlite3 module opens a transaction only before DML and commits on its own before
    other statements, so schema changes would escape a rollback. SQLAlchemy's documented
    remedy: let the driver stay out of it, and emit BEGIN when SQLAlchemy begins.
    """

    @event.listens_for(engine, "connect")
    def _no_driver_transactions(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None

    @event.listens_for(engine, "begin")
    def _begin(connection: Any) -> None:
        connection.exec_driver_sql("BEGIN")


def _apply_sqlite(engine: Engine, files: tuple[SqlFile, ...]) -> None:
    # executescript() commits before it runs, so it cannot hold several files in one
    # transaction; the files are split into statements and run one by one instead.
    raw = engine.raw_connection()
    try:
        driver: sqlite3.Connection = raw.driver_connection  # type: ignore[assignment]
        saved = driver.isolation_level
        driver.isolation_level = None
        try:
            _run_sqlite(driver, files)
        finally:
            driver.isolation_level = saved
    finally:
        raw.close()


def _run_sqlite(driver: sqlite3.Connection, files: tuple[SqlFile, ...]) -> None:
    cursor = driver.cursor()
    cursor.execute("BEGIN")
    try:
        for file in files:
            for line, statement in statements(file.text):
                try:
                    cursor.execute(statement)
                except sqlite3.Error as exc:
                    raise StoreError(_refused(file, line, str(exc), files)) from None
    except BaseException:
        if driver.in_transaction:
            cursor.execute("ROLLBACK")
        raise
    cursor.execute("COMMIT")


def _apply_server(engine: Engine, files: tuple[SqlFile, ...]) -> None:
    # psycopg 3 runs a whole multi-statement text when no parameters are passed.
    try:
        with engine.begin() as conn:
            for file in files:
                try:
                    conn.exec_driver_sql(file.text)
                except DBAPIError as exc:
                    line = _error_line(exc, file.text)
                    raise StoreError(_refused(file, line, _reason(exc), files)) from None
    except SQLAlchemyError as exc:
        raise StoreError(
            f"cannot apply the state files to {shown(engine.url)}: {_reason(exc)} — "
            "check the connection and apply again"
        ) from None


def statements(text: str) -> Iterator[tuple[int, str]]:
    """Each complete SQL statement of a script, with the line it starts on.

    SQLite says when a statement is complete (a `;` inside a string or a trigger body is
    not the end); transaction control and comment-only tails are left out.
    """
    start = 0
    for index, char in enumerate(text):
        if char != ";":
            continue
        chunk = text[start : index + 1]
        if not sqlite3.complete_statement(chunk):
            continue
        yield from _statement(text, start, chunk)
        start = index + 1
    yield from _statement(text, start, text[start:])


def _statement(text: str, start: int, chunk: str) -> Iterator[tuple[int, str]]:
    lead = _LEADING_COMMENTS.match(chunk)
    skip = lead.end() if lead else 0
    body = chunk[skip:].strip()
    if not body or _TX_CONTROL.match(body):
        return
    yield text.count("\n", 0, start + skip) + 1, chunk


def _refused(file: SqlFile, line: int | None, reason: str, files: tuple[SqlFile, ...]) -> str:
    where = f"{file.path}:{line}" if line is not None else file.path
    undone = "nothing was applied" if len(files) == 1 else "none of the state files was applied"
    return (
        f"{where}: the database refused this SQL: {reason} — fix the statement and apply "
        f"again ({undone}: the transaction was rolled back)"
    )


def _error_line(exc: DBAPIError, text: str) -> int | None:
    """The line of a PostgreSQL error, from the position the server reports, if any."""
    diag = getattr(exc.orig, "diag", None)
    position = getattr(diag, "statement_position", None)
    if position is None or not str(position).isdigit():
        return None
    return text.count("\n", 0, int(position) - 1) + 1


def _reason(exc: SQLAlchemyError) -> str:
    """The driver's own words, on one line."""
    orig = getattr(exc, "orig", None)
    text = str(orig) if orig is not None else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def _fix(url: URL) -> str:
    if url.get_backend_name() == "sqlite":
        return "check that the file's directory exists and is writable, or give another URL"
    return (
        "check that the server is running and that the URL's host, port, user, password "
        "and database name are right, or give another database URL"
    )
