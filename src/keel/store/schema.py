"""Keel's own tables, as the queries see them (every name starts with `keel_`).

This is the shape the migrations build; a test migrates an empty database and compares it
with these definitions, so the two cannot drift apart. Key columns are NOT NULL and hold ''
for None (see `keel.store.sql`).
"""

from __future__ import annotations

from sqlalchemy import (
    BigInteger,
    Boolean,
    Column,
    ForeignKey,
    Index,
    Integer,
    MetaData,
    String,
    Table,
    Text,
)

from keel.store.sql import BigId, UTCDateTime

# Named constraints and indexes, so both dialects and every migration agree on the names.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s",
    "pk": "pk_%(table_name)s",
}

metadata = MetaData(naming_convention=NAMING)

migrations = Table(
    "keel_migrations",
    metadata,
    Column("name", String, primary_key=True),
    Column("applied_at", UTCDateTime, nullable=False),
)

turns = Table(
    "keel_turns",
    metadata,
    Column("bot", String, primary_key=True),
    Column("chat", String, primary_key=True),
    Column("thread", String, primary_key=True),
    Column("turn", BigInteger, nullable=False),
)

origins = Table(
    "keel_origins",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("bot", String, nullable=False),
    Column("chat", String, nullable=False),
    Column("message_id", String, nullable=False),
    Column("thread", String, nullable=False),
    Column("feature", String, nullable=True),
    Column("run", String, nullable=True),
    Column("sent_at", UTCDateTime, nullable=False),
    Column("pending_card", Boolean, nullable=False),
    # The context whose lines the message shows (a widget, kept at any age and edited as
    # its lines change); None for every other message. Added by 0012.
    Column("widget", String, nullable=True),
    Index(None, "bot", "chat", "message_id", unique=True),
    Index(None, "sent_at"),
    Index(None, "widget"),
)

origin_reach = Table(
    "keel_origin_reach",
    metadata,
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

bindings = Table(
    "keel_bindings",
    metadata,
    Column("chat", String, primary_key=True),
    Column("thread", String, primary_key=True),
    Column("bot", String, primary_key=True),
    Column("context", String, primary_key=True),
    Column("entity", String, nullable=False),
)

kept = Table(
    "keel_kept",
    metadata,
    Column("bot", String, primary_key=True),
    Column("chat", String, primary_key=True),
    Column("thread", String, primary_key=True),
    Column("context", String, primary_key=True),
    Column("entity", String, primary_key=True),
    Column("kind", String, nullable=False),
    Column("feature", String, nullable=False),
    Column("until_turn", BigInteger, nullable=False),
)

ledger = Table(
    "keel_ledger",
    metadata,
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

messages = Table(
    "keel_messages",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("bot", String, nullable=False),
    Column("chat", String, nullable=False),
    Column("thread", String, nullable=False),
    Column("turn", BigInteger, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("speaker", String, nullable=False),
    Column("text", Text, nullable=False),
    Column("message_id", String, nullable=True),
    # Delivery on a chat surface (an assistant's message recorded since 0009 starts
    # 'pending'; None: a person's message, or one recorded before): 'pending',
    # 'delivered' or 'failed' with the reason; the surface's id for the message once
    # delivered, the surface's id of the message it answers natively, and the surface's
    # connection to send through (a Telegram Business connection).
    Column("delivery", String, nullable=True),
    Column("delivery_reason", Text, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("surface_message_id", String, nullable=True),
    Column("surface_reply_to", String, nullable=True),
    Column("surface_connection", String, nullable=True),
    # Until when one process has the message to send: no other sends it meanwhile.
    Column("delivery_lease", UTCDateTime, nullable=True),
    # A file sent with the message (since 0011): its kind ('document', 'voice') and its
    # path inside the brain's files/ folder; the message's text is its caption.
    Column("attachment", String, nullable=True),
    Column("attachment_path", String, nullable=True),
    # When Keel last changed the text of a message already recorded (a widget's lines);
    # a delivered message edited goes back to 'pending', and the surface edits it in place.
    Column("edited_at", UTCDateTime, nullable=True),
    # When a later message of the same widget retired this one (since 0013): history then
    # shows that the list was replaced, not its old numbered lines.
    Column("replaced_at", UTCDateTime, nullable=True),
    # History reads one conversation's turns before a given one, newest first.
    Index(None, "bot", "chat", "thread", "turn", "id"),
    # A native reply names the surface's id of the message it answers.
    Index(None, "bot", "chat", "surface_message_id"),
    # The outbox: a bot's pending messages, oldest first.
    Index(None, "delivery", "bot", "id"),
)

# Surface updates handled (a Telegram update_id per bot), each recorded in the transaction
# of the turn it became, so an update delivered twice is answered once.
updates = Table(
    "keel_updates",
    metadata,
    Column("bot", String, primary_key=True),
    Column("update_id", BigInteger, primary_key=True),
    Column("at", UTCDateTime, nullable=False),
    Column("turn_id", BigInteger, nullable=True),
)

# Forum topics a run opened: recorded under a Keel thread id in the step's transaction,
# opened on the surface (Telegram's createForumTopic) by its adapter before anything is
# delivered to that thread, which then names the surface's own thread id beside Keel's.
topics = Table(
    "keel_topics",
    metadata,
    Column("bot", String, primary_key=True),
    Column("chat", String, primary_key=True),
    Column("thread", String, primary_key=True),
    Column("title", Text, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    # 'pending' until the surface opened it ('opened') or refused it for good ('failed').
    Column("state", String, nullable=False),
    Column("reason", Text, nullable=True),
    Column("attempts", Integer, nullable=False, server_default="0"),
    Column("surface_thread_id", String, nullable=True),
    Column("lease", UTCDateTime, nullable=True),
    # An incoming message names the surface's thread id: Keel's is found by it.
    Index(None, "bot", "chat", "surface_thread_id"),
    Index(None, "state", "bot"),
)

sessions = Table(
    "keel_sessions",
    metadata,
    Column("session", String, primary_key=True),
    Column("context", String, primary_key=True),
    Column("entity", String, primary_key=True),
    Column("instructions", String, nullable=False),
    Column("instructions_sent", Boolean, nullable=False),
    Column("views", Text, nullable=False),
)

# Which `state/*.sql` files a database has applied: `keel state apply` runs a file once, and
# a file whose text changed since is reported rather than run again.
state_files = Table(
    "keel_state_files",
    metadata,
    Column("path", String, primary_key=True),
    Column("sha256", String, nullable=False),
    Column("applied_at", UTCDateTime, nullable=False),
)

# One row per prepared turn. The indexed columns find turns (by conversation and number, by
# chat or role over a window); `data` holds what the turn decided, as JSON, and `replay`
# what a re-fit of the same turn needs without reading views again (keel.store.journal_json)
# — two columns, so a report over many turns reads only the small one.
turn_journal = Table(
    "keel_turn_journal",
    metadata,
    Column("id", BigId, primary_key=True, autoincrement=True),
    Column("bot", String, nullable=False),
    Column("chat", String, nullable=False),
    Column("thread", String, nullable=False),
    Column("turn", BigInteger, nullable=False),
    Column("role", String, nullable=False),
    Column("at", UTCDateTime, nullable=False),
    Column("data", Text, nullable=False),
    Column("replay", Text, nullable=False),
    # Who spoke (`TurnRequest.sender`); None for runs and callers that cannot say.
    Column("sender", String, nullable=True),
    # A conversation's turns, newest first (`keel turns`, `/context`).
    Index(None, "bot", "chat", "thread", "turn"),
    # A chat's turns whatever the bot or thread; a role's over a window.
    Index(None, "chat", "at"),
    Index(None, "role", "at"),
    Index(None, "at"),
)

# One row per run of a heartbeat, hook or scenario; its id is the durable workflow's id.
# `reach` and `order` are JSON: the reach decided at the start, and what was asked.
runs = Table(
    "keel_runs",
    metadata,
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

# A run's steps in order. A step with an effect on Keel's tables (a preparation, a tool
# call, a send, a card) writes its row in the effect's own transaction, so a step that
# ran is never run again, even when the process died before the workflow noted it.
run_steps = Table(
    "keel_run_steps",
    metadata,
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

# Approval cards: a tool call waiting for a person, and the message that asked.
cards = Table(
    "keel_cards",
    metadata,
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
    # Decisions refused for who made them, as JSON [{by, at, reason}]; None: none yet.
    Column("refused", Text, nullable=True),
    Index(None, "run_id"),
    Index(None, "status", "asked_at"),
    Index(None, "bot", "chat", "message_id"),
)

# What the provider reported each model request cost, beside the ledger: by run step, or
# for a turn outside a run by its journal id ('' run).
usage = Table(
    "keel_usage",
    metadata,
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

# The processes that run workflows, so a live one can finish the runs of one that died.
executors = Table(
    "keel_executors",
    metadata,
    Column("id", String, primary_key=True),
    Column("host", String, nullable=False),
    Column("pid", Integer, nullable=False),
    Column("started_at", UTCDateTime, nullable=False),
    Column("seen_at", UTCDateTime, nullable=False),
)

# The seed `keel serve` plays into a new database, once: one row per seed file.
seeds = Table(
    "keel_seeds",
    metadata,
    Column("name", String, primary_key=True),
    Column("digest", String, nullable=False),
    Column("played", Integer, nullable=False),
    Column("note", String, nullable=False),
    Column("at", UTCDateTime, nullable=False),
)
