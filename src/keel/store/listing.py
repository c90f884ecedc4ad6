"""Listing what the store holds, for people: a chat's messages, every stored binding.

Turns read these only to prepare (`keel.store.history`, `keel.store.bindings`); these
queries serve inspection (`keel history`, `keel bindings`) and reports.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Connection, select

from keel.assemble.values import Speaker
from keel.errors import StoreError
from keel.link.values import Binding
from keel.store import schema
from keel.store.history import SPEAKERS, as_read
from keel.store.sql import key, unkey

_MESSAGES = schema.messages
_BINDINGS = schema.bindings
_JOURNAL = schema.turn_journal
# Who said a person's message: the sender of the turn it opened (one journal row per
# recorded turn; the index on the conversation and number finds it).
_SENDER = (
    select(_JOURNAL.c.sender)
    .where(
        _JOURNAL.c.bot == _MESSAGES.c.bot,
        _JOURNAL.c.chat == _MESSAGES.c.chat,
        _JOURNAL.c.thread == _MESSAGES.c.thread,
        _JOURNAL.c.turn == _MESSAGES.c.turn,
        _MESSAGES.c.speaker == "user",
    )
    .order_by(_JOURNAL.c.id)
    .limit(1)
    .scalar_subquery()
    .label("sender")
)
_ORIGINS = schema.origins
# The context a live widget's message shows (its origin's mark), for a bot's message.
_WIDGET = (
    select(_ORIGINS.c.widget)
    .where(
        _ORIGINS.c.bot == _MESSAGES.c.bot,
        _ORIGINS.c.chat == _MESSAGES.c.chat,
        _ORIGINS.c.message_id == _MESSAGES.c.message_id,
    )
    .scalar_subquery()
    .label("widget")
)


@dataclass(frozen=True, slots=True, kw_only=True)
class LoggedMessage:
    """One message of the history log, where and when it was said."""

    bot: str
    chat: str
    thread: str | None
    turn: int
    at: datetime
    speaker: Speaker
    text: str
    message_id: str | None = None
    # Who spoke, for a person's message whose turn named its sender.
    sender: str | None = None
    # The context a live widget's message shows; and whether the message is a widget's
    # that a later one of the same list replaced.
    widget: str | None = None
    replaced: bool = False

    @property
    def read_as(self) -> str:
        """The text as later turns read it in their history: a replaced widget's list as
        its title and a note, not its old lines."""
        return as_read(self.text, True) if self.replaced else self.text

    def to_json(self) -> dict[str, Any]:
        """As `keel history --json` and GET /v1/history give it: the text as read."""
        return {
            "bot": self.bot,
            "chat": self.chat,
            "thread": self.thread,
            "turn": self.turn,
            "at": self.at.isoformat(),
            "speaker": self.speaker,
            "sender": self.sender,
            "text": self.read_as,
            "message_id": self.message_id,
            "replaced": self.replaced,
        }


def chat_messages(
    conn: Connection,
    chat: str,
    *,
    bot: str | None = None,
    thread: str | None = None,
    limit: int = 50,
) -> tuple[LoggedMessage, ...]:
    """The chat's newest `limit` messages (any bot and thread unless named), oldest first."""
    if limit < 0:
        raise StoreError(f"a limit of {limit} messages is negative — pass 0 or more")
    query = select(_MESSAGES, _SENDER, _WIDGET).where(_MESSAGES.c.chat == chat)
    if bot is not None:
        query = query.where(_MESSAGES.c.bot == bot)
    if thread is not None:
        query = query.where(_MESSAGES.c.thread == key(thread, "the thread"))
    rows = conn.execute(query.order_by(_MESSAGES.c.at.desc(), _MESSAGES.c.id.desc()).limit(limit))
    return tuple(
        LoggedMessage(
            bot=row.bot,
            chat=row.chat,
            thread=unkey(row.thread),
            turn=int(row.turn),
            at=row.at,
            speaker=_speaker(row.speaker),
            text=row.text,
            message_id=row.message_id,
            sender=row.sender,
            widget=row.widget,
            replaced=row.replaced_at is not None,
        )
        for row in reversed(rows.all())
    )


def all_bindings(conn: Connection) -> tuple[Binding, ...]:
    """Every binding `context_bind` stored, by chat, thread, bot and context."""
    rows = conn.execute(
        select(_BINDINGS).order_by(
            _BINDINGS.c.chat, _BINDINGS.c.thread, _BINDINGS.c.bot, _BINDINGS.c.context
        )
    )
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


def _speaker(value: str) -> Speaker:
    for speaker in SPEAKERS:
        if value == speaker:
            return speaker
    raise StoreError(
        f"a row of {_MESSAGES.name} has the speaker {value!r} — it must be one of "
        f"{', '.join(SPEAKERS)}; correct or delete the row"
    )
