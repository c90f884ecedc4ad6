"""Where an outbox message goes in Telegram, and how a long one is cut."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from keel.store.delivery import Outgoing
from keel.store.topics import Topic
from keel.telegram.formatting import LIMIT
from keel.telegram.outbox import Target, split_text, target_of


def outgoing(chat: str, thread: str | None = None, **more: Any) -> Outgoing:
    return Outgoing(
        row=1, bot="desk", chat=chat, thread=thread, message_id="m", text="hi", attempts=0, **more
    )


def test_a_topic_message_goes_to_its_chat_and_topic_as_a_reply() -> None:
    assert target_of(outgoing("tg:chat:-100", "12", reply_to="40")) == Target(
        chat_id=-100, thread_id=12, reply_to=40
    )


def test_a_message_to_a_topic_a_run_opened_goes_to_telegrams_thread_for_it() -> None:
    topic = Topic(
        bot="desk",
        chat="tg:chat:-100",
        thread="topic-abc",
        title="T-7",
        at=datetime.now(UTC),
        state="opened",
        surface_thread_id="1001",
    )
    assert target_of(outgoing("tg:chat:-100", "topic-abc"), topic) == Target(
        chat_id=-100, thread_id=1001
    )
    failed = replace(topic, state="failed", surface_thread_id=None, reason="Bad Request: no")
    assert target_of(outgoing("tg:chat:-100", "topic-abc"), failed) == (
        "the forum topic 'T-7' (topic-abc) could not be opened: Bad Request: no"
    )


def test_a_business_chat_goes_through_its_connection() -> None:
    assert target_of(outgoing("tg:business:55", connection="bc-1")) == Target(
        chat_id=55, connection="bc-1"
    )


@pytest.mark.parametrize(
    ("made", "says"),
    [
        pytest.param(outgoing("cli"), "'cli' is not a Telegram chat id", id="not-telegram"),
        pytest.param(outgoing("tg:chat:abc"), "is not a Telegram chat id", id="not-a-number"),
        pytest.param(
            outgoing("tg:chat:-100", "t-481"),
            "the thread 't-481' is not a Telegram forum topic id",
            id="named-thread",
        ),
        pytest.param(outgoing("tg:business:55"), "none was recorded", id="no-connection"),
    ],
)
def test_a_message_telegram_cannot_take_says_why(made: Outgoing, says: str) -> None:
    reason = target_of(made)
    assert isinstance(reason, str)
    assert says in reason


def test_a_long_answer_is_cut_at_paragraphs_within_the_limit() -> None:
    paragraphs = [f"Paragraph {n}: " + "word " * 300 for n in range(8)]
    text = "\n\n".join(paragraphs)
    assert len(text) > 10_000
    parts = split_text(text)
    assert all(len(part) <= LIMIT for part in parts)
    assert len(parts) == 4
    assert all(part.startswith("Paragraph") for part in parts)
    assert " ".join(" ".join(parts).split()) == " ".join(text.split())


def test_text_with_no_break_is_cut_at_the_limit() -> None:
    parts = split_text("x" * 9000)
    assert [len(p) for p in parts] == [LIMIT, LIMIT, 9000 - 2 * LIMIT]
    assert split_text("short") == ["short"]
