"""what-if on journaled turns: the same decisions under the same knobs, the new ones under
changed knobs, and a note wherever the journal cannot tell."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keel.assemble.values import Fit
from keel.brain import Brain, load_brain
from keel.budget.fit import Fitted
from keel.budget.rows import ViewRows
from keel.ledger import apply_overrides, parse_overrides, refit, what_if
from keel.link.values import Conversation, Link, RunRef, TurnRequest
from keel.state.views import read_view
from keel.store import Store
from keel.store.journal_values import TurnJournal
from keel.turn.prepare import prepare_turn

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
FAMILY = Conversation(bot="nova", chat="tg:chat:-1001000000001")
LARGO = Conversation(bot="largo", chat="tg:user:9")
CHECKIN = RunRef(kind="heartbeat", id="morning-checkin")


def edit(root: Path, rel: str, old: str, new: str) -> None:
    path = root / rel
    text = path.read_text(encoding="utf-8")
    assert old in text, (rel, old)
    path.write_text(text.replace(old, new), encoding="utf-8")


def record(brain: Brain, store: Store, conversation: Conversation, **fields: Any) -> TurnJournal:
    """A turn prepared and committed, read back from the journal with its replay part."""
    prepared = prepare_turn(brain, store, TurnRequest(conversation=conversation, now=NOW, **fields))
    assert prepared.id is not None
    with store.transaction() as tx:
        found = tx.journal(prepared.id)
    assert found is not None
    return found


def under(brain: Brain, *settings: str) -> Brain:
    return apply_overrides(brain, parse_overrides(settings))


def never(journal: TurnJournal, _fitted: Fitted) -> Fit:
    raise AssertionError(f"turn {journal.id} needed no new fit")


def test_the_same_knobs_give_the_same_decisions_and_keep_the_fit(
    reference_brain: Brain, journal_store: Store
) -> None:
    turns = [
        record(reference_brain, journal_store, FAMILY, input="milk"),
        record(reference_brain, journal_store, LARGO, dm=True, run=CHECKIN),
    ]
    report = what_if(reference_brain, reference_brain, turns, since=NOW, fit_after=never)
    for shift in report.turns:
        assert shift.after == shift.journal.decisions
        assert (shift.changed, shift.fit_replayed, shift.notes) == ((), False, ())
    assert [(c.context, c.attached, c.stubbed) for c in report.contexts] == [
        ("checkin", (1, 1), (0, 0)),
        ("largo", (1, 1), (0, 0)),
        ("shopping", (1, 1), (0, 0)),
    ]


@pytest.mark.parametrize(
    ("setting", "knob"),
    [
        pytest.param("context.shopping.chars=200", "chars", id="its-own-chars"),
        pytest.param("contexts.turnChars=100", "contexts.turnChars", id="turn-chars"),
        pytest.param("contexts.maxActive=0", "contexts.maxActive", id="max-active"),
    ],
)
def test_a_lower_knob_stubs_the_context_by_that_knob(
    reference_brain: Brain, journal_store: Store, setting: str, knob: str
) -> None:
    turn = record(reference_brain, journal_store, FAMILY, input="milk")
    redone = refit(under(reference_brain, setting), turn)
    ((decision),) = redone.decisions
    assert (decision.link.context, decision.knob) == ("shopping", knob)
    fits: list[int | None] = []

    def fit_after(journal: TurnJournal, fitted: Fitted) -> Fit:
        fits.append(journal.id)
        assert [s.link.context for s in fitted.stubs] == ["shopping"]
        return Fit(ok=True, estimate=1, window=2, output_reserve=0, input_allocation=2)

    report = what_if(
        reference_brain, under(reference_brain, setting), [turn], since=NOW, fit_after=fit_after
    )
    assert fits == [turn.id]
    (shift,) = report.turns
    assert (shift.changed, shift.fit_replayed) == (("shopping",), True)
    assert report.contexts[0].stubbed == (0, 1)


def test_a_link_past_max_active_had_no_views_read_so_they_are_read_now(
    reference_brain: Brain, journal_store: Store
) -> None:
    edit(reference_brain.root, "constitution/MANIFEST.yaml", "maxActive: 3", "maxActive: 1")
    tight = load_brain(reference_brain.root)
    turn = record(tight, journal_store, LARGO, dm=True, run=CHECKIN)
    assert turn.replay is not None
    unread = [c.link.context for c in turn.replay.candidates if c.views is None]
    (stubbed,) = turn.stubbed
    assert unread == [stubbed.link.context]
    asked: list[str] = []

    def views_now(_journal: TurnJournal, link: Link) -> tuple[ViewRows, ...]:
        asked.append(link.context)
        context = tight.contexts[link.context]
        with journal_store.transaction() as tx:
            return tuple(
                read_view(tx.connection, ref, link.entity, limit=20, timeout_ms=2000)
                for ref in context.data
            )

    report = what_if(
        tight, under(tight, "contexts.maxActive=3"), [turn], since=NOW, views_now=views_now
    )
    (shift,) = report.turns
    assert asked == unread
    assert all(d.attached for d in shift.after)
    assert shift.notes == (f"{unread[0]}: the turn did not read its views; read as they are now",)
    # Without a reader the block is made of the instructions alone, and said so.
    alone = refit(under(tight, "contexts.maxActive=3"), turn)
    assert all(d.attached for d in alone.decisions)


def test_rows_are_cut_from_those_read_and_more_than_were_read_is_noted(
    reference_brain: Brain, journal_store: Store
) -> None:
    turn = record(reference_brain, journal_store, FAMILY, input="milk")
    (before,) = turn.decisions
    ((fewer),) = refit(under(reference_brain, "state.rows=2"), turn).decisions
    assert fewer.attached
    assert fewer.chars < before.chars
    edit(reference_brain.root, "constitution/MANIFEST.yaml", "rows: 20", "rows: 2")
    cut = load_brain(reference_brain.root)
    short = record(cut, journal_store, FAMILY, input="eggs")
    # Rows cut from those read are the rows a turn reads with the lower limit.
    assert short.decisions == (fewer,)
    more = refit(under(cut, "state.rows=10"), short)
    assert more.notes == ("shopping: rows beyond the 2 read are not known",)
    off = refit(under(cut, "state.rows=0"), short)
    assert off.decisions[0].chars < fewer.chars
    assert "rows are switched off" in off.fitted.attached[0].block.text


def test_instructions_edited_since_are_sized_as_recorded(
    reference_brain: Brain, journal_store: Store
) -> None:
    turn = record(reference_brain, journal_store, FAMILY, input="milk")
    edit(
        reference_brain.root,
        "features/home/shopping.context.md",
        "Add items",
        "Add many more items than before, always",
    )
    edited = load_brain(reference_brain.root)
    redone = refit(edited, turn)
    assert redone.decisions == turn.decisions
    assert redone.notes == ("shopping: its instructions changed since; sized as recorded",)


def test_a_role_gone_from_the_brain_is_not_replayed(
    reference_brain: Brain, journal_store: Store
) -> None:
    turn = record(reference_brain, journal_store, FAMILY, input="milk")
    roles = {k: v for k, v in reference_brain.roles.items() if k != "family"}
    gone = replace(reference_brain, roles=roles)
    (shift,) = what_if(reference_brain, gone, [turn], since=NOW).turns
    assert shift.after == turn.decisions
    assert shift.notes == ("role 'family' is no longer in the brain: the turn is not replayed",)


def test_a_section_or_model_knob_assembles_the_turn_again(
    reference_brain: Brain, journal_store: Store
) -> None:
    turn = record(reference_brain, journal_store, FAMILY, input="milk")
    asked: list[int | None] = []

    def fit_after(journal: TurnJournal, _fitted: Fitted) -> Fit:
        asked.append(journal.id)
        return Fit(ok=False, estimate=10, window=5, output_reserve=0, input_allocation=5)

    for setting in (
        "sections.history=100",
        "model.window=9000",
        "role.family.model.output_reserve=1",
    ):
        (shift,) = what_if(
            reference_brain, under(reference_brain, setting), [turn], since=NOW, fit_after=fit_after
        ).turns
        assert (shift.changed, shift.fit_replayed) == ((), True)
        assert shift.fit_after is not None
        assert not shift.fit_after.ok
    assert asked == [turn.id] * 3
