"""The adapter in-process: two processes' adapters on one update stream answer each update
once (SQLite and PostgreSQL), and an answer recorded but never delivered — the process
died between the two — is delivered once by the next start."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from aiogram import Bot
from aiogram.types import Update

from keel.assemble.values import ModelStep
from keel.runtime.engine import Engine
from keel.telegram.polling import Adapter
from keel.telegram.turns import handle
from keel.telegram.updates import Incoming, read_update
from keel.telegram.webhook import client
from tests.telegram.double import TOKEN, BotAPIDouble, running_double
from tests.telegram.test_bot import message
from tests.web.conftest import prepared_brain


class Answers:
    """A model that answers every request with the same text (and counts them)."""

    def __init__(self, text: str) -> None:
        self.text = text
        self.asked = 0

    def complete(self, *_: object) -> ModelStep:
        self.asked += 1
        return ModelStep(text=self.text)


@pytest.fixture
def double() -> Iterator[BotAPIDouble]:
    with running_double() as made:
        yield made


@pytest.fixture
def brain(tmp_path: Path, database_url: str) -> Path:
    return prepared_brain(tmp_path, database_url)


async def both_handle(engines: list[Engine], model: Answers, url: str, update: Update) -> None:
    bots: list[Bot] = [client(TOKEN, url) for _ in engines]
    try:
        adapters = [Adapter(e, model, b, bot="desk") for e, b in zip(engines, bots, strict=True)]
        await asyncio.gather(*(a.handle_update(update) for a in adapters))
        await asyncio.gather(*(a.outbox.deliver_all() for a in adapters))
    finally:
        for made in bots:
            await made.session.close()


def test_two_adapters_on_one_stream_answer_each_update_once(
    brain: Path, database_url: str, double: BotAPIDouble
) -> None:
    model = Answers("On its way.")
    engines = [Engine(brain, database_url, watch=False) for _ in range(2)]
    try:
        for update_id in (1, 2, 3):
            update = Update.model_validate(message(update_id, "where is my parcel?"))
            asyncio.run(both_handle(engines, model, double.url, update))
    finally:
        for engine in engines:
            engine.close()
    assert model.asked == 3
    assert [s["reply_parameters"]["message_id"] for s in double.sent()] == [41, 42, 43]


def test_an_answer_recorded_before_a_crash_is_delivered_once_on_restart(
    brain: Path, database_url: str, double: BotAPIDouble
) -> None:
    read = read_update(Update.model_validate(message(1, "my order is late")))
    assert isinstance(read, Incoming)
    with Engine(brain, database_url, watch=False) as engine:
        # The turn and its answer are committed; the process dies before it sends.
        done = handle(
            engine, Answers("Sorry, on its way."), read, bot="desk", now=datetime.now(UTC)
        )
        assert done.answered
    assert double.sent() == []
    for _ in range(2):  # the restart, then another
        with Engine(brain, database_url, watch=False) as engine:
            bot = client(TOKEN, double.url)

            async def restart(engine: Engine = engine, bot: Bot = bot) -> None:
                try:
                    await Adapter(engine, None, bot, bot="desk").poll(until_idle=True)
                finally:
                    await bot.session.close()

            asyncio.run(restart())
    assert [s["text"] for s in double.sent()] == ["Sorry, on its way."]


class Failing:
    """A model whose provider is down."""

    def complete(self, *_: object) -> ModelStep:
        raise ConnectionError("the provider is unreachable")


def test_a_model_that_fails_costs_only_its_message(brain: Path, database_url: str) -> None:
    with Engine(brain, database_url, watch=False) as engine:
        first = read_update(Update.model_validate(message(1, "my order is late")))
        second = read_update(Update.model_validate(message(2, "and the refund?")))
        assert isinstance(first, Incoming)
        assert isinstance(second, Incoming)
        failed = handle(engine, Failing(), first, bot="desk", now=datetime.now(UTC))
        assert failed.skipped is not None
        assert "ConnectionError: the provider is unreachable" in failed.skipped
        done = handle(engine, Answers("On its way."), second, bot="desk", now=datetime.now(UTC))
        assert done.answered
