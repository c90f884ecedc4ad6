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
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta

from aiogram import Bot
from aiogram.exceptions import (
    TelegramAPIError,
    TelegramBadRequest,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.types import ReplyParameters

from keel.log import logger, shown
from keel.store.delivery import Outgoing
from keel.store.store import Store
from keel.telegram.cards import buttons
from keel.telegram.formatting import LIMIT, Part, formatted, plain
from keel.telegram.updates import Incoming

log = logger("telegram")

MAX_ATTEMPTS = 5
CHAT_PREFIX = "tg:"
_KINDS = ("tg:chat:", "tg:user:", "tg:business:")

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


def target_of(out: Outgoing) -> Target | str:
    """Where `out` goes in Telegram, or why it cannot go there."""
    kind = next((k for k in _KINDS if out.chat.startswith(k)), None)
    number = out.chat.removeprefix(kind) if kind else ""
    if kind is None or not _is_int(number):
        return f"{out.chat!r} is not a Telegram chat id (tg:chat:<id>, tg:user:<id>)"
    if out.thread is not None and not _is_int(out.thread):
        return f"the thread {out.thread!r} is not a Telegram forum topic id"
    if kind == "tg:business:" and out.connection is None:
        return "a Business chat is answered through its connection, and none was recorded"
    return Target(
        chat_id=int(number),
        thread_id=None if out.thread is None else int(out.thread),
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
    ) -> None:
        self._store = store
        self._clock = clock
        self._client = client
        self._bot = bot
        self._backoff = backoff
        self._sleep = sleep

    async def deliver_all(self) -> tuple[int, int]:
        """Deliver every pending message, oldest first; (delivered, failed)."""
        delivered = failed = 0
        while True:
            batch = await asyncio.to_thread(self._pending)
            if not batch:
                return delivered, failed
            for out, card in batch:
                done = await self.deliver(out, card=card)
                if done is None:
                    continue  # another process is sending it
                if done:
                    delivered += 1
                else:
                    failed += 1

    def _pending(self) -> list[tuple[Outgoing, bool]]:
        """The pending messages, each with whether it is an approval card still pending."""
        with self._store.transaction() as tx:
            found = []
            for out in tx.outbox(self._bot, CHAT_PREFIX, self._clock()):
                card = None
                if out.message_id is not None:
                    card = tx.card_for_message(out.bot, out.chat, out.message_id)
                found.append((out, card is not None and card.status == "pending"))
            return found

    async def deliver(self, out: Outgoing, *, card: bool = False) -> bool | None:
        """Send one message until it is delivered (True) or failed (False); None when
        another process has it to send. A pending `card` goes with its Approve / Deny
        buttons."""
        if not await asyncio.to_thread(self._take, out, 0.0):
            return None
        target = target_of(out)
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
        # A card is Keel's text around a tool's arguments, a widget its lines of a view's
        # values: each shown as written, never Markdown.
        parts = plain(out.text) if card or out.widget is not None else formatted(out.text)
        while parts:
            try:
                sent = await self._send_part(target, parts[0], first=first is None, card=card)
            except TelegramRetryAfter as exc:
                reason, wait, final = f"429: {exc.message}", float(exc.retry_after), False
            except (TelegramNetworkError, TelegramServerError) as exc:
                reason, wait, final = (
                    exc.message,
                    self._backoff * 2 ** (attempts - out.attempts),
                    False,
                )
            except TelegramAPIError as exc:  # refused for good: a bad request, a blocked bot
                reason, wait, final = exc.message, 0.0, True
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
            except TelegramRetryAfter as exc:
                reason, wait, final = f"429: {exc.message}", float(exc.retry_after), False
            except (TelegramNetworkError, TelegramServerError) as exc:
                reason, wait = exc.message, self._backoff * 2 ** (attempts - out.attempts)
                final = False
            except TelegramBadRequest as exc:
                if "not modified" not in exc.message.casefold():
                    reason, wait, final = exc.message, 0.0, True
                else:
                    break
            except TelegramAPIError as exc:
                reason, wait, final = exc.message, 0.0, True
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
