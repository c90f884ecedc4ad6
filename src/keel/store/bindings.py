"""Chat bindings made at run time by `context_bind`, keyed by place and context.

A place is a chat, one of its threads or the whole chat (''), and one bot or every bot
(''). Binding a context again in the same place replaces its entity; the bindings of
access.yaml are read from the file and never stored here.
"""

from __future__ import annotations

from sqlalchemy import Connection, delete, select

from keel.errors import StoreError
from keel.link.values import Binding
from keel.store import schema
from keel.store.sql import key, unkey, upsert

_TABLE = schema.bindings


def bind(conn: Connection, binding: Binding) -> None:
    """Store a tool binding, replacing the entity of the same context in the same place."""
    if binding.source != "tool":
        raise StoreError(
            f"the binding of {binding.context!r} in {binding.chat} comes from access.yaml — "
            "those live in the file; store only bindings made by context_bind"
        )
    stmt = upsert(
        conn.dialect.name, _TABLE, keys=("chat", "thread", "bot", "context"), update=("entity",)
    )
    conn.execute(
        stmt,
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
    result = conn.execute(
        delete(_TABLE).where(
            _TABLE.c.chat == chat,
            _TABLE.c.thread == key(thread, "the thread to unbind"),
            _TABLE.c.bot == key(bot, "the bot to unbind"),
            _TABLE.c.context == context,
        )
    )
    return result.rowcount > 0


def bindings(
    conn: Connection, chat: str, *, thread: str | None = None, every_thread: bool = True
) -> tuple[Binding, ...]:
    """The chat's stored bindings, whole-chat ones first.

    With `every_thread` (the default) those of every thread; otherwise only those that
    cover `thread`: its own and the whole chat's — one indexed look-up, however many
    other threads the chat has bound.
    """
    query = select(_TABLE).where(_TABLE.c.chat == chat)
    if not every_thread:
        query = query.where(_TABLE.c.thread.in_(["", key(thread, "the thread")]))
    rows = conn.execute(query.order_by(_TABLE.c.thread, _TABLE.c.bot, _TABLE.c.context))
    return tuple(
        Binding(
            context=row.context,
            entity=unkey(row.entity),
            chat=row.chat,
            thread=unkey(row.thread),
            bot=unkey(row.bot),
            source="tool",
        )
        for row in rows
    )
