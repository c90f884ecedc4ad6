"""What every store module shares: key columns, UTC times, upserts, and failures.

Key columns never hold NULL, so a primary key or unique index covers every row: a `None`
thread (the whole chat), bot (every bot) or entity is stored as '' and read back as None.
Entity keys, threads and bots are never empty, which keeps '' free for that meaning — an
empty one is refused rather than silently read back as None.

Times are timezone-aware UTC on the way in and on the way out. PostgreSQL keeps the zone
(`timestamptz`); SQLite keeps text without one, so the time is converted to UTC before it
is written and the zone is put back when it is read.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from sqlalchemy import BigInteger, DateTime, Dialect, Integer, Table, TypeDecorator
from sqlalchemy.exc import SQLAlchemyError
from sqlalchemy.sql.dml import Insert

if TYPE_CHECKING:
    from sqlalchemy.dialects import postgresql, sqlite


from keel.errors import StoreError
from keel.link.values import LINK_KINDS, Conversation, LinkKind

DIALECTS = ("sqlite", "postgresql")

# An execution option on the store's connections: the store begins their transaction
# itself (BEGIN IMMEDIATE on SQLite), so an engine's `begin` hook must leave it alone —
# a BEGIN sent there would only be committed empty before the real one.
STORE_BEGINS = "keel_store_begins"


def begin_unless_store(connection: Any) -> None:
    """A SQLite engine's `begin` hook (`keel.state.database`): SQLAlchemy's transaction
    becomes a real one (BEGIN), except on the store's connections, which begin their own."""
    if not connection.get_execution_options().get(STORE_BEGINS):
        connection.exec_driver_sql("BEGIN")


# A surrogate key that is a 64-bit integer on PostgreSQL and SQLite's own rowid alias.
BigId = BigInteger().with_variant(Integer, "sqlite")

_MISSING_TABLE = "42P01"  # PostgreSQL's undefined_table


class UTCDateTime(TypeDecorator[datetime]):
    """A timezone-aware UTC datetime on both dialects (SQLite stores it as UTC text)."""

    impl = DateTime(timezone=True)
    cache_ok = True

    def process_bind_param(self, value: datetime | None, dialect: Dialect) -> datetime | None:
        if value is None:
            return None
        value = utc(value, "a time")
        return value.replace(tzinfo=None) if dialect.name == "sqlite" else value

    def process_result_value(
        self,
        value: datetime | None,
        dialect: Dialect,  # noqa: ARG002 - SQLAlchemy's signature
    ) -> datetime | None:
        if value is None:
            return None
        if value.tzinfo is None:
            return value.replace(tzinfo=UTC)
        return value.astimezone(UTC)


def utc(value: datetime, what: str) -> datetime:
    """`value` in UTC; a naive datetime is refused, since its zone cannot be known."""
    if value.tzinfo is None or value.utcoffset() is None:
        raise StoreError(
            f"{what} has no time zone ({value.isoformat()}) — pass a timezone-aware time, "
            "e.g. datetime.now(UTC)"
        )
    return value.astimezone(UTC)


def key(value: str | None, what: str) -> str:
    """The stored form of an optional key: None becomes ''; '' itself is refused."""
    if value is None:
        return ""
    if value == "":
        raise StoreError(
            f"{what} is an empty string — pass None for none (the store keeps '' for None)"
        )
    return value


def unkey(value: str) -> str | None:
    """The value of a stored optional key: '' is None."""
    return value or None


def link_kind(value: str, where: str) -> LinkKind:
    """`value` as a link kind; anything else is refused, naming where it came from."""
    if value not in LINK_KINDS:
        raise StoreError(
            f"{where} has the link kind {value!r} — it must be one of {', '.join(LINK_KINDS)}"
        )
    return value


def upsert(
    dialect: str,
    table: Table,
    *,
    keys: Sequence[str],
    update: Sequence[str] = (),
    set_: Mapping[str, Any] | None = None,
) -> Insert:
    """INSERT ... ON CONFLICT (keys) DO UPDATE, written for this dialect.

    `update` names columns that take the new row's value; `set_` gives other expressions
    (where the table's own columns mean the row already stored).
    """
    stmt = dialect_insert(dialect, table)
    values: dict[str, Any] = {name: stmt.excluded[name] for name in update}
    values.update(set_ or {})
    return stmt.on_conflict_do_update(index_elements=list(keys), set_=values)


def dialect_insert(dialect: str, table: Table) -> sqlite.Insert | postgresql.Insert:
    """The dialect's own INSERT (with ON CONFLICT). Imported here, not at the top: a
    process on SQLite should not pay for loading PostgreSQL's dialect, nor the reverse."""
    if dialect == "postgresql":
        from sqlalchemy.dialects import postgresql

        return postgresql.insert(table)
    from sqlalchemy.dialects import sqlite

    return sqlite.insert(table)


def reason(exc: SQLAlchemyError) -> str:
    """The driver's own words, on one line."""
    orig = getattr(exc, "orig", None)
    text = str(orig) if orig is not None else str(exc)
    return " ".join(text.split()) or type(exc).__name__


def missing_table(exc: SQLAlchemyError) -> bool:
    """Whether the database said one of the tables does not exist."""
    orig = getattr(exc, "orig", None)
    if getattr(orig, "sqlstate", None) == _MISSING_TABLE:
        return True
    return "no such table" in str(orig if orig is not None else exc)


def fix(exc: SQLAlchemyError) -> str:
    """What to do about a failed statement."""
    if missing_table(exc):
        return "Keel's tables are missing: call Store.migrate() before using the store"
    return "check that the database is reachable and writable, then try again"


@contextmanager
def failing_as(what: str) -> Iterator[None]:
    """Turn a database failure inside the block into a StoreError that says what failed."""
    try:
        yield
    except SQLAlchemyError as exc:
        raise StoreError(f"cannot {what}: {reason(exc)} — {fix(exc)}") from exc


def conversation_key(conversation: Conversation) -> dict[str, str]:
    """The key columns of a conversation (bot, chat, thread) as stored."""
    return {
        "bot": conversation.bot,
        "chat": conversation.chat,
        "thread": key(conversation.thread, "the conversation's thread"),
    }
