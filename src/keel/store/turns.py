"""Turn numbers: one counter per conversation (bot + chat + thread), starting at 1.

`next_turn` is one upsert that returns the new number, so concurrent workers on
PostgreSQL get distinct numbers: the second waits on the row the first updated, then
counts from the value the first committed.
"""

from __future__ import annotations

from sqlalchemy import Connection, select

from keel.link.values import Conversation
from keel.store import schema
from keel.store.sql import conversation_key, upsert

_TABLE = schema.turns


def next_turn(conn: Connection, conversation: Conversation) -> int:
    """Count one more turn of the conversation and return its number (1 for the first)."""
    stmt = upsert(
        conn.dialect.name,
        _TABLE,
        keys=("bot", "chat", "thread"),
        set_={"turn": _TABLE.c.turn + 1},
    ).returning(_TABLE.c.turn)
    number = conn.execute(stmt, {**conversation_key(conversation), "turn": 1}).scalar_one()
    return int(number)


def current_turn(conn: Connection, conversation: Conversation) -> int:
    """The conversation's latest turn number; 0 before its first turn."""
    where = conversation_key(conversation)
    number = conn.execute(
        select(_TABLE.c.turn).where(*(_TABLE.c[name] == value for name, value in where.items()))
    ).scalar_one_or_none()
    return 0 if number is None else int(number)
