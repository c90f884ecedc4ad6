"""Every prepared turn is journaled in its own transaction; a dry run leaves nothing behind."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime

import pytest

from keel.brain import Brain, ReachEntry
from keel.budget.render import render_block
from keel.errors import FitOverflow
from keel.link.values import Conversation, TurnRequest
from keel.store import Store
from keel.store.journal_json import data_json, replay_json
from keel.tokens import Estimator
from keel.tools import TOOLS
from keel.turn.prepare import prepare_and_assemble, prepare_turn
from keel.turn.prepared import Session

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
SHOPPER = Conversation(bot="desk", chat="tg:user:42")
TICKETS = tuple(ReachEntry(context="ticket", entity=f"T-{n}") for n in range(479, 484))


def request(**fields: object) -> TurnRequest:
    return TurnRequest(conversation=SHOPPER, now=NOW, **fields)  # type: ignore[arg-type]


def test_a_turn_is_journaled_with_its_decisions_rows_sections_and_fit(
    reference_brain: Brain, journal_store: Store
) -> None:
    made = request(attach=TICKETS, open=(ReachEntry(context="policy"),), input="my orders")
    prepared, assembly = prepare_and_assemble(
        reference_brain, journal_store, made, Estimator(), TOOLS.for_role
    )
    with journal_store.transaction() as tx:
        assert prepared.id is not None
        journal = tx.journal(prepared.id)
    assert journal is not None
    assert prepared.journal is not None
    # As stored: view cells are kept as the text a block shows (see test_journal_json).
    assert data_json(journal) == data_json(prepared.journal)
    assert replay_json(journal) == replay_json(prepared.journal)
    assert (journal.turn, journal.role, journal.request) == (1, "support", made)
    assert [(d.link, d.chars) for d in journal.attached] == [
        (a.link, a.block.chars) for a in prepared.attached
    ]
    assert [(d.link, d.knob) for d in journal.stubbed] == [(s.link, s.knob) for s in prepared.stubs]
    assert journal.catalog == ("kb", "policy", "ticket")
    assert [(s.id, s.budget, s.used, s.clipped) for s in journal.sections] == [
        (s.id, s.budget_tokens, s.used_tokens, s.clipped) for s in assembly.sections
    ]
    assert (journal.fit, journal.counter) == (assembly.fit, assembly.counter)
    # The rows journaled with each attached block make that block again, exactly.
    assert journal.replay is not None
    views = {c.link.pair: c.views for c in journal.replay.candidates}
    for attached in prepared.attached:
        context = reference_brain.contexts[attached.link.context]
        again = render_block(
            context=context.id,
            entity=attached.link.entity,
            instructions=context.instructions,
            views=views[attached.link.pair] or (),
            chars=3000,
        )
        assert again is not None
        assert again.text == attached.block.text
    # Links stubbed past maxActive read no views.
    assert [c.link.pair for c in journal.replay.candidates if c.views is None] == [
        s.link.pair for s in prepared.stubs
    ]
    assert prepared.to_json()["id"] == prepared.id


def test_a_dry_run_prepares_the_same_turn_and_records_nothing(
    reference_brain: Brain, journal_store: Store
) -> None:
    cli = replace(reference_brain.roles["support"], agent="cli")
    brain = replace(reference_brain, roles={**reference_brain.roles, "support": cli})
    session = Session(id="s-1")
    first = request(open=(ReachEntry(context="policy"),), input="earrings?")
    prepare_turn(brain, journal_store, first, session=session)

    def state() -> tuple[object, ...]:
        with journal_store.transaction() as tx:
            return (
                tx.current_turn(SHOPPER),
                tx.history(SHOPPER, before_turn=99),
                tx.kept(SHOPPER),
                tx.ledger(),
                tx.journals(replay=True),
                tx.session_state("s-1"),
            )

    before = state()
    made = request(attach=TICKETS, input="and my orders?")
    dry = prepare_turn(brain, journal_store, made, session=session, dry_run=True)
    assert state() == before
    assert (dry.id, dry.dry_run, dry.turn) == (None, True, 2)
    assert dry.journal is not None
    assert dry.journal.id is None
    real = prepare_turn(brain, journal_store, made, session=session)
    assert real.id is not None
    assert not real.dry_run
    assert replace(dry, id=real.id, dry_run=False, journal=real.journal) == real


def test_a_turn_that_does_not_fit_journals_nothing(
    reference_brain: Brain, journal_store: Store
) -> None:
    # A window of 50 tokens: the role's own prompt is larger.
    tiny = replace(reference_brain.manifest.model, window=50, output_reserve=10)
    brain = replace(reference_brain, manifest=replace(reference_brain.manifest, model=tiny))
    with pytest.raises(FitOverflow, match="over the window of 50"):
        prepare_and_assemble(brain, journal_store, request(input="hi"), Estimator(), TOOLS.for_role)
    with journal_store.transaction() as tx:
        assert tx.journals() == ()
        assert tx.current_turn(SHOPPER) == 0


def test_without_an_assembly_the_journal_has_no_sections(
    reference_brain: Brain, journal_store: Store
) -> None:
    prepared = prepare_turn(reference_brain, journal_store, request(input="hi"))
    assert prepared.journal is not None
    assert (prepared.journal.sections, prepared.journal.fit, prepared.journal.counter) == (
        (),
        None,
        None,
    )


def test_the_sender_is_journaled_with_the_turn_and_read_back(
    reference_brain: Brain, journal_store: Store
) -> None:
    spoke = request(input="my orders", sender="tg:user:42")
    silent = request(input="and again")
    ids: list[int] = []
    for made in (spoke, silent):
        prepared, _ = prepare_and_assemble(
            reference_brain, journal_store, made, Estimator(), TOOLS.for_role
        )
        assert prepared.id is not None
        ids.append(prepared.id)
    with journal_store.transaction() as tx:
        one = [tx.journal(ident) for ident in ids]
        listed = tx.journals(chat=SHOPPER.chat)
    assert [j.request.sender if j else "missing" for j in one] == ["tg:user:42", None]
    assert [j.request.sender for j in listed] == [None, "tg:user:42"]
    assert one[0] is not None
    assert one[0].request == spoke
