"""Telegram updates as Keel's turns: which chat, thread, sender and reply each names.

Pure: an aiogram `Update` in, a value out; nothing here reads the store or the clock.
`read_update` says what an update is for Keel — an `Incoming` message to answer, or a
`Skipped` one with the reason logged — and `turn_request` makes the turn, given the Keel
ids of the messages it replies to (looked up by the adapter from the Telegram ids).

Ids carry the surface: a group, supergroup or channel is `tg:chat:<id>`; a private chat
is `tg:user:<id>` (a direct message); a Business chat, which the bot answers on behalf of
a business account through its connection, is `tg:business:<id>` (one-to-one, so a
direct message too, but never the same conversation as the person's own chat with the
bot). A forum topic's `message_thread_id` is the turn's thread; the sender is
`tg:user:<id>` (`tg:chat:<id>` for a group's anonymous admin or a channel).

What is not answered, each on purpose:

- an edited message: the answer to the first version stands; answering the edit would
  double the turn;
- a service message (a member joined, a topic opened, a pin) and media without a caption
  (a sticker, a photo, a voice note): there is no text for the model to read;
- any other kind of update (a reaction, a poll, a member change).

Media with a caption is answered, the caption being its text. In a group, a message is
`addressed` to the bot when it is a command, mentions the bot or replies to it: a bot
whose chat policy says nothing about a message answers only those (`keel.telegram.turns`).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime

from aiogram.types import Chat, Message, Update

from keel.link.values import Conversation, TurnRequest

# What each kind of update Keel does not answer is called in the log.
_EDITS = ("edited_message", "edited_channel_post", "edited_business_message")


@dataclass(frozen=True, slots=True, kw_only=True)
class Incoming:
    """A Telegram message Keel answers, in Keel's ids and Telegram's."""

    update_id: int
    chat: str
    dm: bool
    thread: str | None
    sender: str | None
    text: str
    # Telegram's own ids: where to answer, and what.
    chat_id: int
    thread_id: int | None
    message_id: int
    # The Telegram id of the message this one replies to natively, if any.
    reply_to: int | None = None
    # A Business message is answered through the business connection it came by.
    connection: str | None = None
    # Said to the bot: a direct message, a command, a mention of the bot, or a reply to
    # one of its messages. Without a chat policy of its own, a bot answers only these.
    addressed: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class Skipped:
    """An update Keel does not answer, and why (for the log)."""

    update_id: int
    reason: str


@dataclass(frozen=True, slots=True, kw_only=True)
class BotUser:
    """Who the bot is in Telegram (getMe), to tell a message said to it."""

    id: int
    username: str | None = None


def read_update(update: Update, me: BotUser | None = None) -> Incoming | Skipped:
    """What `update` is for Keel: a message to answer, or one skipped and why. Without
    `me`, every message counts as said to the bot."""
    for kind in _EDITS:
        if getattr(update, kind) is not None:
            return Skipped(
                update_id=update.update_id,
                reason=f"{kind.replace('_', ' ')}: the answer to the first version stands",
            )
    if update.business_message is not None:
        return read_message(update.update_id, update.business_message, me, business=True)
    message = update.message or update.channel_post
    if message is None:
        return Skipped(update_id=update.update_id, reason=f"a {_kind(update)} update")
    return read_message(update.update_id, message, me)


def read_message(
    update_id: int, message: Message, me: BotUser | None = None, *, business: bool = False
) -> Incoming | Skipped:
    """One message as Keel reads it (see the module for what is skipped)."""
    text = message.text or message.caption
    if not text or not text.strip():
        return Skipped(update_id=update_id, reason=f"{_content(message)} without text")
    connection = message.business_connection_id if business else None
    if business and connection is None:
        return Skipped(update_id=update_id, reason="a Business message with no connection id")
    thread_id = message.message_thread_id if message.is_topic_message else None
    reply = message.reply_to_message
    # In a forum, a message with no reply of its own replies to the topic's first
    # (service) message; that is where it was said, not what it answers.
    reply_to = None
    if reply is not None and not (thread_id is not None and reply.message_id == thread_id):
        reply_to = reply.message_id
    return Incoming(
        update_id=update_id,
        chat=chat_id_of(message.chat, business=business),
        dm=message.chat.type == "private",
        thread=None if thread_id is None else str(thread_id),
        sender=sender_of(message),
        text=text,
        chat_id=message.chat.id,
        thread_id=thread_id,
        message_id=message.message_id,
        reply_to=reply_to,
        connection=connection,
        addressed=business or message.chat.type == "private" or _to_bot(message, text, me),
    )


def _to_bot(message: Message, text: str, me: BotUser | None) -> bool:
    """Whether a group message is said to the bot: a command, a mention, a reply to it."""
    if me is None or text.startswith("/"):
        return True
    if me.username and f"@{me.username.casefold()}" in text.casefold():
        return True
    reply = message.reply_to_message
    return reply is not None and reply.from_user is not None and reply.from_user.id == me.id


def chat_id_of(chat: Chat, *, business: bool = False) -> str:
    """Keel's id of a Telegram chat (see the module)."""
    if business:
        return f"tg:business:{chat.id}"
    if chat.type == "private":
        return f"tg:user:{chat.id}"
    return f"tg:chat:{chat.id}"


def sender_of(message: Message) -> str | None:
    """Who sent the message, in Keel's form; None when Telegram does not say."""
    if message.sender_chat is not None:
        return f"tg:chat:{message.sender_chat.id}"
    if message.from_user is not None:
        return f"tg:user:{message.from_user.id}"
    return None


def turn_request(
    incoming: Incoming, *, bot: str, now: datetime, reply_to: tuple[str, ...] = ()
) -> TurnRequest:
    """The turn an incoming message becomes; `reply_to` holds the Keel ids of the bot's
    messages it replies to (the adapter finds them by their Telegram ids)."""
    return TurnRequest(
        conversation=Conversation(bot=bot, chat=incoming.chat, thread=incoming.thread),
        now=now,
        dm=incoming.dm,
        input=incoming.text,
        reply_to=reply_to,
        sender=incoming.sender,
    )


def _kind(update: Update) -> str:
    for name, value in update:
        if name != "update_id" and value is not None:
            return name.replace("_", " ")
    return "empty"


def _content(message: Message) -> str:
    """What a message without text holds, for the log ("a sticker", "a service message")."""
    for name in ("sticker", "photo", "video", "voice", "audio", "document", "animation"):
        if getattr(message, name) is not None:
            return f"a {name}"
    for name in ("video_note", "location", "contact", "poll", "dice", "venue"):
        if getattr(message, name) is not None:
            return f"a {name.replace('_', ' ')}"
    return "a service message"
