"""Delivering the outbox to Telegram: every pending message of one bot, once, in order.

A message is sent with sendMessage to its chat and forum topic, as a native reply to the
message it answers (if that one is gone, sent anyway), through its Business connection
when it has one, and marked delivered with Telegram's message id. A message's Markdown
goes as plain text plus entities, never a parse mode (`keel.telegram.formatting`), so
nothing a model writes (a stray `*` or `_`) can make Telegram refuse it; should Telegram
still refuse the entities of a part, that part goes again as plain text at once. An
approval card, a widget and Keel's command answers are not Markdown and go plain. Text over
Telegram's 4,096 UTF-16 units goes as several messages, cut at paragraph, then line,
then word boundaries, and the first one's id is the one kept. A message delivered before
and edited since (a widget whose lines changed) is edited in place with editMessageText,
under the same rules for waiting and failing.

A 429 waits the `retry_after` Telegram names; a network or server error waits longer each
time (`backoff`, doubled); each counts as an attempt, and after `MAX_ATTEMPTS` the
message is failed with the last reason. A refusal that cannot change (a bad request, a
bot blocked or removed) fails it at once. Two processes never send one message
at once: each takes it for a while (`LEASE`) before sending. A message whose chat or
thread is not Telegram's (a thread named `t-481` rather than a topic id) fails, saying so.

A forum topic a run opened (`keel.store.topics`) is opened first, with createForumTopic,
under the same rules (retried, or failed with Telegram's reason), and Telegram's
`message_thread_id` is recorded beside Keel's thread id: a message to that thread goes
into the topic. A message to a topic that could not be opened fails, naming why; one to a
topic another process is opening waits for it.
"""

from __future__ import annotations

import asyncio
import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from aiogram import Bot
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramBadRequest,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.types import FSInputFile, ReplyParameters

from keel.log import logger, shown
from keel.store.delivery import Attachment, Outgoing
from keel.store.store import Store
from keel.store.topics import Topic
from keel.telegram.cards import buttons
from keel.telegram.formatting import LIMIT, Part, formatted, plain
from keel.telegram.updates import Incoming

log = logger("telegram")

MAX_ATTEMPTS = 5
CHAT_PREFIX = "tg:"
_KINDS = ("tg:chat:", "tg:user:", "tg:business:")
CARD_MARK = re.compile(r"\s*\[card [^\]\s]+\]\s*$")

# How long a process holds a message it is sending: past it (the process died mid-send),
# another process sends it. A send is one HTTP call; this is many times one.
LEASE = timedelta(minutes=2)

Sleep = Callable[[float], Awaitable[None]]


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(frozen=True, slots=True, kw_only=True)
class Target:
    """Where a message goes, in Telegram's ids."""

    chat_id: int
    thread_id: int | None = None
    reply_to: int | None = None
    connection: str | None = None


def target_of(out: Outgoing, topic: Topic | None = None) -> Target | str:
    """Where `out` goes in Telegram, or why it cannot go there; `topic` is the forum topic
    a run opened under the message's thread, if it is one."""
    kind = next((k for k in _KINDS if out.chat.startswith(k)), None)
    number = out.chat.removeprefix(kind) if kind else ""
    if kind is None or not _is_int(number):
        return f"{out.chat!r} is not a Telegram chat id (tg:chat:<id>, tg:user:<id>)"
    thread = out.thread
    if topic is not None:
        if topic.surface_thread_id is None:
            why = topic.reason or "it is not open yet"
            return f"the forum topic {topic.title!r} ({topic.thread}) could not be opened: {why}"
        thread = topic.surface_thread_id
    if thread is not None and not _is_int(thread):
        return f"the thread {thread!r} is not a Telegram forum topic id"
    if kind == "tg:business:" and out.connection is None:
        return "a Business chat is answered through its connection, and none was recorded"
    return Target(
        chat_id=int(number),
        thread_id=None if thread is None else int(thread),
        reply_to=int(out.reply_to) if out.reply_to and _is_int(out.reply_to) else None,
        connection=out.connection,
    )


def reply_target(incoming: Incoming) -> Target:
    """Where a native reply to `incoming` goes."""
    return Target(
        chat_id=incoming.chat_id,
        thread_id=incoming.thread_id,
        reply_to=incoming.message_id,
        connection=incoming.connection,
    )


def split_text(text: str, limit: int = LIMIT) -> list[str]:
    """`text` in pieces of at most `limit` UTF-16 units, cut at the last paragraph break,
    else line break, else space, before the limit (mid-word only when there is none)."""
    return [part.text for part in plain(text, limit)]


class Outbox:
    """One bot's outbox, delivered through an aiogram `Bot`."""

    def __init__(
        self,
        store: Store,
        client: Bot,
        *,
        bot: str,
        backoff: float = 1.0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
        files: Path | None = None,
    ) -> None:
        self._store = store
        self._files = files
        self._clock = clock
        self._client = client
        self._bot = bot
        self._backoff = backoff
        self._sleep = sleep

    async def deliver_all(self) -> tuple[int, int]:
        """Open every topic waiting to be opened, then deliver every pending message,
        oldest first; (delivered, failed) messages."""
        await self.open_topics()
        delivered = failed = 0
        while True:
            batch = await asyncio.to_thread(self._pending)
            if not batch:
                return delivered, failed
            for out, card, topic in batch:
                if topic is not None and topic.state == "pending":
                    # Another process is opening it: the message waits, held (not sent)
                    # for a lease, then whoever finds it next delivers it.
                    await asyncio.to_thread(self._take, out, 0.0)
                    continue
                done = await self.deliver(out, card=card, topic=topic)
                if done is None:
                    continue  # another process is sending it
                if done:
                    delivered += 1
                else:
                    failed += 1

    def _pending(self) -> list[tuple[Outgoing, bool, Topic | None]]:
        """The pending messages, each with whether it is an approval card still pending,
        and the forum topic a run opened under its thread, if any."""
        with self._store.transaction() as tx:
            found = []
            for out in tx.outbox(self._bot, CHAT_PREFIX, self._clock()):
                card = None
                if out.message_id is not None:
                    card = tx.card_for_message(out.bot, out.chat, out.message_id)
                topic = None
                if out.thread is not None and not _is_int(out.thread):
                    topic = tx.topic(out.bot, out.chat, out.thread)
                found.append((out, card is not None and card.status == "pending", topic))
            return found

    async def open_topics(self) -> tuple[int, int]:
        """Open every forum topic runs recorded for this bot; (opened, failed)."""
        opened = failed = 0
        while True:
            batch = await asyncio.to_thread(self._topics_pending)
            if not batch:
                return opened, failed
            for topic in batch:
                done = await self.open_topic(topic)
                opened += done is True
                failed += done is False

    def _topics_pending(self) -> tuple[Topic, ...]:
        with self._store.transaction() as tx:
            return tx.pending_topics(self._bot, CHAT_PREFIX, self._clock())

    async def open_topic(self, topic: Topic) -> bool | None:
        """Open one topic with createForumTopic until it is open (True) or failed
        (False); None when another process has it to open."""
        if not await asyncio.to_thread(self._take_topic, topic, 0.0):
            return None
        chat_id = topic.chat.removeprefix("tg:chat:")
        if not topic.chat.startswith("tg:chat:") or not _is_int(chat_id):
            reason = f"{topic.chat!r} is not a Telegram group (tg:chat:<id>): it has no topics"
            await self._topic_failed(topic, reason, final=True)
            return False
        attempts = topic.attempts
        while True:
            try:
                made = await self._client.create_forum_topic(chat_id=int(chat_id), name=topic.title)
            except TelegramAPIError as exc:  # for good: not a forum, no right to manage topics
                reason, wait, final = self._verdict(exc, attempts - topic.attempts)
            else:
                surface = str(made.message_thread_id)
                await asyncio.to_thread(self._topic_done, topic, surface)
                log.info(
                    "opened the topic %s in %s as %s", topic.thread, shown(topic.chat), surface
                )
                return True
            attempts += 1
            final = final or attempts >= MAX_ATTEMPTS
            await self._topic_failed(topic, reason, final=final, wait=wait)
            if final:
                return False
            await self._sleep(wait)

    def _take_topic(self, topic: Topic, wait: float) -> bool:
        now = self._clock()
        with self._store.transaction() as tx:
            return tx.take_topic(topic, now, now + timedelta(seconds=wait) + LEASE)

    def _topic_done(self, topic: Topic, surface_thread_id: str) -> None:
        with self._store.transaction() as tx:
            tx.topic_opened(topic, surface_thread_id)

    async def _topic_failed(
        self, topic: Topic, reason: str, *, final: bool, wait: float = 0.0
    ) -> None:
        log.warning(
            "the topic %s in %s %s: %s",
            topic.thread,
            shown(topic.chat),
            "could not be opened" if final else "is not open yet",
            shown(reason),
        )

        def record() -> None:
            until = self._clock() + timedelta(seconds=wait) + LEASE
            with self._store.transaction() as tx:
                tx.topic_attempt_failed(topic, reason, final=final, until=until)

        await asyncio.to_thread(record)

    async def deliver(
        self, out: Outgoing, *, card: bool = False, topic: Topic | None = None
    ) -> bool | None:
        """Send one message until it is delivered (True) or failed (False); None when
        another process has it to send. A pending `card` goes with its Approve / Deny
        buttons; `topic` is the forum topic a run opened under its thread."""
        if not await asyncio.to_thread(self._take, out, 0.0):
            return None
        target = target_of(out, topic)
        if isinstance(target, str):
            await self._failed(out, target, final=True)
            return False
        if out.surface_message_id is not None and _is_int(out.surface_message_id):
            return await self._edit(out, target, int(out.surface_message_id))
        return await self._send_all(out, target, card=card)

    async def _send_all(self, out: Outgoing, target: Target, *, card: bool) -> bool:
        """Send every part of `out`, the first as the reply; True once all went."""
        attempts = out.attempts
        first: int | None = None
        prepared = self._prepared(out, card=card)
        if isinstance(prepared, str):
            await self._failed(out, prepared, final=True)
            return False
        parts, file = prepared
        while parts:
            try:
                sent = await self._send_one(target, out, parts[0], file, first=first, card=card)
            except TelegramAPIError as exc:
                reason, wait, final = self._verdict(exc, attempts - out.attempts)
            else:
                first = sent if first is None else first
                parts.pop(0)
                continue
            attempts += 1
            final = final or attempts >= MAX_ATTEMPTS
            await self._failed(out, reason, final=final, wait=wait)
            if final:
                return False
            await self._sleep(wait)
        if first is not None:
            await asyncio.to_thread(self._delivered, out, str(first))
        return True

    def _verdict(self, exc: TelegramAPIError, tried: int) -> tuple[str, float, bool]:
        """A failed call's reason, how long to wait before the next, and whether it was
        refused for good (a bad request, a blocked bot) rather than for now."""
        if isinstance(exc, TelegramRetryAfter):
            return f"429: {exc.message}", float(exc.retry_after), False
        if isinstance(exc, TelegramNetworkError | TelegramServerError):
            return exc.message, self._backoff * 2**tried, False
        return exc.message, 0.0, True

    def _prepared(self, out: Outgoing, *, card: bool) -> tuple[list[Part], Path | None] | str:
        """The parts a message goes in, and the file it sends; or why it cannot go."""
        # A card is Keel's text around a tool's arguments, a widget its lines of a view's
        # values: each shown as written, never Markdown.
        if card:
            # The buttons decide it: the `[card <id>]` a CLI user types `keel approve` with
            # is no word for the chat.
            return plain(CARD_MARK.sub("", out.text)), None
        if out.attachment is None:
            as_written = out.widget is not None
            return (plain(out.text) if as_written else formatted(out.text)), None
        # A file goes in one call, its caption as written.
        found = self._file(out.attachment)
        return found if isinstance(found, str) else (plain(out.text)[:1], found)

    async def _send_one(
        self,
        target: Target,
        out: Outgoing,
        part: Part,
        file: Path | None,
        *,
        first: int | None,
        card: bool,
    ) -> int:
        if file is not None and out.attachment is not None:
            return await self._send_file(target, out.attachment, out.text, file)
        return await self._send_part(target, part, first=first is None, card=card)

    def _file(self, attachment: Attachment) -> Path | str:
        """The file a message sends, or why it cannot go (no files/ folder, gone since)."""
        if self._files is None:
            return "this bot was started without the brain's files/ folder to send from"
        folder = self._files.resolve()
        found = (folder / attachment.path).resolve()
        if not found.is_relative_to(folder) or not found.is_file():
            return f"the file files/{attachment.path} is not in the brain's files/ folder any more"
        return found

    async def _send_file(
        self, target: Target, attachment: Attachment, text: str, file: Path
    ) -> int:
        """Send a message's file (sendDocument, sendVoice) with its caption."""
        caption = None if text == attachment.placeholder() else text
        reply = None
        if target.reply_to is not None:
            reply = ReplyParameters(message_id=target.reply_to, allow_sending_without_reply=True)
        where: dict[str, Any] = {
            "chat_id": target.chat_id,
            "caption": caption,
            "message_thread_id": target.thread_id,
            "business_connection_id": target.connection,
            "reply_parameters": reply,
            "parse_mode": None,
        }
        upload = FSInputFile(file)
        if attachment.kind == "voice":
            sent = await self._client.send_voice(voice=upload, **where)
        else:
            sent = await self._client.send_document(document=upload, **where)
        return sent.message_id

    async def _edit(self, out: Outgoing, target: Target, surface_id: int) -> bool:
        """Edit a message delivered before to its new text (a widget's lines), as plain
        text: its words are the view's values, not Markdown. Telegram's "message is not
        modified" means it already shows that text: delivered."""
        attempts = out.attempts
        while True:
            try:
                await self._client.edit_message_text(
                    chat_id=target.chat_id,
                    message_id=surface_id,
                    text=plain(out.text)[0].text,
                    business_connection_id=target.connection,
                    parse_mode=None,
                )
            except TelegramAPIError as exc:
                if isinstance(exc, TelegramBadRequest) and "not modified" in exc.message.casefold():
                    break
                reason, wait, final = self._verdict(exc, attempts - out.attempts)
            else:
                break
            attempts += 1
            final = final or attempts >= MAX_ATTEMPTS
            await self._failed(out, reason, final=final, wait=wait)
            if final:
                return False
            await self._sleep(wait)
        await asyncio.to_thread(self._delivered, out, str(surface_id))
        return True

    async def send_now(self, target: Target, text: str) -> int | None:
        """Send a message that is not recorded (a command's answer), once; Telegram's id,
        or None when it failed (logged)."""
        try:
            return await self._send(target, plain(text)[0], first=True, card=False)
        except TelegramAPIError as exc:
            log.warning("a command's answer was not sent: %s", shown(exc.message))
            return None

    async def _send_part(self, target: Target, part: Part, *, first: bool, card: bool) -> int:
        """Send `part`; should Telegram refuse its formatting, send it again as plain text
        (the words matter more than their look)."""
        try:
            return await self._send(target, part, first=first, card=card)
        except TelegramBadRequest as exc:
            if not (part.entities and _about_entities(exc.message)):
                raise
            log.warning("formatting refused, sent as plain text: %s", shown(exc.message))
        return await self._send(target, part.plain, first=first, card=card)

    async def _send(self, target: Target, part: Part, *, first: bool, card: bool) -> int:
        reply = None
        if first and target.reply_to is not None:
            reply = ReplyParameters(message_id=target.reply_to, allow_sending_without_reply=True)
        sent = await self._client.send_message(
            chat_id=target.chat_id,
            text=part.text,
            entities=list(part.entities) or None,
            message_thread_id=target.thread_id,
            business_connection_id=target.connection,
            reply_parameters=reply,
            reply_markup=buttons() if first and card else None,
            parse_mode=None,
        )
        return sent.message_id

    def _take(self, out: Outgoing, wait: float) -> bool:
        now = self._clock()
        with self._store.transaction() as tx:
            return tx.take(out.row, now, now + timedelta(seconds=wait) + LEASE)

    def _delivered(self, out: Outgoing, surface_id: str) -> None:
        with self._store.transaction() as tx:
            tx.mark_delivered(out.row, surface_id)

    async def _failed(self, out: Outgoing, reason: str, *, final: bool, wait: float = 0.0) -> None:
        log.warning(
            "message %s to %s %s: %s",
            out.message_id or out.row,
            shown(out.chat),
            "failed" if final else "not delivered yet",
            shown(reason),
        )

        def record() -> None:
            # Held through the wait before the next attempt, so no other process sends it.
            until = self._clock() + timedelta(seconds=wait) + LEASE
            with self._store.transaction() as tx:
                tx.attempt_failed(out.row, reason, final=final, until=until)

        await asyncio.to_thread(record)


def _about_entities(reason: str) -> bool:
    """Whether Telegram's refusal is of a message's formatting (\"can't parse entities\")."""
    return "entit" in reason.casefold()


def _is_int(text: str) -> bool:
    return text.removeprefix("-").isdigit()
