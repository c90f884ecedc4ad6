"""explain: every context of the brain, and why it did or did not reach a turn."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from keel.brain import Brain, ReachEntry, load_brain
from keel.ledger import explain
from keel.link.values import Binding, Conversation, RunRef, TurnRequest
from keel.store import Store
from keel.store.journal_values import CodeAnswer, TurnJournal
from keel.turn.prepare import prepare_turn

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)
ACME = Conversation(bot="nova", chat="tg:chat:-1002000000101")
OWNER = Conversation(bot="nova", chat="tg:user:1")
SHOPPER = Conversation(bot="desk", chat="tg:user:42")
FORUM = "tg:chat:-1003000000001"
TOPIC = Conversation(bot="desk", chat=FORUM, thread="t-900")


def journaled(brain: Brain, store: Store, conversation: Conversation, **fields: Any) -> TurnJournal:
    prepared = prepare_turn(brain, store, TurnRequest(conversation=conversation, now=NOW, **fields))
    assert prepared.journal is not None
    return prepared.journal


def why(brain: Brain, journal: TurnJournal) -> dict[str, list[str]]:
    """`context[@entity]` -> [status, what it says]."""
    found: dict[str, list[str]] = {}
    for row in explain(brain, journal).rows:
        name = row.context + (f"@{row.entity}" if row.entity else "")
        detail = row.reason or f"{row.link} {row.chars if row.chars is not None else row.knob}"
        found[name] = [row.status, detail]
    return found


def test_a_pinned_room_explains_what_attached_what_was_refused_and_the_rest(
    reference_brain: Brain, journal_store: Store
) -> None:
    journal = journaled(
        reference_brain,
        journal_store,
        ACME,
        open=(ReachEntry(context="client", entity="globex"), ReachEntry(context="leave")),
    )
    found = why(reference_brain, journal)
    # Every context of the brain has a row, and the turn's own pairs have theirs.
    assert set(found) == {*reference_brain.contexts, "client@acme", "client@globex"} - {"client"}
    assert found["client@acme"] == ["attached", f"chat {journal.decisions[0].chars}"]
    assert found["client@globex"][0] == "refused"
    assert "bound to client 'acme'" in found["client@globex"][1]
    assert found["leave"][0] == "refused"
    assert "is not open to role 'client-desk'" in found["leave"][1]
    assert found["policy"] == [
        "not linked",
        "role 'client-desk' does not list it in `contexts:`; not opened",
    ]
    assert found["pick"] == [
        "not linked",
        "role 'client-desk' does not list it in `contexts:`; not a run",
    ]
    # What the store reads back explains the same.
    with journal_store.transaction() as tx:
        assert journal.id is not None
        stored = tx.journal(journal.id)
    assert stored is not None
    assert explain(reference_brain, stored) == explain(reference_brain, journal)


def test_a_run_that_reaches_a_reply_context_says_its_when_has_no_run(
    reference_brain: Brain, journal_store: Store
) -> None:
    beat = journaled(
        reference_brain,
        journal_store,
        Conversation(bot="nova", chat="run:evening-film"),
        role="coach",
        run=RunRef(kind="heartbeat", id="evening-film"),
    )
    found = why(reference_brain, beat)
    assert found["pick"][0] == "attached"
    assert found["rating"] == ["not linked", "the run reaches it, but its when has no run"]
    assert found["routine"] == [
        "not linked",
        "role 'coach' does not list it in `contexts:`; the run's reach does not hold it",
    ]


def test_offered_not_opened_and_another_bots_binding(
    reference_brain: Brain, journal_store: Store
) -> None:
    shop = why(reference_brain, journaled(reference_brain, journal_store, SHOPPER))
    assert shop["kb"] == ["not linked", "offered in the catalog, not opened"]
    assert shop["ticket"] == [
        "not linked",
        "no binding in this chat; offered in the catalog, not opened",
    ]
    desk = why(
        reference_brain, journaled(reference_brain, journal_store, replace(ACME, bot="desk"))
    )
    assert desk["client"] == [
        "not linked",
        "role 'support' does not list it in `contexts:`; 'client' is pinned to 'acme' in this "
        "chat by bot 'nova' (an access.yaml rule): it attaches to that bot's turns only, and "
        "holds this bot's links there to 'acme'; not a reply; not opened",
    ]


def test_a_stub_names_its_knob_and_a_dry_run_has_no_id(
    reference_brain: Brain, journal_store: Store
) -> None:
    manifest = reference_brain.root / "constitution" / "MANIFEST.yaml"
    manifest.write_text(manifest.read_text().replace("maxActive: 3", "maxActive: 1"))
    brain = load_brain(reference_brain.root)
    prepared = prepare_turn(
        brain,
        journal_store,
        TurnRequest(
            conversation=Conversation(bot="largo", chat="tg:user:9"),
            now=NOW,
            dm=True,
            run=RunRef(kind="heartbeat", id="morning-checkin"),
        ),
        dry_run=True,
    )
    assert prepared.journal is not None
    explained = explain(brain, prepared.journal)
    assert (explained.id, explained.dry_run) == (None, True)
    rows = {r.context: r for r in explained.rows}
    statuses = sorted((rows[c].status, rows[c].knob) for c in ("checkin", "largo"))
    assert statuses == [("attached", None), ("stubbed", "contexts.maxActive")]


def test_a_switched_off_feature_a_broken_file_and_brain_code_say_so(
    reference_brain: Brain, journal_store: Store
) -> None:
    root = reference_brain.root
    hr = root / "features" / "hr" / "FEATURE.md"
    hr.write_text(hr.read_text().replace("enabled: true", "enabled: false"))
    rates = root / "features" / "billing" / "rates.context.md"
    rates.write_text(rates.read_text().replace("when: [ask]", "when: [aks]"))
    brain = load_brain(root)
    journal = journaled(brain, journal_store, SHOPPER)
    code = (
        CodeAnswer(context="kb", failure="TimeoutError after 2000 ms"),
        CodeAnswer(context="policy", answer="no"),
    )
    found = why(brain, replace(journal, code=code))
    assert found["leave"] == ["not linked", "its feature 'hr' is switched off"]
    assert found["rates"][0] == "not linked"
    assert found["rates"][1].startswith("its file did not load: features/billing/rates.context.md:")
    assert found["kb"] == ["not linked", "its brain code failed: TimeoutError after 2000 ms"]
    assert found["policy"] == ["not linked", "its brain code answered no"]


def test_a_kept_link_that_ended_says_when(reference_brain: Brain, journal_store: Store) -> None:
    opened = journaled(
        reference_brain, journal_store, SHOPPER, open=(ReachEntry(context="policy"),)
    )
    assert [d.link.context for d in opened.attached] == ["policy"]
    for _ in range(3):
        held = journaled(reference_brain, journal_store, SHOPPER)
        assert [d.link.context for d in held.attached] == ["policy"]
    ended = journaled(reference_brain, journal_store, SHOPPER)
    assert why(reference_brain, ended)["policy"] == [
        "not linked",
        "offered in the catalog, not opened; its kept link ended with turn 4",
    ]


def test_one_pair_refused_for_an_open_and_an_attach_is_two_rows_each_with_its_link(
    reference_brain: Brain, journal_store: Store
) -> None:
    globex = ReachEntry(context="client", entity="globex")
    journal = journaled(reference_brain, journal_store, ACME, open=(globex,), attach=(globex,))
    refused = [
        (r.link, r.reason)
        for r in explain(reference_brain, journal).rows
        if (r.context, r.entity, r.status) == ("client", "globex", "refused")
    ]
    bound = "this chat is bound to client 'acme'; 'globex' belongs to another entity and is "
    # Each says its link, and what that link can do instead: an attach is no ask.
    assert sorted(refused) == [
        ("ask", bound + "refused here — ask without a key to read 'acme'"),
        (
            "code",
            bound + "refused here — attach it without a key to read 'acme', or take 'globex' "
            "to a room of its own",
        ),
    ]


def test_another_bots_thread_binding_is_on_the_row_its_code_answered_no(
    reference_brain: Brain, journal_store: Store
) -> None:
    nova = Binding(context="ticket", entity="T-480", chat=FORUM, thread="t-900", bot="nova")
    with journal_store.transaction() as tx:
        tx.bind(nova)
    journal = journaled(reference_brain, journal_store, TOPIC, role="support")
    note = (
        "'ticket' is pinned to 'T-480' in thread t-900 by bot 'nova' (a context_bind call): it "
        "attaches to that bot's turns only, and holds this bot's links there to 'T-480'"
    )
    assert journal.log == (note,)
    answered = replace(journal, code=(CodeAnswer(context="ticket", answer="no"),))
    assert why(reference_brain, answered)["ticket"] == [
        "not linked",
        f"its brain code answered no; {note}",
    ]
    assert why(reference_brain, journal)["ticket"] == [
        "not linked",
        f"{note}; offered in the catalog, not opened",
    ]


def test_a_key_refused_in_another_bots_thread_names_the_thread_and_the_bot(
    reference_brain: Brain, journal_store: Store
) -> None:
    nova = Binding(context="ticket", entity="T-480", chat=FORUM, thread="t-900", bot="nova")
    with journal_store.transaction() as tx:
        tx.bind(nova)
    journal = journaled(
        reference_brain,
        journal_store,
        TOPIC,
        role="support",
        attach=(ReachEntry(context="ticket", entity="T-481"),),
    )
    assert why(reference_brain, journal)["ticket@T-481"] == [
        "refused",
        "thread t-900 is bound to ticket 'T-480' by bot 'nova'; 'T-481' belongs to another "
        "entity and is refused here — attach it without a key to read 'T-480', or take "
        "'T-481' to a room of its own",
    ]
