"""Chat bindings made at run time by `context_bind`, keyed by place and context.

A place is a chat, one of its threads or the whole chat (''), and one bot or every bot
(''). Binding a context again in the same place replaces its entity; the bindings of
access.yaml are read from the file and never stored here.
"""

from __future__ import annotations

from functools import cache
from typing import Any

from sqlalchemy import Connection, Insert, bindparam, delete, select

from keel.errors import StoreError
from keel.link.values import Binding
from keel.store import schema
from keel.store.sql import key, unkey, upsert

_TABLE = schema.bindings
# Built once: building a statement costs more than SQLite takes to run it.
_UNBIND = delete(_TABLE).where(
    _TABLE.c.chat == bindparam("chat"),
    _TABLE.c.thread == bindparam("thread"),
    _TABLE.c.bot == bindparam("bot"),
    _TABLE.c.context == bindparam("context"),
)
_ORDER = (_TABLE.c.thread, _TABLE.c.bot, _TABLE.c.context)
_OF_CHAT = select(_TABLE).where(_TABLE.c.chat == bindparam("chat")).order_by(*_ORDER)
# A thread's own bindings and the whole chat's ('').
COVERING = (
    _TABLE.c.chat == bindparam("chat"),
    _TABLE.c.thread.in_([bindparam("whole"), bindparam("thread")]),
)
_OF_THREAD = select(_TABLE).where(*COVERING).order_by(*_ORDER)


@cache
def _bind(dialect: str) -> Insert:
    return upsert(dialect, _TABLE, keys=("chat", "thread", "bot", "context"), update=("entity",))


def bind(conn: Connection, binding: Binding) -> None:
    """Store a tool binding, replacing the entity of the same context in the same place."""
    if binding.source != "tool":
        raise StoreError(
            f"the binding of {binding.context!r} in {binding.chat} comes from access.yaml — "
            "those live in the file; store only bindings made by context_bind"
        )
    conn.execute(
        _bind(conn.dialect.name),
        {
            "chat": binding.chat,
            "thread": key(binding.thread, "the binding's thread"),
            "bot": key(binding.bot, "the binding's bot"),
            "context": binding.context,
            "entity": key(binding.entity, f"the entity bound to {binding.context!r}"),
        },
    )


def unbind(conn: Connection, context: str, chat: str, thread: str | None, bot: str | None) -> bool:
    """Remove the binding of `context` in this place; False when nothing was bound there."""
    params = {
        "chat": chat,
        "thread": key(thread, "the thread to unbind"),
        "bot": key(bot, "the bot to unbind"),
        "context": context,
    }
    return conn.execute(_UNBIND, params).rowcount > 0


def bindings(
    conn: Connection, chat: str, *, thread: str | None = None, every_thread: bool = True
) -> tuple[Binding, ...]:
    """The chat's stored bindings, whole-chat ones first.

    With `every_thread` (the default) those of every thread; otherwise only those that
    cover `thread`: its own and the whole chat's — one indexed look-up, however many
    other threads the chat has bound.
    """
    if every_thread:
        rows = conn.execute(_OF_CHAT, {"chat": chat})
    else:
        params = {"chat": chat, "whole": "", "thread": key(thread, "the thread")}
        rows = conn.execute(_OF_THREAD, params)
    return tuple(binding(row) for row in rows)


def binding(row: Any) -> Binding:
    """A stored binding from its row (chat, thread, bot, context, entity)."""
    return Binding(
        context=row.context,
        entity=unkey(row.entity),
        chat=row.chat,
        thread=unkey(row.thread),
        bot=unkey(row.bot),
        source="tool",
    )
