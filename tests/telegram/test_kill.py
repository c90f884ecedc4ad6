"""`keel telegram` killed (SIGKILL) while it delivers an answer. The answer was recorded
before its send, so it is not lost; the dead process's lease on it holds for a while
(`LEASE`), so a restart meanwhile leaves it alone and answers nothing twice; once the
lease is past, the outbox delivers it, once, without asking the model again."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest

from keel.runtime.engine import Engine
from keel.telegram.outbox import LEASE, Outbox
from keel.telegram.webhook import client
from tests.runs.processes import environ, until
from tests.runtime.driver import copy_reference
from tests.telegram.double import TOKEN, BotAPIDouble, running_double
from tests.telegram.test_bot import message


@pytest.fixture
def double() -> Iterator[BotAPIDouble]:
    with running_double() as made:
        yield made


def adapter(brain: Path, double: BotAPIDouble, model: str, *more: str) -> subprocess.Popen[str]:
    command = [sys.executable, "-m", "keel", "telegram", str(brain), "--bot", "desk"]
    command += ["--api-url", double.url, "--model", model, "--db", f"sqlite:///{brain}/k.db"]
    return subprocess.Popen(
        [*command, *more],
        env={**environ(), "KEEL_TELEGRAM_TOKEN": TOKEN},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )


def test_an_answer_in_flight_when_the_adapter_is_killed_is_delivered_once(
    tmp_path: Path, double: BotAPIDouble
) -> None:
    brain = copy_reference(tmp_path / "brain")
    script = tmp_path / "model.json"
    # One answer only: a second request to the model would fail the run of the script.
    script.write_text(json.dumps([{"text": "Sorry, it is on its way."}]), encoding="utf-8")
    model = f"scripted:{script}"
    double.held.add("sendMessage")
    double.push(message(1, "my order is late"))
    first = adapter(brain, double, model)
    try:
        until(lambda: bool(double.held_calls), what="the answer's send to reach the double")
    finally:
        os.kill(first.pid, signal.SIGKILL)
        first.communicate(timeout=30)
    assert first.returncode == -signal.SIGKILL
    assert double.sent() == []  # the send in flight never arrived
    double.held.clear()
    again = adapter(brain, double, model, "--until-idle", "--json")
    out, err = again.communicate(timeout=120)
    assert again.returncode == 0, err
    tally = json.loads(out)
    # Telegram hands the update over again (its offset was never confirmed), but it was
    # claimed with its answer: the restart neither answers it nor asks the model (whose
    # script holds one answer); and the dead process's lease on the answer still holds.
    assert (tally["updates"], tally["answered"], tally["delivered"]) == (1, 0, 0), tally
    assert double.sent() == []
    later = datetime.now(UTC) + LEASE + timedelta(seconds=1)
    with Engine(brain, f"sqlite:///{brain}/k.db", watch=False) as engine:
        delivered = asyncio.run(_deliver(engine, double, lambda: later))
    assert delivered == (1, 0)
    assert [s["text"] for s in double.sent()] == ["Sorry, it is on its way."]
    with Engine(brain, f"sqlite:///{brain}/k.db", watch=False) as engine:
        assert asyncio.run(_deliver(engine, double, lambda: later)) == (0, 0)
    assert len(double.sent()) == 1


async def _deliver(
    engine: Engine, double: BotAPIDouble, clock: Callable[[], datetime]
) -> tuple[int, int]:
    bot = client(TOKEN, double.url)
    try:
        return await Outbox(engine.store, bot, bot="desk", clock=clock).deliver_all()
    finally:
        await bot.session.close()
