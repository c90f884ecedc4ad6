"""What a turn reads of its conversation's stored rows, in one query: the bindings that
cover its thread, its kept links, and its history (the newest messages before the turn).

Three reads a turn makes anyway, one after the other, each costing more in SQLAlchemy and
the driver than in SQLite. They are read together only where that cannot change what is
read: on SQLite, whose turn transaction holds the database's write lock from its first
statement (BEGIN IMMEDIATE), so nothing else writes until it ends. `Tx` reads them right
after it counts the turn and hands them out as they are asked for — until the
transaction writes them itself.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from operator import itemgetter
from typing import Any

from sqlalchemy import (
    Connection,
    bindparam,
    case,
    func,
    literal_column,
    null,
    select,
    union_all,
)

from keel.assemble.values import Message
from keel.link.values import Binding, Conversation, KeptLink
from keel.store import schema
from keel.store.bindings import COVERING
from keel.store.history import BEFORE, NEWEST_FIRST, as_read, messages
from keel.store.hot import Hot
from keel.store.keep import OF_CONVERSATION, kept_link
from keel.store.sql import conversation_key, unkey

_BINDINGS, _KEPT, _MESSAGES = schema.bindings, schema.kept, schema.messages
# Messages read ahead: what `Tx.history` reads by default, and a turn reads.
HISTORY_AHEAD = 200


def _part(number: int) -> Any:
    return literal_column(str(number)).label("part")


# Built once. Each part puts its values in columns a..e: bindings (context, entity,
# thread, bot), kept links (context, entity, kind, feature, until_turn), the newest
# messages (speaker, text, turn, id, replaced), then how many messages there are before
# the turn in all (e) — counted on the index alone, as `history_count` does.
# Nothing is sorted in SQL but the newest messages, which the index gives in order: a
# window or a sort of the whole union cost SQLite more than the rest of the query, and
# each part's few rows are put in their order here (`recall`), as each part's own query
# orders them (string keys compare alike in SQLite and Python).
_NEWEST = (
    select(
        _part(2),
        _MESSAGES.c.speaker.label("a"),
        _MESSAGES.c.text.label("b"),
        _MESSAGES.c.turn.label("c"),
        _MESSAGES.c.id.label("d"),
        # 1 for a widget's message a later one replaced (`as_read`), else null.
        case((_MESSAGES.c.replaced_at.is_not(None), literal_column("1")), else_=null()).label("e"),
    )
    .where(*BEFORE)
    .order_by(*NEWEST_FIRST)
    .limit(bindparam("limit"))
    .subquery()
)
_RECALL = union_all(
    select(
        _part(0),
        _BINDINGS.c.context.label("a"),
        _BINDINGS.c.entity.label("b"),
        _BINDINGS.c.thread.label("c"),
        _BINDINGS.c.bot.label("d"),
        null().label("e"),
    ).where(*COVERING),
    select(
        _part(1),
        _KEPT.c.context,
        _KEPT.c.entity,
        _KEPT.c.kind,
        _KEPT.c.feature,
        _KEPT.c.until_turn,
    ).where(*OF_CONVERSATION),
    select(_NEWEST),
    select(_part(3), null(), null(), null(), null(), func.count()).where(*BEFORE),
)
_RECALL_HOT = Hot(_RECALL)


@dataclass(slots=True, kw_only=True)
class Recalled:
    """A conversation's rows as one query read them; a part is None once the transaction
    has written what it holds."""

    before_turn: int  # history is of the turns before this one…
    limit: int  # …at most this many messages, the newest
    total: int  # how many messages those turns hold in all
    bindings: tuple[Binding, ...]
    kept: tuple[KeptLink, ...] | None
    history: tuple[Message, ...] | None
    # No kept link of the conversation lasts less than this turn (a lower bound); None
    # when it has none at all.
    floor: int | None

    def newest(self, before_turn: int, limit: int) -> tuple[Message, ...] | None:
        """The history asked for, when this holds it."""
        if self.history is None or before_turn != self.before_turn or not 0 < limit <= self.limit:
            return None
        return self.history[-limit:]

    def count(self, before_turn: int) -> int | None:
        """How many messages the turns before `before_turn` hold, when this knows."""
        if self.history is None or before_turn != self.before_turn:
            return None
        return self.total

    def kept_more(self, until_turns: Iterable[int]) -> None:
        """The transaction kept links (lasting until these turns): read them afresh."""
        self.kept = None
        known = () if self.floor is None else (self.floor,)
        self.floor = min((*until_turns, *known), default=None)

    def expiring(self, before_turn: int) -> bool:
        """Whether a kept link may last less than `before_turn` (and so be expired)."""
        return self.floor is not None and self.floor < before_turn

    def expired(self, before_turn: int) -> None:
        """The transaction expired the links lasting less than `before_turn`."""
        self.kept = None
        if self.floor is not None:
            self.floor = before_turn


def recall(
    conn: Connection, conversation: Conversation, *, before_turn: int, limit: int
) -> Recalled:
    """The conversation's bindings, kept links and newest `limit` messages before
    `before_turn`, in one query."""
    params = {**conversation_key(conversation), "whole": "", "before": before_turn}
    parts: tuple[list[Any], list[Any], list[Any], list[Any]] = ([], [], [], [])
    for row in _RECALL_HOT.rows(conn, {**params, "limit": limit}):
        parts[row[0]].append(row)  # each row as read: (part, a, b, c, d, e)
    bound, keeps, newest, counted = parts
    total = int(counted[0][5])
    # Each part in its own query's order: bindings by (thread, bot, context), kept links
    # by (context, entity), the messages oldest first (by turn, then as recorded).
    bound.sort(key=itemgetter(3, 4, 1))
    keeps.sort(key=itemgetter(1, 2))
    newest.sort(key=itemgetter(3, 4))
    chat = conversation.chat
    bindings = [
        Binding(context=a, entity=unkey(b), chat=chat, thread=unkey(c), bot=unkey(d))
        for _, a, b, c, d, _ in bound
    ]
    kept = [kept_link(a, b, c, d, e) for _, a, b, c, d, e in keeps]
    return Recalled(
        before_turn=before_turn,
        limit=limit,
        total=total,
        bindings=tuple(bindings),
        kept=tuple(kept),
        history=messages((a, b if e is None else as_read(b, e)) for _, a, b, _, _, e in newest),
        floor=min((k.until_turn for k in kept), default=None),
    )
