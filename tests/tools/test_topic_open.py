"""`topic_open`: a topic recorded for the chat surface to open, its thread id answered at
once, bound in the same call when asked, and refused with what to do instead."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.errors import Refused
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from keel.tools import TOOLS
from keel.tools.registry import ToolContext
from keel.tools.send_message import message_id_for
from keel.tools.topic_open import topic_thread
from tests.runtime.driver import copy_reference

FORUM = "tg:chat:-1003000000001"
OPENED = re.compile(r"opened topic (topic-[0-9a-f]{12}) \('T-7 · Lamp'\) in (\S+)")


@pytest.fixture
def engine(tmp_path: Path) -> Iterator[Engine]:
    with Engine(copy_reference(tmp_path / "brain"), watch=False) as engine:
        yield engine


def desk(role: str = "support") -> TurnRequest:
    room = Conversation(bot="desk", chat=FORUM)
    return TurnRequest(conversation=room, now=datetime.now(UTC), role=role)


def test_a_topic_is_recorded_pending_and_its_thread_answered(engine: Engine) -> None:
    said = engine.call(desk(), "topic_open", {"title": "T-7  ·\nLamp"})
    found = OPENED.match(said)
    assert found is not None, said
    thread = found.group(1)
    assert found.group(2) == FORUM
    assert said.endswith(f"use thread: '{thread}' to bind it or to post there")
    with engine.store.transaction() as tx:
        topic = tx.topic("desk", FORUM, thread)
    assert topic is not None
    # Whitespace folded, as a topic's name is one line; no surface has opened it yet.
    assert (topic.title, topic.state, topic.surface_thread_id) == ("T-7 · Lamp", "pending", None)


def test_bind_binds_the_new_topic_in_the_same_call(engine: Engine) -> None:
    bind = {"context": "ticket", "entity": "T-7"}
    said = engine.call(desk(), "topic_open", {"title": "T-7 · Lamp", "bind": bind})
    found = OPENED.match(said)
    assert found is not None, said
    assert said.endswith("; bound ticket T-7 to it")
    [bound] = [b for b in engine.bindings(FORUM) if b.context == "ticket"]
    assert (bound.entity, bound.thread) == ("T-7", found.group(1))


def test_a_call_named_after_a_run_step_opens_the_same_topic_again(engine: Engine) -> None:
    with message_id_for("run-1:4"):
        first = engine.call(desk(), "topic_open", {"title": "T-7 · Lamp"})
        again = engine.call(desk(), "topic_open", {"title": "T-7 · Lamp"})
    assert first == again
    assert topic_thread("run-1:4") in first
    assert topic_thread("run-1:4") == topic_thread("run-1:4") != topic_thread("run-1:5")


@pytest.mark.parametrize(
    ("role", "arguments", "said"),
    [
        pytest.param(
            "support", {"title": " \n "}, "a topic needs a title (some text)", id="blank"
        ),
        pytest.param(
            "support", {"title": "x" * 129},
            "a topic's title is at most 128 characters; this one has 129 — shorten it",
            id="long",
        ),
        pytest.param(
            "support", {"title": "T-7", "chat": "x" * 300},
            "the chat id is 300 characters long", id="chat",
        ),
        pytest.param(
            "support", {"title": "T-7", "bind": {"context": "nowhere"}},
            "no context 'nowhere' in this brain", id="bind-unknown",
        ),
        pytest.param(
            "sdr", {"title": "T-7"},
            "role 'sdr' cannot call topic_open — add chat:topic to its `capabilities:`",
            id="no-capability",
        ),
    ],
)  # fmt: skip
def test_a_topic_that_cannot_be_is_refused_and_nothing_recorded(
    engine: Engine, role: str, arguments: dict[str, object], said: str
) -> None:
    with pytest.raises(Refused, match=re.escape(said)):
        engine.call(desk(role), "topic_open", arguments)
    with engine.store.transaction() as tx:
        pending = tx.pending_topics("desk", "", datetime.now(UTC))
    assert pending == ()
    assert [b for b in engine.bindings(FORUM) if b.context == "ticket"] == []


def test_the_preview_says_where_and_what_it_binds(engine: Engine) -> None:
    role = engine.role_for(desk())
    tool = TOOLS.get("topic_open")
    assert tool is not None
    assert tool.preview is not None
    with engine.store.reading() as tx:
        context = ToolContext(brain=engine.brain, tx=tx, request=desk(), role=role)
        shown = tool.preview(
            context, {"title": "T-7 · Lamp", "bind": {"context": "ticket", "entity": "T-7"}}
        )
    assert (
        shown == f"Open a forum topic in {FORUM}, risk moderate, bound to ticket T-7:\nT-7 · Lamp"
    )
