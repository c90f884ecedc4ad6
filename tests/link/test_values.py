"""The ids and text a caller names are checked once, where a room or a turn is made."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from keel.errors import UsageError
from keel.link.values import Conversation, TurnRequest, entity_problem, id_problem

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ROOM = Conversation(bot="desk", chat="tg:user:42")


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"thread": ""}, r"the thread id is empty — leave the thread out", id="empty"),
        pytest.param(
            {"chat": "x" * 3000}, r"chat id is 3,000 characters long; at most 256", id="long"
        ),
        pytest.param({"bot": "b" * 129}, r"the bot is 129 characters long; at most 128", id="bot"),
        pytest.param({"chat": "a\udcffb"}, r"the chat id is not valid UTF-8", id="bytes"),
        pytest.param({"chat": "a\x00b"}, r"the chat id holds a control character", id="nul"),
        pytest.param({"thread": "t\n1"}, r"the thread id holds a control character", id="newline"),
    ],
)
def test_a_room_that_no_database_could_store_is_refused(
    fields: dict[str, str], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        Conversation(**{"bot": "desk", "chat": "tg:user:42", **fields})


def test_the_longest_ids_and_any_printable_text_are_kept() -> None:
    room = Conversation(bot="b" * 128, chat="c" * 256, thread="Überweisung 💶 #4")
    assert room.thread == "Überweisung 💶 #4"


@pytest.mark.parametrize(
    ("fields", "message"),
    [
        pytest.param({"input": "a\udcff"}, r"the turn's input is not valid UTF-8", id="input"),
        pytest.param({"input": "a\x00"}, r"the turn's input holds a NUL character", id="nul"),
        pytest.param({"messages": ("ok", "\udc80")}, r"an incoming message is not", id="message"),
        pytest.param({"reply_to": ("",)}, r"the id of the message replied to is empty", id="reply"),
    ],
)
def test_a_turn_whose_text_cannot_be_stored_is_refused(
    fields: dict[str, object], message: str
) -> None:
    with pytest.raises(UsageError, match=message):
        TurnRequest(conversation=ROOM, now=NOW, **fields)  # type: ignore[arg-type]


def test_input_keeps_its_lines_and_tabs() -> None:
    assert TurnRequest(conversation=ROOM, now=NOW, input="a\n\tb").input == "a\n\tb"


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        pytest.param(None, None, id="no-key"),
        pytest.param("T-481", None, id="key"),
        pytest.param("k" * 201, "an entity key must be 1 to 200 characters (got 201)", id="long"),
        pytest.param("T\n1", "an entity key holds a control character ('T\\n1')", id="newline"),
    ],
)
def test_entity_keys_are_bounded_like_ids(value: str | None, problem: str | None) -> None:
    found = entity_problem(value)
    assert found == problem if problem is None else found is not None and found.startswith(problem)


def test_a_message_id_is_bounded_like_a_chat_id() -> None:
    assert id_problem("m" * 256, "the message id") is None
    assert id_problem("m" * 257, "the message id") == (
        "the message id is 257 characters long; at most 256 (docs/limits.md)"
    )
