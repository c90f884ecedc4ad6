"""Message origins: what each message the bot sent carries, so a reply can link back.

An origin is one row keyed by (bot, chat, message_id) — a unique index, so finding the
messages a turn replies to stays one index probe per id however many rows there are — and
its reach entries are rows of a child table, in order. Recording a message again replaces
its origin and its whole reach.

Pruning keeps HITL cards that still wait for an answer at any age — a reply to one is always
routed to the card — and widgets (a message showing a context's lines): a reply to one
always reads as its lines.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from datetime import datetime
from functools import cache
from typing import Any

from sqlalchemy import Connection, Insert, bindparam, delete, select, update

from keel.brain.specs import ReachEntry
from keel.link.values import Origin
from keel.store import schema
from keel.store.hot import Hot
from keel.store.sql import key, unkey, upsert, utc

_ORIGINS = schema.origins
_REACH = schema.origin_reach
# Ids per query: well under the bound-parameter limits of SQLite and PostgreSQL.
_CHUNK = 500
# Built once: building a statement costs more than SQLite takes to run it.
_DROP_REACH = delete(_REACH).where(_REACH.c.origin_id == bindparam("o"))
_ADD_REACH = _REACH.insert()
_MESSAGE = (
    _ORIGINS.c.bot == bindparam("bot"),
    _ORIGINS.c.chat == bindparam("chat"),
)
_LOOKUP = (
    select(_ORIGINS, _REACH.c.context, _REACH.c.entity)
    .select_from(_ORIGINS.outerjoin(_REACH, _REACH.c.origin_id == _ORIGINS.c.id))
    .where(*_MESSAGE, _ORIGINS.c.message_id.in_(bindparam("ids", expanding=True)))
    .order_by(_ORIGINS.c.id, _REACH.c.position)
)
# A reply names one message nearly always: that look-up is a turn's hot statement, with
# no expanding IN (which SQLAlchemy would rewrite at every execution).
_ONE = (
    select(_ORIGINS, _REACH.c.context, _REACH.c.entity)
    .select_from(_ORIGINS.outerjoin(_REACH, _REACH.c.origin_id == _ORIGINS.c.id))
    .where(*_MESSAGE, _ORIGINS.c.message_id == bindparam("id"))
    .order_by(_ORIGINS.c.id, _REACH.c.position)
)
_LOOKUP_ONE = Hot(_ONE)
_RESOLVE = (
    update(_ORIGINS)
    .where(
        _ORIGINS.c.bot == bindparam("b"),
        _ORIGINS.c.chat == bindparam("c"),
        _ORIGINS.c.message_id == bindparam("m"),
    )
    .values(pending_card=False)
)


@cache
def _record(dialect: str) -> Insert:
    stmt = upsert(
        dialect,
        _ORIGINS,
        keys=("bot", "chat", "message_id"),
        update=("thread", "feature", "run", "sent_at", "pending_card", "widget"),
    )
    return stmt.returning(_ORIGINS.c.id)


def record_origin(conn: Connection, origin: Origin) -> None:
    """Store the origin of a sent message, replacing any earlier one of that message."""
    values = {
        "bot": origin.bot,
        "chat": origin.chat,
        "message_id": origin.message_id,
        "thread": key(origin.thread, "the origin's thread"),
        "feature": origin.feature,
        "run": origin.run,
        "sent_at": utc(origin.sent_at, f"the sent_at of message {origin.message_id!r}"),
        "pending_card": origin.pending_card,
        "widget": origin.widget,
    }
    reach = [
        {
            "position": position,
            "context": entry.context,
            "entity": key(entry.entity, f"the entity of reach entry {entry.context!r}"),
        }
        for position, entry in enumerate(origin.reach)
    ]
    origin_id = conn.execute(_record(conn.dialect.name), values).scalar_one()
    conn.execute(_DROP_REACH, {"o": origin_id})
    if reach:
        conn.execute(_ADD_REACH, [{"origin_id": origin_id, **row} for row in reach])


def origins(
    conn: Connection, bot: str, chat: str, message_ids: Iterable[str]
) -> tuple[Origin, ...]:
    """The recorded origins of these messages, in the order asked; unknown ids are left out."""
    wanted = list(dict.fromkeys(message_ids))
    found: dict[str, Origin] = {}
    for start in range(0, len(wanted), _CHUNK):
        found.update(_lookup(conn, bot, chat, wanted[start : start + _CHUNK]))
    return tuple(found[m] for m in wanted if m in found)


def _lookup(conn: Connection, bot: str, chat: str, ids: Sequence[str]) -> dict[str, Origin]:
    rows: dict[str, list[Any]] = {}
    found: Iterable[Any]
    if len(ids) == 1:
        found = _LOOKUP_ONE.named(conn, {"bot": bot, "chat": chat, "id": ids[0]})
    else:
        found = conn.execute(_LOOKUP, {"bot": bot, "chat": chat, "ids": list(ids)})
    for row in found:
        rows.setdefault(row.message_id, []).append(row)
    return {message_id: _origin(group) for message_id, group in rows.items()}


def _origin(group: Sequence[Any]) -> Origin:
    """An origin from its rows (SQLAlchemy's, or a hot statement's named ones), one per
    reach entry."""
    first = group[0]
    reach = tuple(
        ReachEntry(context=row.context, entity=unkey(row.entity))
        for row in group
        if row.context is not None
    )
    return Origin(
        bot=first.bot,
        chat=first.chat,
        message_id=first.message_id,
        sent_at=first.sent_at,
        thread=unkey(first.thread),
        feature=first.feature,
        run=first.run,
        reach=reach,
        pending_card=bool(first.pending_card),
        widget=first.widget,
    )


def resolve_card(conn: Connection, bot: str, chat: str, message_id: str) -> bool:
    """Mark a HITL card answered (no longer pending); False when no such message is known."""
    result = conn.execute(_RESOLVE, {"b": bot, "c": chat, "m": message_id})
    return result.rowcount > 0


def prune_origins(conn: Connection, older_than: datetime) -> int:
    """Delete origins sent before `older_than`, except pending cards and widgets; return
    how many."""
    old = select(_ORIGINS.c.id).where(
        _ORIGINS.c.sent_at < utc(older_than, "older_than"),
        _ORIGINS.c.pending_card.is_(False),
        _ORIGINS.c.widget.is_(None),
    )
    # The reach goes first and explicitly: SQLite enforces the cascade only on connections
    # that switched foreign keys on, and the engine is the caller's.
    conn.execute(delete(_REACH).where(_REACH.c.origin_id.in_(old.scalar_subquery())))
    result = conn.execute(delete(_ORIGINS).where(_ORIGINS.c.id.in_(old.scalar_subquery())))
    return int(result.rowcount)
