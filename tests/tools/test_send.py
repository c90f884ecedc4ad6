"""Sending from a run: one message per id, keys bounded like every other key."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from keel.brain.specs import ReachEntry
from keel.errors import Refused, UsageError
from keel.link.values import Conversation, RunRef
from keel.runtime.engine import Engine
from keel.tools import origin_of, record_send
from keel.tools.send import send_preview
from tests.runtime.driver import copy_reference

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
OWNER = Conversation(bot="nova", chat="tg:user:1")
BEAT = RunRef(kind="heartbeat", id="evening-film")


@pytest.fixture
def engine(tmp_path: Path, database_url: str) -> Iterator[Engine]:
    with Engine(copy_reference(tmp_path / "brain"), database_url, watch=False) as engine:
        yield engine


def film(engine: Engine, message_id: str, *, about: str = "tt2582802", at: datetime = NOW) -> None:
    engine.send(OWNER, "Tonight", run=BEAT, about_entity=about, message_id=message_id, at=at)


def test_a_message_id_sent_twice_is_refused(engine: Engine) -> None:
    film(engine, "m1")
    with pytest.raises(Refused, match=r"message 'm1' was already sent in tg:user:1 at 2026-11-29"):
        film(engine, "m1", about="tt0111161")
    assert len(engine.history(OWNER.chat)) == 1


def test_a_replayed_send_records_nothing_new(engine: Engine) -> None:
    origin = origin_of(
        engine.brain,
        conversation=OWNER,
        message_id="run-1:send-0",
        sent_at=NOW,
        run=BEAT,
        about_entity="tt2582802",
    )
    later = NOW + timedelta(seconds=5)
    with engine.store.transaction() as tx:
        assert record_send(tx, engine.brain, origin, "Tonight", replay=True) is True
        again = origin_of(
            engine.brain,
            conversation=OWNER,
            message_id="run-1:send-0",
            sent_at=later,
            run=BEAT,
            about_entity="tt2582802",
        )
        assert record_send(tx, engine.brain, again, "Tonight", replay=True) is False
        other = origin_of(
            engine.brain, conversation=OWNER, message_id="run-1:send-0", sent_at=later
        )
        with pytest.raises(Refused, match="already sent"):
            record_send(tx, engine.brain, other, "Something else", replay=True)
    assert [m.text for m in engine.history(OWNER.chat)] == ["Tonight"]


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        pytest.param(
            {"about": "k" * 201},
            Refused,
            r"about: \{entity\}: an entity key must be 1 to 200 characters \(got 201\)",
            id="about-long",
        ),
        pytest.param(
            {"about": "tt\n1"}, Refused, r"an entity key holds a control character", id="about-nl"
        ),
        pytest.param(
            {"message_id": "m" * 300},
            UsageError,
            r"the message id is 300 characters long; at most 256",
            id="id-long",
        ),
    ],
)
def test_keys_and_ids_of_a_send_are_bounded(
    engine: Engine, fields: dict[str, str], error: type[Exception], message: str
) -> None:
    with pytest.raises(error, match=message):
        film(engine, fields.get("message_id", "m1"), about=fields.get("about", "tt2582802"))
    assert engine.history(OWNER.chat) == ()


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param(
            {"run": BEAT, "about_entity": "tt2582802", "about_context": "rating"},
            "name either about: {entity} or about: {context}, not both",
            id="both",
        ),
        pytest.param(
            {"about_entity": "tt2582802"},
            "about: applies to a message a run sends — add the run (--run KIND:ID)",
            id="no-run",
        ),
        pytest.param(
            {"run": BEAT, "about_context": "weather"},
            "about: {context: 'weather'} is not in the reach of heartbeat:evening-film (it "
            "reaches ",
            id="context-out-of-reach",
        ),
    ],
)
def test_what_a_send_is_about_must_be_one_thing_in_the_runs_reach(
    engine: Engine, fields: dict[str, Any], message: str
) -> None:
    with pytest.raises(Refused, match=re.escape(message)):
        engine.send(OWNER, "Tonight", message_id="m1", at=NOW, **fields)
    assert engine.history(OWNER.chat) == ()


def test_a_send_about_a_context_carries_that_context_alone_without_a_key(engine: Engine) -> None:
    origin = engine.send(
        OWNER, "Ratings are in.", run=BEAT, about_context="rating", message_id="m1", at=NOW
    )
    assert origin.reach == (ReachEntry(context="rating"),)
    assert origin.run == BEAT.key
    assert [m.text for m in engine.history(OWNER.chat)] == ["Ratings are in."]


def test_a_send_with_no_text_records_its_origin_and_no_history(engine: Engine) -> None:
    engine.send(OWNER, "  ", run=BEAT, about_entity="tt2582802", message_id="m1", at=NOW)
    assert engine.history(OWNER.chat) == ()
    with pytest.raises(Refused, match="message 'm1' was already sent"):
        film(engine, "m1")


@pytest.mark.parametrize(
    ("about", "risk", "first_line"),
    [
        pytest.param({}, "", "Send to tg:user:1 thread 7:", id="plain"),
        pytest.param(
            {"about_entity": "tt1"},
            "",
            "Send to tg:user:1 thread 7, about entity tt1:",
            id="entity",
        ),
        pytest.param(
            {"about_context": "rating"},
            "high",
            "Send to tg:user:1 thread 7, about context rating, risk high:",
            id="context",
        ),
    ],
)
def test_a_send_preview_says_where_what_about_and_the_risk_then_the_text(
    about: dict[str, str], risk: str, first_line: str
) -> None:
    where = Conversation(bot="nova", chat="tg:user:1", thread="7")
    preview = send_preview(where, "Tonight:\nthe film.", risk=risk, **about)
    assert preview == f"{first_line}\nTonight:\nthe film."
