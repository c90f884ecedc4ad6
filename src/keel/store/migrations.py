"""Ordered, named migrations of Keel's tables, each recorded in `keel_migrations`.

A migration is a function of one connection; `apply` runs the ones a database has not
recorded yet, in order, inside the caller's transaction — so a failing migration leaves
nothing behind, on PostgreSQL's transactional DDL and on SQLite alike. Workers that start
together may all migrate: PostgreSQL serialises them on an advisory lock (per schema),
SQLite on the write lock the store's transactions take first.

A migration's tables are written out here as they were when it was made, never imported
from `keel.store.schema`: the next migration changes the schema, not this one's history.
Append new migrations; never rename, reorder or edit one that has shipped.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from datetime import datetime

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    Connection,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
    select,
    text,
)

from keel.errors import StoreError
from keel.store import schema
from keel.store.sql import BigId, UTCDateTime

Migration = Callable[[Connection], None]

# The second key of the advisory lock migrations take on PostgreSQL; the first is the schema.
_LOCK = 0x6B65656C  # "keel"


def _keel_tables(conn: Connection) -> None:
    """Turn counters, message origins and their reach, chat bindings, kept links, ledger."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_turns",
        m,
        Column("bot", String, primary_key=True),
        Column("chat", String, primary_key=True),
        Column("thread", String, primary_key=True),
        Column("turn", BigInteger, nullable=False),
    )
    Table(
        "keel_origins",
        m,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("message_id", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("feature", String, nullable=True),
        Column("run", String, nullable=True),
        Column("sent_at", UTCDateTime, nullable=False),
        Column("pending_card", Boolean, nullable=False),
        Index(None, "bot", "chat", "message_id", unique=True),
        Index(None, "sent_at"),
    )
    Table(
        "keel_origin_reach",
        m,
        Column(
            "origin_id",
            BigId,
            ForeignKey("keel_origins.id", ondelete="CASCADE"),
            primary_key=True,
        ),
        Column("position", Integer, primary_key=True),
        Column("context", String, nullable=False),
        Column("entity", String, nullable=False),
    )
    Table(
        "keel_bindings",
        m,
        Column("chat", String, primary_key=True),
        Column("thread", String, primary_key=True),
        Column("bot", String, primary_key=True),
        Column("context", String, primary_key=True),
        Column("entity", String, nullable=False),
    )
    Table(
        "keel_kept",
        m,
        Column("bot", String, primary_key=True),
        Column("chat", String, primary_key=True),
        Column("thread", String, primary_key=True),
        Column("context", String, primary_key=True),
        Column("entity", String, primary_key=True),
        Column("kind", String, nullable=False),
        Column("feature", String, nullable=False),
        Column("until_turn", BigInteger, nullable=False),
    )
    Table(
        "keel_ledger",
        m,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("turn", BigInteger, nullable=False),
        Column("role", String, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Column("context", String, nullable=False),
        Column("feature", String, nullable=False),
        Column("entity", String, nullable=False),
        Column("link", String, nullable=False),
        Column("chars", BigInteger, nullable=False),
        Column("knob", String, nullable=True),
        Index(None, "at"),
        Index(None, "role", "at"),
        Index(None, "bot", "chat", "at"),
    )
    # No checkfirst: a keel_ table that exists without its migration recorded is a database
    # Keel did not build, and should fail loudly rather than be adopted half-matching.
    m.create_all(conn, checkfirst=False)


def _keel_messages(conn: Connection) -> None:
    """The history log: one row per message of a conversation, by turn."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_messages",
        m,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("turn", BigInteger, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Column("speaker", String, nullable=False),
        Column("text", Text, nullable=False),
        Column("message_id", String, nullable=True),
        Index(None, "bot", "chat", "thread", "turn", "id"),
    )
    m.create_all(conn, checkfirst=False)


def _keel_sessions(conn: Connection) -> None:
    """What each CLI-agent session was last sent, per context and entity (as hashes)."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_sessions",
        m,
        Column("session", String, primary_key=True),
        Column("context", String, primary_key=True),
        Column("entity", String, primary_key=True),
        Column("instructions", String, nullable=False),
        Column("instructions_sent", Boolean, nullable=False),
        Column("views", Text, nullable=False),
    )
    m.create_all(conn, checkfirst=False)


def _keel_state_files(conn: Connection) -> None:
    """The brain's `state/*.sql` files the database has applied, by path and content hash."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_state_files",
        m,
        Column("path", String, primary_key=True),
        Column("sha256", String, nullable=False),
        Column("applied_at", UTCDateTime, nullable=False),
    )
    m.create_all(conn, checkfirst=False)


def _keel_turn_journal(conn: Connection) -> None:
    """The turn journal: one row per prepared turn, what it decided and what replays it."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_turn_journal",
        m,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("turn", BigInteger, nullable=False),
        Column("role", String, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Column("data", Text, nullable=False),
        Column("replay", Text, nullable=False),
        Index(None, "bot", "chat", "thread", "turn"),
        Index(None, "chat", "at"),
        Index(None, "role", "at"),
        Index(None, "at"),
    )
    m.create_all(conn, checkfirst=False)


def _keel_runs(conn: Connection) -> None:
    """Runs and their steps, approval cards, provider usage, and the live executors."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_runs",
        m,
        Column("id", String, primary_key=True),
        Column("kind", String, nullable=False),
        Column("entity_id", String, nullable=False),
        Column("entity", String, nullable=False),
        Column("status", String, nullable=False),
        Column("role", String, nullable=False),
        Column("reach", Text, nullable=False),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("pin", String, nullable=False),
        Column("model", String, nullable=False),
        Column("executor", String, nullable=False),
        Column("error", Text, nullable=True),
        Column("order", Text, nullable=False),
        Column("created_at", UTCDateTime, nullable=False),
        Column("updated_at", UTCDateTime, nullable=False),
        Index(None, "created_at"),
        Index(None, "status", "created_at"),
    )
    Table(
        "keel_run_steps",
        m,
        Column("run_id", String, primary_key=True),
        Column("seq", Integer, primary_key=True),
        Column("name", String, nullable=False),
        Column("status", String, nullable=False),
        Column("started_at", UTCDateTime, nullable=False),
        Column("finished_at", UTCDateTime, nullable=True),
        Column("turn_id", BigInteger, nullable=True),
        Column("detail", Text, nullable=False),
        Column("output", Text, nullable=True),
    )
    Table(
        "keel_cards",
        m,
        Column("id", String, primary_key=True),
        Column("run_id", String, nullable=False),
        Column("tool", String, nullable=False),
        Column("arguments", Text, nullable=False),
        Column("risk", String, nullable=False),
        Column("capability", String, nullable=False),
        Column("summary", Text, nullable=False),
        Column("bot", String, nullable=False),
        Column("chat", String, nullable=False),
        Column("thread", String, nullable=False),
        Column("message_id", String, nullable=False),
        Column("status", String, nullable=False),
        Column("asked_at", UTCDateTime, nullable=False),
        Column("timeout_at", UTCDateTime, nullable=False),
        Column("decided_at", UTCDateTime, nullable=True),
        Column("decided_by", String, nullable=True),
        Column("note", Text, nullable=True),
        Index(None, "run_id"),
        Index(None, "status", "asked_at"),
        Index(None, "bot", "chat", "message_id"),
    )
    Table(
        "keel_usage",
        m,
        Column("id", BigId, primary_key=True, autoincrement=True),
        Column("run_id", String, nullable=False),
        Column("step", String, nullable=False),
        Column("turn_id", BigInteger, nullable=True),
        Column("model", String, nullable=False),
        Column("input_tokens", BigInteger, nullable=False),
        Column("cached_tokens", BigInteger, nullable=False),
        Column("output_tokens", BigInteger, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Index(None, "run_id", "step", unique=True),
        Index(None, "at"),
    )
    Table(
        "keel_executors",
        m,
        Column("id", String, primary_key=True),
        Column("host", String, nullable=False),
        Column("pid", Integer, nullable=False),
        Column("started_at", UTCDateTime, nullable=False),
        Column("seen_at", UTCDateTime, nullable=False),
    )
    m.create_all(conn, checkfirst=False)


def _keel_seeds(conn: Connection) -> None:
    """The record of the seed `keel serve` played. A database a server seeded before this
    migration has the table already (the server made it then): it is kept as it is."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_seeds",
        m,
        Column("name", String, primary_key=True),
        Column("digest", String, nullable=False),
        Column("played", Integer, nullable=False),
        Column("note", String, nullable=False),
        Column("at", UTCDateTime, nullable=False),
    )
    m.create_all(conn, checkfirst=True)


def _keel_people(conn: Connection) -> None:
    """Who spoke in a turn: a nullable `sender` on the turn journal (turns before it, and
    runs, have none); and on a card, the decisions refused because of who made them."""
    # ADD COLUMN of a nullable column is the same statement on SQLite and PostgreSQL, and
    # neither rewrites the table for it.
    conn.execute(text("ALTER TABLE keel_turn_journal ADD COLUMN sender VARCHAR"))
    conn.execute(text("ALTER TABLE keel_cards ADD COLUMN refused TEXT"))


def _keel_delivery(conn: Connection) -> None:
    """Delivery on a chat surface: each message's state and the surface's own id beside
    Keel's, on the history log's rows; and every surface update handled, once."""
    m = MetaData(naming_convention=schema.NAMING)
    postgres = conn.dialect.name == "postgresql"
    # The history log already holds every message Keel sends (answers, run posts, cards):
    # delivery is a fact about those rows, so it is added to them rather than copied out.
    added = (
        ("delivery", "VARCHAR"),
        ("delivery_reason", "TEXT"),
        ("attempts", "INTEGER NOT NULL DEFAULT 0"),
        ("surface_message_id", "VARCHAR"),
        ("surface_reply_to", "VARCHAR"),
        ("surface_connection", "VARCHAR"),
        ("delivery_lease", "TIMESTAMP WITH TIME ZONE" if postgres else "DATETIME"),
    )
    for name, kind in added:
        conn.execute(text(f"ALTER TABLE keel_messages ADD COLUMN {name} {kind}"))
    messages = Table(
        "keel_messages",
        m,
        Column("id", BigId, primary_key=True),
        Column("bot", String),
        Column("chat", String),
        Column("delivery", String),
        Column("surface_message_id", String),
    )
    Index(None, messages.c.bot, messages.c.chat, messages.c.surface_message_id).create(conn)
    Index(None, messages.c.delivery, messages.c.bot, messages.c.id).create(conn)
    Table(
        "keel_updates",
        m,
        Column("bot", String, primary_key=True),
        Column("update_id", BigInteger, primary_key=True),
        Column("at", UTCDateTime, nullable=False),
        Column("turn_id", BigInteger, nullable=True),
    ).create(conn, checkfirst=False)


def _keel_topics(conn: Connection) -> None:
    """Forum topics opened by runs: Keel's thread id, and the surface's once opened."""
    m = MetaData(naming_convention=schema.NAMING)
    Table(
        "keel_topics",
        m,
        Column("bot", String, primary_key=True),
        Column("chat", String, primary_key=True),
        Column("thread", String, primary_key=True),
        Column("title", Text, nullable=False),
        Column("at", UTCDateTime, nullable=False),
        Column("state", String, nullable=False),
        Column("reason", Text, nullable=True),
        Column("attempts", Integer, nullable=False, server_default="0"),
        Column("surface_thread_id", String, nullable=True),
        Column("lease", UTCDateTime, nullable=True),
        Index(None, "bot", "chat", "surface_thread_id"),
        Index(None, "state", "bot"),
    ).create(conn, checkfirst=False)


def _keel_attachments(conn: Connection) -> None:
    """A file sent with a message: its kind and its path in the brain's files/ folder."""
    conn.execute(text("ALTER TABLE keel_messages ADD COLUMN attachment VARCHAR"))
    conn.execute(text("ALTER TABLE keel_messages ADD COLUMN attachment_path VARCHAR"))


def _keel_widgets(conn: Connection) -> None:
    """Widgets: an origin names the context whose lines its message shows (indexed: the
    live widgets are read on every delivery pass), and a message records when Keel last
    edited its text."""
    postgres = conn.dialect.name == "postgresql"
    conn.execute(text("ALTER TABLE keel_origins ADD COLUMN widget VARCHAR"))
    moment = "TIMESTAMP WITH TIME ZONE" if postgres else "DATETIME"
    conn.execute(text(f"ALTER TABLE keel_messages ADD COLUMN edited_at {moment}"))
    m = MetaData(naming_convention=schema.NAMING)
    origins = Table(
        "keel_origins", m, Column("id", BigId, primary_key=True), Column("widget", String)
    )
    Index(None, origins.c.widget).create(conn)


def _keel_replaced_widgets(conn: Connection) -> None:
    """A widget's message records when a later one replaced it, so history can say so."""
    moment = "TIMESTAMP WITH TIME ZONE" if conn.dialect.name == "postgresql" else "DATETIME"
    conn.execute(text(f"ALTER TABLE keel_messages ADD COLUMN replaced_at {moment}"))


MIGRATIONS: tuple[tuple[str, Migration], ...] = (
    ("0001_keel_tables", _keel_tables),
    ("0002_keel_messages", _keel_messages),
    ("0003_keel_sessions", _keel_sessions),
    ("0004_keel_state_files", _keel_state_files),
    ("0005_keel_turn_journal", _keel_turn_journal),
    ("0006_keel_runs", _keel_runs),
    ("0007_keel_seeds", _keel_seeds),
    ("0008_keel_people", _keel_people),
    ("0009_keel_delivery", _keel_delivery),
    ("0010_keel_topics", _keel_topics),
    ("0011_keel_attachments", _keel_attachments),
    ("0012_keel_widgets", _keel_widgets),
    ("0013_keel_replaced_widgets", _keel_replaced_widgets),
)


def applied(conn: Connection) -> tuple[str, ...]:
    """The migrations a database has recorded, in the order they were applied."""
    if not conn.dialect.has_table(conn, schema.migrations.name):
        return ()
    rows = conn.execute(
        select(schema.migrations.c.name).order_by(
            schema.migrations.c.applied_at, schema.migrations.c.name
        )
    )
    return tuple(rows.scalars())


def apply(
    conn: Connection, migrations: Sequence[tuple[str, Migration]], now: datetime
) -> tuple[str, ...]:
    """Run the migrations `conn`'s database lacks, in order; return the names it ran."""
    names = [name for name, _ in migrations]
    doubled = sorted({name for name in names if names.count(name) > 1})
    if doubled:
        raise StoreError(
            f"migration names must be unique, but {', '.join(doubled)} appear twice — "
            "give each migration its own name"
        )
    _lock(conn)
    schema.migrations.create(conn, checkfirst=True)
    done = set(applied(conn))
    unknown = sorted(done - set(names))
    if unknown:
        raise StoreError(
            f"the database has migrations this Keel does not know ({', '.join(unknown)}) — "
            "it was migrated by a newer Keel: upgrade Keel, or use another database"
        )
    ran: list[str] = []
    for name, migration in migrations:
        if name in done:
            continue
        migration(conn)
        conn.execute(schema.migrations.insert().values(name=name, applied_at=now))
        ran.append(name)
    return tuple(ran)


def _lock(conn: Connection) -> None:
    if conn.dialect.name != "postgresql":
        return
    # Held to the end of the transaction; keyed by schema so separate schemas (one per
    # test, or per brain) do not wait for each other.
    conn.execute(
        text("SELECT pg_advisory_xact_lock(hashtext(coalesce(current_schema(), '')), :lock)"),
        {"lock": _LOCK},
    )
