"""The history log: every message of a conversation, by turn, for the `history` section.

One row per message: the turn's input ('user') and each message the bot sent there
('assistant'), with the time, the text and the platform's message id when it is known. A
widget's message a later one replaced reads as its title and `REPLACED`, not its old lines.
Within a turn, messages keep the order they were recorded in.

`history` answers with one query on the (conversation, turn, id) index: the newest
`limit` messages of the turns before the current one, handed back oldest first. The
current turn is left out on purpose — its input is the `current` section, and the work
inside it is the turn's transcript, not history.
"""

from __future__ import annotations

from collections.abc import Iterable
from datetime import datetime
from typing import get_args

from sqlalchemy import Connection, bindparam, func, select

from keel.assemble.values import Message, Speaker
from keel.errors import StoreError
from keel.link.values import Conversation
from keel.store import schema
from keel.store.delivery import Attachment
from keel.store.hot import Hot
from keel.store.sql import conversation_key, utc

_TABLE = schema.messages
SPEAKERS: tuple[Speaker, ...] = get_args(Speaker)

# Built once: building a statement costs more than SQLite takes to run it.
_INSERT = Hot(
    _TABLE.insert(),
    columns=(
        "bot",
        "chat",
        "thread",
        "turn",
        "at",
        "speaker",
        "text",
        "message_id",
        "delivery",
        "surface_reply_to",
        "surface_connection",
        "attachment",
        "attachment_path",
    ),
)
BEFORE = (
    _TABLE.c.bot == bindparam("bot"),
    _TABLE.c.chat == bindparam("chat"),
    _TABLE.c.thread == bindparam("thread"),
    _TABLE.c.turn < bindparam("before"),
)
NEWEST_FIRST = (_TABLE.c.turn.desc(), _TABLE.c.id.desc())
# What history shows of a widget's message a later one of the same list replaced, under
# the list's title: its old numbers would read as current beside the live list's.
REPLACED = "(list replaced — see the current list)"
_HISTORY = (
    select(_TABLE.c.speaker, _TABLE.c.text, _TABLE.c.replaced_at)
    .where(*BEFORE)
    .order_by(*NEWEST_FIRST)
    .limit(bindparam("limit"))
)
_COUNT = select(func.count()).select_from(_TABLE).where(*BEFORE)


def record_message(
    conn: Connection,
    conversation: Conversation,
    *,
    turn: int,
    at: datetime,
    speaker: Speaker,
    text: str,
    message_id: str | None = None,
    surface_reply_to: str | None = None,
    surface_connection: str | None = None,
    attachment: Attachment | None = None,
) -> None:
    """Append one message to the conversation's history.

    A bot's message joins the outbox (`keel.store.delivery`) as pending: a chat surface
    delivers it, answering natively the surface's message `surface_reply_to` and through
    `surface_connection` when given.
    """
    what = f"the {speaker} message of turn {turn} in {conversation.chat}"
    if speaker not in SPEAKERS:
        raise StoreError(
            f"{what} has the speaker {speaker!r} — it must be one of {', '.join(SPEAKERS)}"
        )
    if turn < 0:
        # Turn 0 holds what was sent to a conversation before its first turn.
        raise StoreError(f"{what} has the turn number {turn} — turns are counted from 0")
    if not text.strip():
        # A provider refuses an empty message, and history must never send one.
        raise StoreError(f"{what} is empty ({text!r}) — record only messages with text")
    if message_id == "":
        raise StoreError(f"{what} has an empty message id — pass None when it is not known")
    _INSERT.run(
        conn,
        {
            **conversation_key(conversation),
            "turn": turn,
            "at": utc(at, f"the time of {what}"),
            "speaker": speaker,
            "text": text,
            "message_id": message_id,
            "delivery": "pending" if speaker == "assistant" else None,
            "surface_reply_to": surface_reply_to,
            "surface_connection": surface_connection,
            "attachment": None if attachment is None else attachment.kind,
            "attachment_path": None if attachment is None else attachment.path,
        },
    )


def history(
    conn: Connection, conversation: Conversation, *, before_turn: int, limit: int = 200
) -> tuple[Message, ...]:
    """The newest `limit` messages of turns before `before_turn`, oldest first."""
    if limit < 0:
        raise StoreError(f"a history limit of {limit} is negative — pass 0 or more messages")
    if limit == 0:
        return ()
    params = {**conversation_key(conversation), "before": before_turn, "limit": limit}
    rows = conn.execute(_HISTORY, params).all()
    return messages((speaker, as_read(text, replaced)) for speaker, text, replaced in rows[::-1])


def as_read(text: str, replaced: object) -> str:
    """A message's text as history reads it: a widget's message that was `replaced` (not
    None), as its title and `REPLACED`."""
    if replaced is None:
        return text
    title = text.partition("\n")[0]
    return f"{title}\n{REPLACED}"


def replied(conn: Connection, bot: str, chat: str, ids: Iterable[str]) -> dict[str, str]:
    """The text of each message with one of these ids that `bot` sent in `chat`."""
    wanted = list(ids)
    if not wanted:
        return {}
    query = select(_TABLE.c.message_id, _TABLE.c.text).where(
        _TABLE.c.bot == bot, _TABLE.c.chat == chat, _TABLE.c.message_id.in_(wanted)
    )
    return {row.message_id: row.text for row in conn.execute(query)}


def history_count(conn: Connection, conversation: Conversation, *, before_turn: int) -> int:
    """How many messages the turns before `before_turn` hold in all."""
    params = {**conversation_key(conversation), "before": before_turn}
    return int(conn.execute(_COUNT, params).scalar_one())


def messages(rows: Iterable[tuple[str, str]]) -> tuple[Message, ...]:
    """(speaker, text) pairs as messages, in the order given."""
    # A turn reads up to 200: a look-up each for the speaker, not a loop, and each
    # message's two fields set directly — the frozen dataclass's keyword __init__ costs
    # twice as much, for the same object.
    speakers, new, set_role, set_text = _SPEAKERS, object.__new__, _SET_ROLE, _SET_TEXT
    built = []
    for speaker, text in rows:
        message = new(Message)
        set_role(message, speakers.get(speaker) or _speaker(speaker))
        set_text(message, text)
        built.append(message)
    return tuple(built)


_SPEAKERS: dict[str, Speaker] = {speaker: speaker for speaker in SPEAKERS}
_SET_ROLE = vars(Message)["role"].__set__  # the slots' descriptors
_SET_TEXT = vars(Message)["text"].__set__


def _speaker(value: str) -> Speaker:
    for speaker in SPEAKERS:
        if value == speaker:
            return speaker
    raise StoreError(
        f"a row of {_TABLE.name} has the speaker {value!r} — it must be one of "
        f"{', '.join(SPEAKERS)}; correct or delete the row"
    )
