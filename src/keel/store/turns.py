"""Turn numbers: one counter per conversation (bot + chat + thread), starting at 1.

`next_turn` is one upsert that returns the new number, so concurrent workers on
PostgreSQL get distinct numbers: the second waits on the row the first updated, then
counts from the value the first committed.
"""

from __future__ import annotations

from functools import cache

from sqlalchemy import Connection, bindparam, select

from keel.link.values import Conversation
from keel.store import schema
from keel.store.hot import Hot
from keel.store.sql import conversation_key, upsert

_TABLE = schema.turns
# Built once: building a statement costs more than SQLite takes to run it.
_CURRENT = select(_TABLE.c.turn).where(
    _TABLE.c.bot == bindparam("bot"),
    _TABLE.c.chat == bindparam("chat"),
    _TABLE.c.thread == bindparam("thread"),
)


@cache
def _next(dialect: str) -> Hot:
    stmt = upsert(dialect, _TABLE, keys=("bot", "chat", "thread"), set_={"turn": _TABLE.c.turn + 1})
    return Hot(stmt.returning(_TABLE.c.turn), columns=("bot", "chat", "thread", "turn"))


def next_turn(conn: Connection, conversation: Conversation) -> int:
    """Count one more turn of the conversation and return its number (1 for the first)."""
    ((number,),) = _next(conn.dialect.name).rows(
        conn, {**conversation_key(conversation), "turn": 1}
    )
    return int(number)


def current_turn(conn: Connection, conversation: Conversation) -> int:
    """The conversation's latest turn number; 0 before its first turn."""
    number = conn.execute(_CURRENT, conversation_key(conversation)).scalar_one_or_none()
    return 0 if number is None else int(number)
