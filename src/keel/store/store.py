"""`Store`: Keel's own tables in the brain's one database, on SQLite or PostgreSQL.

The caller owns the engine (the same one the state views are read through); the store only
borrows connections from it. Every write of a turn goes through one `transaction()`, which
commits when its block ends and rolls back — leaving nothing — when anything escapes it.

On SQLite a transaction takes the database's write lock when it begins (BEGIN IMMEDIATE):
a turn reads, then writes, and two deferred transactions that both read cannot both be
upgraded — one would fail at once instead of waiting. Taking the lock up front makes
writers queue on the driver's busy timeout. PostgreSQL needs no such care: its upserts
serialise on the rows they touch.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from keel.errors import StoreError
from keel.store import migrations as _migrations
from keel.store.hot import on_driver
from keel.store.sql import DIALECTS, STORE_BEGINS, failing_as, reason
from keel.store.tx import Tx


def _now() -> datetime:
    return datetime.now(UTC)


class Store:
    """Keel's tables (`keel_*`) behind a SQLAlchemy engine; see `transaction()`."""

    __slots__ = ("_clock", "_connections", "_engine", "_migrations", "_where")

    def __init__(
        self,
        engine: Engine,
        *,
        clock: Callable[[], datetime] = _now,
        migrations: Sequence[tuple[str, _migrations.Migration]] = _migrations.MIGRATIONS,
    ) -> None:
        """Borrow connections from `engine`.

        `clock` stamps the migrations applied; `migrations` is the list `migrate()` applies
        — Keel's own, unless a test or a tool passes another.
        """
        if engine.dialect.name not in DIALECTS:
            raise StoreError(
                f"Keel's store cannot use a {engine.dialect.name} database — "
                "give a sqlite:// or postgresql:// URL"
            )
        self._engine = engine
        # The same pool and hooks; its connections tell a `begin` hook the store begins.
        self._connections = engine.execution_options(**{STORE_BEGINS: True})
        self._clock = clock
        self._migrations = tuple(migrations)
        self._where = engine.url.render_as_string(hide_password=True)

    @property
    def engine(self) -> Engine:
        return self._engine

    def migrate(self) -> tuple[str, ...]:
        """Apply the migrations the database lacks, in one transaction; return their names.

        Idempotent, and safe when several processes migrate one database at once.
        """
        with (
            self._begin(f"migrate Keel's tables in {self._where}") as conn,
            failing_as(f"migrate Keel's tables in {self._where} (nothing was applied)"),
        ):
            return _migrations.apply(conn, self._migrations, self._clock())

    def applied(self) -> tuple[str, ...]:
        """The names of the migrations the database has recorded."""
        what = f"read Keel's migrations in {self._where}"
        with self._begin(what) as conn, failing_as(what):
            return _migrations.applied(conn)

    @contextmanager
    def transaction(self) -> Iterator[Tx]:
        """A `Tx` on one connection: committed if the block ends, rolled back if it raises."""
        with self._begin(f"open a transaction on {self._where}") as conn:
            tx = Tx(conn)
            try:
                yield tx
            finally:
                tx.close()

    @contextmanager
    def reading(self) -> Iterator[Tx]:
        """A `Tx` for reads alone, rolled back at its end. On SQLite it takes no write lock,
        so no writer waits for it (and it waits for none)."""
        with self._begin(f"read from {self._where}", write=False) as conn:
            tx = Tx(conn)
            try:
                yield tx
            finally:
                tx.close()

    @contextmanager
    def _begin(self, what: str, *, write: bool = True) -> Iterator[Connection]:
        try:
            conn = self._connections.connect()
        except SQLAlchemyError as exc:
            raise StoreError(
                f"cannot {what}: {reason(exc)} — check that the database server is running "
                "and the URL is right (a SQLite file's directory must exist and be writable)"
            ) from exc
        with conn:
            with failing_as(what):
                trans = conn.begin()
                if conn.dialect.name == "sqlite":
                    (_take_write_lock if write else _begin_reading)(conn)
            try:
                yield conn
            except BaseException:
                _rollback(conn)
                raise
            if not write:
                _rollback(conn)
                return
            with failing_as(f"commit the transaction on {self._where} (nothing was written)"):
                trans.commit()


def _take_write_lock(conn: Connection) -> None:
    driver = conn.connection.driver_connection
    if getattr(driver, "in_transaction", False):
        # A `begin` hook that ignores STORE_BEGINS began a deferred transaction: nothing
        # has run in it yet, so end it and begin again.
        conn.exec_driver_sql("COMMIT")
    on_driver(conn, "BEGIN IMMEDIATE")  # as the turn's hot statements run


def _begin_reading(conn: Connection) -> None:
    # A deferred transaction: one snapshot for every read, no write lock, rolled back.
    if not getattr(conn.connection.driver_connection, "in_transaction", False):
        on_driver(conn, "BEGIN")


def _rollback(conn: Connection) -> None:
    try:
        conn.rollback()
    except SQLAlchemyError:
        # The error already on its way out says more; a connection that cannot roll back
        # is invalidated and discarded when it closes.
        conn.invalidate()
