"""Kept links: inferred links (reply, code, ask) that stick to a conversation for a while.

One row per (conversation, context, entity). Keeping a pair again replaces its kind,
feature and last turn — that is how a second reply to the same feature restarts the count.
A link is kept up to and including `until_turn`; `expire` drops the ones already past.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache
from typing import Any

from sqlalchemy import Connection, bindparam, delete, select

from keel.link.values import Conversation, KeptLink
from keel.store import schema
from keel.store.hot import Hot
from keel.store.sql import conversation_key, key, link_kind, unkey, upsert

_TABLE = schema.kept
# Built once: building a statement costs more than SQLite takes to run it.
OF_CONVERSATION = (
    _TABLE.c.bot == bindparam("bot"),
    _TABLE.c.chat == bindparam("chat"),
    _TABLE.c.thread == bindparam("thread"),
)
ORDER = (_TABLE.c.context, _TABLE.c.entity)
_KEPT = select(_TABLE).where(*OF_CONVERSATION).order_by(*ORDER)
_EXPIRE = Hot(delete(_TABLE).where(*OF_CONVERSATION, _TABLE.c.until_turn < bindparam("before")))
_KEYS = ("bot", "chat", "thread", "context", "entity")
_VALUES = ("kind", "feature", "until_turn")


@cache
def _keep(dialect: str) -> Hot:
    return Hot(upsert(dialect, _TABLE, keys=_KEYS, update=_VALUES), columns=(*_KEYS, *_VALUES))


def kept(conn: Connection, conversation: Conversation) -> tuple[KeptLink, ...]:
    """The links kept for this conversation, by context and entity."""
    rows = conn.execute(_KEPT, conversation_key(conversation))
    return tuple(
        kept_link(row.context, row.entity, row.kind, row.feature, row.until_turn) for row in rows
    )


def kept_link(context: str, entity: str, kind: str, feature: str, until_turn: Any) -> KeptLink:
    """A kept link from its stored values."""
    return KeptLink(
        context=context,
        entity=unkey(entity),
        kind=link_kind(kind, f"a row of {_TABLE.name}"),
        feature=feature,
        until_turn=int(until_turn),
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
    _keep(conn.dialect.name).many(conn, list(rows.values()))


def expire(conn: Connection, conversation: Conversation, before_turn: int) -> int:
    """Forget the links kept only for turns before `before_turn`; return how many."""
    return _EXPIRE.run(conn, {**conversation_key(conversation), "before": before_turn})
