"""Widgets on Keel's tables: the messages that show a context's lines, and their edits.

A widget is a sent message whose origin names a context (`keel_origins.widget`). In one
room (bot, chat, thread) one message per context is the live widget: showing the list
again retires the earlier one (`retire_widgets`), which from then on is an ordinary
message, pruned by age as any other, and marked replaced: history shows that the list was
replaced instead of its old numbers. A live widget is kept at any age.

An edit changes a recorded message's text in place (`edit_message`) and stamps
`edited_at`. A message already delivered goes back to `pending` with its surface id
kept, which is how a surface's outbox tells an edit (edit the message it sent) from a
send; one not delivered yet simply goes out with its new text; a failed one stays failed.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from sqlalchemy import Connection, and_, case, select, update

from keel.store import schema
from keel.store.sql import key, unkey, utc

_ORIGINS = schema.origins
_MESSAGES = schema.messages


@dataclass(frozen=True, slots=True, kw_only=True)
class LiveWidget:
    """A live widget: where its message is, the context it shows, and its text now."""

    row: int
    bot: str
    chat: str
    thread: str | None
    message_id: str
    context: str
    text: str


def live_widgets(conn: Connection) -> tuple[LiveWidget, ...]:
    """Every live widget's message, oldest first."""
    joined = _ORIGINS.join(
        _MESSAGES,
        and_(
            _MESSAGES.c.bot == _ORIGINS.c.bot,
            _MESSAGES.c.chat == _ORIGINS.c.chat,
            _MESSAGES.c.message_id == _ORIGINS.c.message_id,
        ),
    )
    rows = conn.execute(
        select(
            _MESSAGES.c.id,
            _ORIGINS.c.bot,
            _ORIGINS.c.chat,
            _ORIGINS.c.thread,
            _ORIGINS.c.message_id,
            _ORIGINS.c.widget,
            _MESSAGES.c.text,
        )
        .select_from(joined)
        .where(_ORIGINS.c.widget.is_not(None))
        .order_by(_MESSAGES.c.id)
    )
    return tuple(
        LiveWidget(
            row=int(r.id),
            bot=r.bot,
            chat=r.chat,
            thread=unkey(r.thread),
            message_id=r.message_id,
            context=r.widget,
            text=r.text,
        )
        for r in rows
    )


def retire_widgets(
    conn: Connection,
    *,
    bot: str,
    chat: str,
    thread: str | None,
    context: str,
    keep: str,
    at: datetime,
) -> tuple[str, ...]:
    """Make every widget of `context` in this room but message `keep` an ordinary message,
    its message marked replaced at `at`; the ids of those messages, in id order."""
    earlier = (
        _ORIGINS.c.bot == bot,
        _ORIGINS.c.chat == chat,
        _ORIGINS.c.thread == key(thread, "the widget's thread"),
        _ORIGINS.c.widget == context,
        _ORIGINS.c.message_id != keep,
    )
    retired = tuple(
        conn.execute(
            select(_ORIGINS.c.message_id).where(*earlier).order_by(_ORIGINS.c.message_id)
        ).scalars()
    )
    if not retired:
        return ()
    conn.execute(
        update(_MESSAGES)
        .where(
            _MESSAGES.c.bot == bot,
            _MESSAGES.c.chat == chat,
            _MESSAGES.c.message_id.in_(retired),
        )
        .values(replaced_at=utc(at, "the widget's replacement time"))
    )
    conn.execute(update(_ORIGINS).where(*earlier).values(widget=None))
    return retired


def edit_message(conn: Connection, row: int, text: str, at: datetime) -> bool:
    """Change a recorded message's text; a delivered one goes back to the outbox as an
    edit. False when no such row is known."""
    delivered = _MESSAGES.c.delivery == "delivered"
    result = conn.execute(
        update(_MESSAGES)
        .where(_MESSAGES.c.id == row)
        .values(
            text=text,
            edited_at=utc(at, "the edit's time"),
            delivery=case((delivered, "pending"), else_=_MESSAGES.c.delivery),
            attempts=case((delivered, 0), else_=_MESSAGES.c.attempts),
            delivery_reason=case((delivered, None), else_=_MESSAGES.c.delivery_reason),
        )
    )
    return result.rowcount > 0
