"""`context_open` answers at once, within the context's chars, and then keeps it."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.brain import Brain, ReachEntry, load_brain
from keel.errors import Refused
from keel.link import Conversation, RunRef, TurnRequest
from keel.store import Store
from keel.tools.binding import check_bind
from keel.tools.context_open import open_context

EXAMPLE = Path(__file__).parents[2] / "examples" / "brain"
ACME = Conversation(bot="nova", chat="tg:chat:-1002000000101")
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


@pytest.fixture
def brain(reference_brain: Brain) -> Brain:
    return reference_brain


@pytest.fixture
def store(reference_store: Store) -> Store:
    return reference_store


def opened(brain: Brain, store: Store, request: TurnRequest, entry: ReachEntry) -> str:
    with store.transaction() as tx:
        return open_context(brain, tx, request, entry)


def test_open_in_a_pinned_room_answers_with_the_bound_clients_rows(
    brain: Brain, store: Store
) -> None:
    request = TurnRequest(conversation=ACME, now=NOW)
    text = opened(brain, store, request, ReachEntry(context="client"))
    assert 'name="client" entity="acme"' in text
    assert "Acme Corporation" in text
    assert "Globex" not in text
    with pytest.raises(Refused, match="bound to client 'acme'"):
        opened(brain, store, request, ReachEntry(context="client", entity="globex"))


def test_instructions_longer_than_chars_are_opened_whole_with_views_stubbed(
    brain: Brain, store: Store
) -> None:
    path = brain.root / "features" / "agency" / "client.context.md"
    path.write_text(
        path.read_text(encoding="utf-8").replace(
            "entity: client slug", "entity: client slug\nchars: 120"
        ),
        encoding="utf-8",
    )
    small = load_brain(brain.root)
    assert small.contexts["client"].chars == 120
    text = opened(
        small, store, TurnRequest(conversation=ACME, now=NOW), ReachEntry(context="client")
    )
    assert "You are in this client's own room." in text
    assert "say you cannot discuss it." in text  # the instructions, whole
    assert "1 row, not shown: no room left in this context" in text
    assert "Acme Corporation" not in text


def test_an_open_rides_the_next_keep_turns(brain: Brain, store: Store) -> None:
    desk = Conversation(bot="desk", chat="tg:user:9")
    request = TurnRequest(conversation=desk, now=NOW, role="support")
    with store.transaction() as tx:
        tx.next_turn(desk)
        text = open_context(brain, tx, request, ReachEntry(context="policy"))
        kept = tx.kept(desk)
    assert text.startswith('<context name="policy"')
    assert [(k.context, k.kind, k.until_turn) for k in kept] == [("policy", "ask", 4)]


def test_a_keyed_context_opened_without_a_key_says_to_pass_one(brain: Brain, store: Store) -> None:
    desk = Conversation(bot="desk", chat="tg:user:9")
    request = TurnRequest(conversation=desk, now=NOW, role="support")
    with pytest.raises(Refused, match="'ticket' is keyed by ticket id — open it with entity"):
        opened(brain, store, request, ReachEntry(context="ticket"))
    text = opened(brain, store, request, ReachEntry(context="ticket", entity="T-481"))
    assert 'entity="T-481"' in text


def test_an_unknown_name_suggests_only_what_the_role_may_open(brain: Brain, store: Store) -> None:
    request = TurnRequest(conversation=ACME, now=NOW)
    with pytest.raises(Refused, match=r"^no context 'clinet'") as refused:
        opened(brain, store, request, ReachEntry(context="clinet"))
    said = str(refused.value)
    assert "client" in said.removeprefix("no context 'clinet'")
    assert "cashflow" not in said
    with pytest.raises(Refused) as other:
        opened(brain, store, request, ReachEntry(context="nope"))
    assert "cashflow" not in str(other.value)


def test_an_open_the_role_cannot_make_is_refused_with_why(brain: Brain, store: Store) -> None:
    request = TurnRequest(conversation=ACME, now=NOW, role="support")
    with pytest.raises(Refused, match="is not open to role 'support'"):
        opened(brain, store, request, ReachEntry(context="cashflow"))
    family = TurnRequest(conversation=ACME, now=NOW, role="family")
    with pytest.raises(Refused, match="cannot call context_open"):
        opened(brain, store, family, ReachEntry(context="shopping"))


def test_an_open_answers_with_the_entity_asked_for_not_the_runs(brain: Brain, store: Store) -> None:
    request = TurnRequest(
        conversation=Conversation(bot="desk", chat="run:first-touch"),
        now=NOW,
        role="sdr",
        run=RunRef(kind="scenario", id="first-touch"),
        entity="p_912",
    )
    text = opened(brain, store, request, ReachEntry(context="prospect", entity="p_913"))
    assert 'entity="p_913"' in text
    assert "p_912" not in text


def test_a_binding_key_over_the_limit_is_refused(brain: Brain) -> None:
    with pytest.raises(Refused, match="1 to 200 characters"):
        check_bind(
            brain, brain.roles["support"], context="ticket", entity="T" * 300, chat="tg:chat:1"
        )
