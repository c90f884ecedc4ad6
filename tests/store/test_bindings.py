"""Chat bindings: one per context and place, replaced in place, '' read back as None."""

from __future__ import annotations

import pytest

from keel.errors import StoreError
from keel.link.values import Binding
from keel.store import Store

CHAT = "tg:chat:-100"


def test_bindings_round_trip_with_none_for_whole_chat_every_bot_and_no_entity(
    store: Store,
) -> None:
    whole = Binding(context="client", entity=None, chat=CHAT)
    topic = Binding(context="ticket", entity="T-481", chat=CHAT, thread="77", bot="nova")
    with store.transaction() as tx:
        tx.bind(topic)
        tx.bind(whole)
        tx.bind(Binding(context="ticket", entity="T-9", chat="tg:chat:other"))
    with store.transaction() as tx:
        assert tx.bindings(CHAT) == (whole, topic)


def test_binding_again_in_the_same_place_replaces_the_entity(store: Store) -> None:
    with store.transaction() as tx:
        tx.bind(Binding(context="ticket", entity="T-1", chat=CHAT, thread="5"))
        tx.bind(Binding(context="ticket", entity="T-2", chat=CHAT, thread="5"))
    with store.transaction() as tx:
        assert tx.bindings(CHAT) == (
            Binding(context="ticket", entity="T-2", chat=CHAT, thread="5"),
        )


def test_each_place_keeps_its_own_binding(store: Store) -> None:
    places = [
        Binding(context="ticket", entity="T-1", chat=CHAT),
        Binding(context="ticket", entity="T-2", chat=CHAT, thread="5"),
        Binding(context="ticket", entity="T-3", chat=CHAT, bot="nova"),
        Binding(context="ticket", entity="T-4", chat=CHAT, thread="5", bot="nova"),
    ]
    with store.transaction() as tx:
        for binding in places:
            tx.bind(binding)
    with store.transaction() as tx:
        assert sorted(b.entity or "" for b in tx.bindings(CHAT)) == ["T-1", "T-2", "T-3", "T-4"]


def test_unbind_removes_only_that_place_and_says_whether_anything_was_there(
    store: Store,
) -> None:
    with store.transaction() as tx:
        tx.bind(Binding(context="ticket", entity="T-1", chat=CHAT))
        tx.bind(Binding(context="ticket", entity="T-2", chat=CHAT, thread="5", bot="nova"))
    with store.transaction() as tx:
        assert tx.unbind("ticket", CHAT, thread="5", bot="nova") is True
        assert tx.unbind("ticket", CHAT, thread="5", bot="nova") is False
        assert tx.unbind("ticket", CHAT, thread="5") is False
        assert tx.unbind(context="client", chat=CHAT) is False
    with store.transaction() as tx:
        assert tx.bindings(CHAT) == (Binding(context="ticket", entity="T-1", chat=CHAT),)
        assert tx.unbind("ticket", CHAT) is True
        assert tx.bindings(CHAT) == ()


def test_access_yaml_bindings_are_not_stored(store: Store) -> None:
    from_file = Binding(context="client", entity="acme", chat=CHAT, bot="nova", source="access")
    with (
        pytest.raises(StoreError, match=r"comes from access\.yaml — those live in the file"),
        store.transaction() as tx,
    ):
        tx.bind(from_file)


@pytest.mark.parametrize(
    ("binding", "field"),
    [
        pytest.param(Binding(context="c", entity="", chat=CHAT), "entity", id="entity"),
        pytest.param(Binding(context="c", entity="e", chat=CHAT, thread=""), "thread", id="thread"),
        pytest.param(Binding(context="c", entity="e", chat=CHAT, bot=""), "bot", id="bot"),
    ],
)
def test_empty_keys_are_refused(store: Store, binding: Binding, field: str) -> None:
    with (
        pytest.raises(StoreError, match=f"{field}.* is an empty string"),
        store.transaction() as tx,
    ):
        tx.bind(binding)
