"""Kept links: inferred links (reply, code, ask) that stick to a conversation for a while.

One row per (conversation, context, entity). Keeping a pair again replaces its kind,
feature and last turn — that is how a second reply to the same feature restarts the count.
A link is kept up to and including `until_turn`; `expire` drops the ones already past.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import Connection, delete, select

from keel.link.values import Conversation, KeptLink
from keel.store import schema
from keel.store.sql import conversation_key, key, link_kind, unkey, upsert

_TABLE = schema.kept


def kept(conn: Connection, conversation: Conversation) -> tuple[KeptLink, ...]:
    """The links kept for this conversation, by context and entity."""
    rows = conn.execute(
        select(_TABLE)
        .where(*(_TABLE.c[name] == value for name, value in conversation_key(conversation).items()))
        .order_by(_TABLE.c.context, _TABLE.c.entity)
    )
    return tuple(
        KeptLink(
            context=row.context,
            entity=unkey(row.entity),
            kind=link_kind(row.kind, f"a row of {_TABLE.name}"),
            feature=row.feature,
            until_turn=int(row.until_turn),
        )
        for row in rows
    )


def keep(conn: Connection, conversation: Conversation, links: Sequence[KeptLink]) -> None:
    """Keep these links; one already kept for its (context, entity) takes the new values."""
    where = conversation_key(conversation)
    # One row per pair, the last one given winning: a batch may not touch a row twice.
    rows = {
        (link.context, link.entity): {
            **where,
            "context": link.context,
            "entity": key(link.entity, f"the entity of kept link {link.context!r}"),
            "kind": link_kind(link.kind, f"the kept link {link.context!r}"),
            "feature": link.feature,
            "until_turn": link.until_turn,
        }
        for link in links
    }
    if not rows:
        return
    stmt = upsert(
        conn.dialect.name,
        _TABLE,
        keys=("bot", "chat", "thread", "context", "entity"),
        update=("kind", "feature", "until_turn"),
    )
    conn.execute(stmt, list(rows.values()))


def expire(conn: Connection, conversation: Conversation, before_turn: int) -> int:
    """Forget the links kept only for turns before `before_turn`; return how many."""
    result = conn.execute(
        delete(_TABLE).where(
            *(_TABLE.c[name] == value for name, value in conversation_key(conversation).items()),
            _TABLE.c.until_turn < before_turn,
        )
    )
    return int(result.rowcount)
