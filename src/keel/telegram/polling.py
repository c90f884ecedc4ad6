"""The bot loop: updates in by long polling, each a turn, and the outbox out after each.

`Adapter.poll` first delivers what a previous process left pending (a crash between a
turn and its delivery, run posts and cards recorded by `keel run`, `fire` or `worker`),
then asks for updates from the last one confirmed. Telegram forgets an update only when a
later getUpdates names an offset past it; Keel does not rely on that alone: an update is
claimed in its turn's transaction, so one handed out twice is answered once.

With `until_idle` the loop stops once Telegram has nothing new (an empty getUpdates,
which also confirms everything handled) and the outbox is empty: for tests and cron.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from aiogram import Bot
from aiogram.exceptions import (
    ClientDecodeError,
    TelegramAPIError,
    TelegramNetworkError,
    TelegramRetryAfter,
    TelegramServerError,
)
from aiogram.types import CallbackQuery, Message, Update

from keel.errors import UsageError
from keel.log import logger, shown
from keel.runtime.engine import Engine
from keel.runtime.models import ModelClient
from keel.telegram.cards import press
from keel.telegram.outbox import MAX_ATTEMPTS, Outbox, Sleep, reply_target
from keel.telegram.turns import Handled, handle
from keel.telegram.updates import BotUser, Skipped, chat_id_of, read_update

log = logger("telegram")

POLL_TIMEOUT = 30  # seconds a long poll waits for an update


def _now() -> datetime:
    return datetime.now(UTC)


@dataclass(slots=True)
class Tally:
    """What one `poll` did."""

    updates: int = 0
    answered: int = 0
    skipped: list[str] = field(default_factory=list)
    decided: int = 0
    delivered: int = 0
    failed: int = 0


class Adapter:
    """One brain bot as a Telegram bot, through an aiogram `Bot`."""

    def __init__(
        self,
        engine: Engine,
        model: ModelClient | None,
        client: Bot,
        *,
        bot: str,
        backoff: float = 1.0,
        sleep: Sleep = asyncio.sleep,
        clock: Callable[[], datetime] = _now,
    ) -> None:
        self._engine = engine
        self._model = model
        self._client = client
        self._bot = bot
        self._backoff = backoff
        self._sleep = sleep
        self._clock = clock
        self._bot_user: BotUser | None = None
        self.outbox = Outbox(
            engine.store,
            client,
            bot=bot,
            backoff=backoff,
            sleep=sleep,
            files=engine.brain.root / "files",
        )

    async def handle_update(self, update: Update) -> Handled:
        """One update: a turn answered and recorded for delivery, a card decided by its
        button, or skipped and logged."""
        if update.callback_query is not None:
            return await self._pressed(update.callback_query)
        read = read_update(update, await self._me())
        if isinstance(read, Skipped):
            log.info("update %s skipped: %s", read.update_id, read.reason)
            return Handled(skipped=read.reason)
        done = await asyncio.to_thread(
            handle, self._engine, self._model, read, bot=self._bot, now=self._clock()
        )
        if done.skipped is not None:
            log.info("update %s in %s: %s", read.update_id, shown(read.chat), done.skipped)
        if done.command is not None:
            await self.outbox.send_now(reply_target(read), done.command)
        return done

    async def _me(self) -> BotUser:
        if self._bot_user is None:
            me = await self._client.me()  # asked once; aiogram keeps it too
            self._bot_user = BotUser(id=me.id, username=me.username)
        return self._bot_user

    async def _pressed(self, query: CallbackQuery) -> Handled:
        message = query.message
        if message is None:
            await self._answer(query, "This card is too old to decide here.")
            return Handled(skipped="a button on a message Telegram no longer shows")
        pressed = await asyncio.to_thread(
            press,
            self._engine.store,
            bot=self._bot,
            chat=chat_id_of(message.chat),
            surface_message_id=str(message.message_id),
            data=query.data or "",
            by=f"tg:user:{query.from_user.id}",
            brain=self._engine.brain,
        )
        await self._answer(query, pressed.answer)
        if pressed.decided is None:
            return Handled(skipped=pressed.answer)
        shown_text = message.text if isinstance(message, Message) else None
        try:
            await self._client.edit_message_text(
                chat_id=message.chat.id,
                message_id=message.message_id,
                text=f"{shown_text}\n\n{pressed.decided}" if shown_text else pressed.decided,
                reply_markup=None,
            )
        except TelegramAPIError as exc:  # the decision stands; only its display failed
            log.warning("the decided card could not be edited: %s", shown(exc.message))
        return Handled(decided=pressed.decided)

    async def _answer(self, query: CallbackQuery, text: str) -> None:
        try:
            await self._client.answer_callback_query(query.id, text=text)
        except TelegramAPIError as exc:
            log.warning("a button press could not be answered: %s", shown(exc.message))

    async def poll(self, *, until_idle: bool = False, timeout: int = POLL_TIMEOUT) -> Tally:
        """Handle updates and deliver the outbox, for ever (or, `until_idle`, until both
        are done)."""
        tally = Tally()
        await self._deliver(tally)
        offset: int | None = None
        while True:
            updates = await self._updates(offset, 0 if until_idle else timeout)
            for update in updates:
                done = await self.handle_update(update)
                tally.updates += 1
                tally.answered += done.answered
                tally.decided += done.decided is not None
                if done.skipped is not None:
                    tally.skipped.append(f"{update.update_id}: {done.skipped}")
                offset = update.update_id + 1
                await self._deliver(tally)
            if until_idle and not updates:
                return tally

    async def deliver(self) -> tuple[int, int]:
        """Refresh the live widgets (an edit for each whose lines changed), then deliver
        the outbox; (delivered, failed)."""
        await asyncio.to_thread(self._engine.refresh_widgets)
        return await self.outbox.deliver_all()

    async def _deliver(self, tally: Tally) -> None:
        delivered, failed = await self.deliver()
        tally.delivered += delivered
        tally.failed += failed

    def _masked(self, said: str) -> str:
        """`said` without the bot's token (a request's URL holds it): never in a log."""
        return said.replace(self._client.token, "<token>")

    async def _updates(self, offset: int | None, timeout: int) -> list[Update]:
        failures = 0
        while True:
            try:
                return await self._client.get_updates(offset=offset, timeout=timeout)
            except TelegramRetryAfter as exc:
                wait, reason = float(exc.retry_after), exc.message
            except (TelegramNetworkError, TelegramServerError) as exc:
                wait, reason = self._backoff * 2**failures, exc.message
            except ClientDecodeError as exc:
                raise UsageError(
                    "the Bot API address answered getUpdates with something that is not the "
                    f"Bot API ({self._masked(str(exc))[:200]}) — check --api-url"
                ) from None
            reason = self._masked(reason)
            failures += 1
            if failures >= MAX_ATTEMPTS:
                raise UsageError(
                    f"Telegram did not answer getUpdates {failures} times (last: {reason}) — "
                    "check the network, the token and --api-url"
                )
            log.warning("getUpdates failed (%s); again in %.1f s", shown(reason), wait)
            await self._sleep(wait)
