"""The turn journal: one row per prepared turn, written in the turn's own transaction.

A row's id is the turn's stable id (`PreparedTurn.id`, `keel explain BRAIN ID`). Reading
many rows reads their summary only (`data`); the replay part (view rows as read) is read
for one turn, or when asked for (what-if re-fits a window of turns).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import replace
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from keel.errors import StoreError
from keel.store import schema
from keel.store.hot import Hot
from keel.store.journal_json import data_json, journal_from_json, replay_json
from keel.store.journal_values import TurnJournal
from keel.store.sql import key, utc

_TABLE = schema.turn_journal
# Built once: building a statement costs more than SQLite takes to run it.
_INSERT = Hot(
    _TABLE.insert().returning(_TABLE.c.id),
    columns=("bot", "chat", "thread", "turn", "role", "at", "data", "replay", "sender"),
)
_ONE = select(_TABLE).where(_TABLE.c.id == bindparam("id"))


def _dumps(value: Mapping[str, Any]) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def record_journal(conn: Connection, journal: TurnJournal) -> int:
    """Write one turn's journal row; return its id (the turn's stable id)."""
    conversation = journal.conversation
    what = f"the journal of turn {journal.turn} in {conversation.chat}"
    ((ident,),) = _INSERT.rows(
        conn,
        {
            "bot": conversation.bot,
            "chat": conversation.chat,
            "thread": key(conversation.thread, f"the thread of {what}"),
            "turn": journal.turn,
            "role": journal.role,
            "at": utc(journal.request.now, f"the time of {what}"),
            "data": _dumps(data_json(journal)),
            "replay": _dumps(replay_json(journal)),
            "sender": journal.request.sender,
        },
    )
    return int(ident)


def journal(conn: Connection, ident: int) -> TurnJournal | None:
    """One turn's journal with its replay part, or None when no turn has this id."""
    row = conn.execute(_ONE, {"id": ident}).one_or_none()
    return None if row is None else _read(row, replay=True)


def journals(
    conn: Connection,
    *,
    bot: str | None = None,
    chat: str | None = None,
    thread: str | None = None,
    role: str | None = None,
    since: datetime | None = None,
    limit: int | None = None,
    replay: bool = False,
    newest_first: bool = True,
) -> tuple[TurnJournal, ...]:
    """The turns matching every filter given (`since` inclusive); `limit` counts from the
    newest, whatever the order they are handed back in."""
    if limit is not None and limit < 0:
        raise StoreError(f"a limit of {limit} turns is negative — pass 0 or more")
    columns = [c for c in _TABLE.c if replay or c.name != "replay"]
    query = select(*columns).order_by(_TABLE.c.at.desc(), _TABLE.c.id.desc())
    filters: list[Any] = []
    if bot is not None:
        filters.append(_TABLE.c.bot == bot)
    if chat is not None:
        filters.append(_TABLE.c.chat == chat)
    if thread is not None:
        filters.append(_TABLE.c.thread == key(thread, "the thread"))
    if role is not None:
        filters.append(_TABLE.c.role == role)
    if since is not None:
        filters.append(_TABLE.c.at >= utc(since, "since"))
    if filters:
        query = query.where(*filters)
    if limit is not None:
        query = query.limit(limit)
    found = [_read(row, replay=replay) for row in conn.execute(query)]
    return tuple(found if newest_first else reversed(found))


def _read(row: Row[Any], *, replay: bool) -> TurnJournal:
    try:
        data = json.loads(row.data)
        extra = json.loads(row.replay) if replay else None
        read = journal_from_json(int(row.id), data, extra)
        if row.sender is None:
            return read
        return replace(read, request=replace(read.request, sender=row.sender))
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise StoreError(
            f"turn {row.id} of {_TABLE.name} cannot be read ({type(exc).__name__}: {exc}) — "
            "it was written by another version of Keel, or edited by hand; delete the row"
        ) from exc
