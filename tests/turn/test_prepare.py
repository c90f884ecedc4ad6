"""The turn pipeline: its stages in one transaction, what it logs, what it resolves once."""

from __future__ import annotations

import logging
from dataclasses import replace
from datetime import UTC, datetime

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.brain.knobs import turn_settings
from keel.link import Conversation, RunRef, TurnRequest
from keel.link.reach import run_reach
from keel.link.reachable import roles_carrying_contexts
from keel.link.values import KeptLink
from keel.store import LedgerEntry, Store
from keel.store.turn_io import TurnRecords
from keel.tokens import Estimator
from keel.turn.prepare import Preparation, consult, prepare, prepare_in, prepare_turn


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


NOW = datetime(2026, 11, 29, tzinfo=UTC)
FAMILY = Conversation(bot="nova", chat="tg:chat:-1001000000001")


def test_the_pipeline_assembles_with_a_counter_and_journals_the_fit(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=FAMILY, now=NOW, input="Add oat milk")
    given = Preparation(brain=reference_brain, request=request, counter=Estimator())
    prepared, assembly = prepare(reference_store, given)
    assert assembly is not None
    assert prepared.journal is not None
    assert prepared.journal.fit == assembly.fit
    assert [s.id for s in prepared.journal.sections] == [s.id for s in assembly.sections]
    bare, none = prepare(reference_store, replace(given, counter=None))
    assert none is None
    assert bare.journal is not None
    assert bare.journal.sections == ()
    assert bare.turn == prepared.turn + 1


def test_a_turn_prepared_in_the_callers_transaction_is_undone_with_it(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=FAMILY, now=NOW, input="Add oat milk")
    consulted = consult(
        Preparation(brain=reference_brain, request=request, counter=Estimator()), reference_store
    )
    journaled: list[int | None] = []

    def turn_then_fail() -> None:
        with reference_store.transaction() as tx:
            journaled.append(prepare_in(tx, consulted)[0].id)
            raise RuntimeError("the caller's own write failed")

    with pytest.raises(RuntimeError, match="the caller's own write failed"):
        turn_then_fail()
    assert journaled != [None], "journaled inside the caller's transaction"
    with reference_store.transaction() as tx:
        assert tx.current_turn(FAMILY) == 0
        assert tx.journals() == ()


def test_the_role_run_and_settings_are_resolved_once_for_every_stage(
    reference_brain: Brain, reference_store: Store
) -> None:
    film = RunRef(kind="heartbeat", id="evening-film")
    request = TurnRequest(conversation=FAMILY, now=NOW, role="coach", run=film)
    consulted = consult(Preparation(brain=reference_brain, request=request), reference_store)
    resolved = consulted.resolved
    coach = reference_brain.roles["coach"]
    assert resolved.role is coach
    assert resolved.settings is turn_settings(reference_brain, coach), "kept per snapshot"
    entity = reference_brain.entity("heartbeat", "evening-film")
    assert entity is not None
    assert resolved.run is entity
    assert resolved.reach == run_reach(reference_brain, entity)


def test_what_a_role_admits_is_worked_out_once_per_snapshot(reference_brain: Brain) -> None:
    for role in reference_brain.roles.values():
        settings = turn_settings(reference_brain, role)
        assert settings.opens == role.can("context:read")
        assert settings.always == reference_brain.admitted(role, "always")
        asks = reference_brain.admitted(role, "ask") if settings.opens else ()
        assert [ident for ident, _ in settings.catalog] == list(asks)
        for ident, description in settings.catalog:
            assert description == (reference_brain.contexts[ident].description or "")
    assert any(turn_settings(reference_brain, r).always for r in reference_brain.roles.values())
    assert any(turn_settings(reference_brain, r).catalog for r in reference_brain.roles.values())


def test_a_turn_resolves_its_room_and_whether_its_role_carries_contexts(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=FAMILY, now=NOW, input="Add oat milk")
    resolved = consult(
        Preparation(brain=reference_brain, request=request), reference_store
    ).resolved
    assert resolved.room == reference_brain.access.room(FAMILY.bot, FAMILY.chat)
    assert resolved.room.rule is not None
    assert resolved.role.id == resolved.room.rule.role
    assert resolved.carries_contexts is (
        resolved.role.id in roles_carrying_contexts(reference_brain)
    )
    assert resolved.carries_contexts, "the family group's role carries its shopping list"


def test_record_turn_writes_everything_a_turn_decided_in_one_call(
    reference_brain: Brain, reference_store: Store
) -> None:
    request = TurnRequest(conversation=FAMILY, now=NOW, input="Add oat milk")
    journal = prepare_turn(reference_brain, reference_store, request, dry_run=True).journal
    assert journal is not None
    entry = LedgerEntry(
        bot=FAMILY.bot,
        chat=FAMILY.chat,
        thread=None,
        turn=1,
        role="family",
        at=NOW,
        context="shopping",
        feature="home",
        entity=None,
        link="always",
        chars=10,
        knob=None,
    )
    kept = KeptLink(context="shopping", entity=None, kind="reply", feature="home", until_turn=3)
    records = TurnRecords(
        conversation=FAMILY,
        turn=1,
        at=NOW,
        said="Add oat milk",
        session=None,
        keep=(kept,),
        ledger=(entry,),
        journal=journal,
    )
    with reference_store.transaction() as tx:
        ident = tx.record_turn(records)
        # A run's own instructions are not something a person said: no message.
        again = tx.record_turn(replace(records, said=None))
    with reference_store.transaction() as tx:
        assert [m.text for m in tx.history(FAMILY, before_turn=2)] == ["Add oat milk"]
        assert tx.kept(FAMILY) == (kept,)
        assert [e.context for e in tx.ledger(chat=FAMILY.chat)] == ["shopping", "shopping"]
        assert tx.journal(ident) is not None
        assert tx.journal(again) is not None
        assert ident != again
