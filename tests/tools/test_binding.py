"""`context_bind`: what it stores, and what it says when a binding would do less than asked."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.errors import Refused
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.runtime.driver import copy_reference

FORUM = "tg:chat:-1003000000001"


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(copy_reference(tmp_path / "brain"), watch=False) as engine:
        yield engine


def test_a_context_without_a_chat_link_is_bound_with_a_note(engine: Engine) -> None:
    said = engine.bind(context="kb", chat=FORUM, thread="77", bot="desk")
    assert said.startswith(f"bound kb in {FORUM} thread 77 — note: its when: has no chat link")
    assert said.endswith("add chat to its when: to carry it")
    assert "pins the room's key" not in said, "kb takes no key: there is none to pin"


def test_a_context_with_a_chat_link_is_bound_without_one(engine: Engine) -> None:
    said = engine.bind(context="ticket", entity="T-481", chat=FORUM, thread="77", bot="desk")
    assert said == f"bound ticket in {FORUM} thread 77"


@pytest.mark.parametrize(
    ("place", "message"),
    [
        pytest.param({"thread": "t" * 300}, "the thread id is 300 characters long", id="thread"),
        pytest.param({"thread": "7\n7"}, "the thread id holds a control character", id="newline"),
        pytest.param({"chat": "x" * 300}, "the chat id is 300 characters long", id="chat"),
        pytest.param({"bot": "b" * 200}, "the bot is 200 characters long", id="bot"),
    ],
)
def test_a_place_no_turn_could_name_is_refused(
    engine: Engine, place: dict[str, str], message: str
) -> None:
    room = Conversation(bot="desk", chat=FORUM)
    request = TurnRequest(conversation=room, now=datetime.now(UTC), role="support")
    with pytest.raises(Refused, match=message):
        engine.call(request, "context_bind", {"context": "ticket", "entity": "T-481", **place})
