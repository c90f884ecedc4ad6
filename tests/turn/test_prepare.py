"""Preparing a turn logs what it refused, so an operator sees a tenant key turned away."""

from __future__ import annotations

import logging
from datetime import UTC, datetime

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.link import Conversation, TurnRequest
from keel.store import Store
from keel.turn.prepare import prepare_turn


def test_a_refused_link_is_logged_with_the_room_and_the_reason(
    reference_brain: Brain, reference_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    room = Conversation(bot="nova", chat="tg:chat:-1002000000101")
    request = TurnRequest(
        conversation=room,
        now=datetime(2026, 11, 29, tzinfo=UTC),
        open=(ReachEntry(context="client", entity="globex"),),
    )
    with caplog.at_level(logging.WARNING, logger="keel.turn"):
        prepared = prepare_turn(reference_brain, reference_store, request)
    assert [r.kind for r in prepared.refused] == ["ask"]
    assert len(caplog.records) == 1
    message = caplog.records[0].getMessage()
    assert message.startswith("turn 1 in nova/tg:chat:-1002000000101: ask link to client@globex")
    assert "bound to client 'acme'" in message


def test_a_view_that_cannot_be_read_is_stubbed_and_the_turn_is_recorded(
    reference_brain: Brain, reference_store: Store, caplog: pytest.LogCaptureFixture
) -> None:
    shopping = reference_brain.root / "features/home/shopping.context.md"
    text = shopping.read_text(encoding="utf-8")
    shopping.write_text(
        text.replace("data: [home_shopping_open]", "data: [home_shopping_open, home_no_such_view]"),
        "utf-8",
    )
    brain = load_brain(reference_brain.root)
    family = Conversation(bot="nova", chat="tg:chat:-1001000000001")
    request = TurnRequest(conversation=family, now=datetime(2026, 11, 29, tzinfo=UTC), input="hi")
    prepared = prepare_turn(brain, reference_store, request)
    block = prepared.attached[0].block.text
    assert '<view name="home_no_such_view">could not be read (the log says why)</view>' in block
    assert "home_no_such_view" not in block.split("could not be read")[1], "no database text"
    (record,) = [r for r in caplog.records if r.name == "keel.state"]
    assert "view home_no_such_view could not be read:" in record.getMessage()
    assert '<view name="home_shopping_open">' in block
    with reference_store.transaction() as tx:
        assert tx.current_turn(family) == 1, "the turn was committed"
