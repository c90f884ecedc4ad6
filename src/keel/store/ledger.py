"""The spend ledger: what each turn's tail carried, and what it cost in characters.

One entry per context a turn carried: attached (`knob` None) with its rendered size, or
stubbed by a budget (`knob` names the knob that kept it out). Reports read it back per
role, per chat, over a window.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from keel.link.values import Conversation, LinkKind
from keel.store import schema
from keel.store.hot import Hot
from keel.store.sql import key, link_kind, unkey, utc

_TABLE = schema.ledger
_COLUMNS = ("bot", "chat", "thread", "turn", "role", "at", "context", "feature", "entity")
_INSERT = Hot(_TABLE.insert(), columns=(*_COLUMNS, "link", "chars", "knob"))


@dataclass(frozen=True, slots=True, kw_only=True)
class LedgerEntry:
    """One context one turn carried: its link, entity and size, or the knob that stubbed it."""

    bot: str
    chat: str
    thread: str | None
    turn: int
    role: str
    at: datetime
    context: str
    feature: str
    entity: str | None
    link: LinkKind
    chars: int
    knob: str | None = None

    @property
    def conversation(self) -> Conversation:
        return Conversation(bot=self.bot, chat=self.chat, thread=self.thread)

    @property
    def stubbed(self) -> bool:
        return self.knob is not None


def record_ledger(conn: Connection, entries: Iterable[LedgerEntry]) -> None:
    """Append entries to the ledger."""
    rows = [_row(entry) for entry in entries]
    if rows:
        _INSERT.many(conn, rows)


def _row(entry: LedgerEntry) -> dict[str, Any]:
    what = f"the ledger entry for {entry.context!r} in turn {entry.turn}"
    return {
        "bot": entry.bot,
        "chat": entry.chat,
        "thread": key(entry.thread, f"the thread of {what}"),
        "turn": entry.turn,
        "role": entry.role,
        "at": utc(entry.at, f"the time of {what}"),
        "context": entry.context,
        "feature": entry.feature,
        "entity": key(entry.entity, f"the entity of {what}"),
        "link": link_kind(entry.link, what),
        "chars": entry.chars,
        "knob": entry.knob,
    }


def ledger(
    conn: Connection,
    *,
    role: str | None = None,
    bot: str | None = None,
    chat: str | None = None,
    since: datetime | None = None,
) -> tuple[LedgerEntry, ...]:
    """The entries matching every filter given (`since` inclusive), oldest first."""
    query = select(_TABLE).order_by(_TABLE.c.at, _TABLE.c.id)
    if role is not None:
        query = query.where(_TABLE.c.role == role)
    if bot is not None:
        query = query.where(_TABLE.c.bot == bot)
    if chat is not None:
        query = query.where(_TABLE.c.chat == chat)
    if since is not None:
        query = query.where(_TABLE.c.at >= utc(since, "since"))
    return tuple(
        LedgerEntry(
            bot=row.bot,
            chat=row.chat,
            thread=unkey(row.thread),
            turn=int(row.turn),
            role=row.role,
            at=row.at,
            context=row.context,
            feature=row.feature,
            entity=unkey(row.entity),
            link=link_kind(row.link, f"a row of {_TABLE.name}"),
            chars=int(row.chars),
            knob=row.knob,
        )
        for row in conn.execute(query)
    )
