"""Kept links: one per (conversation, context, entity), replaced by a new keep, expired by turn."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from keel.errors import StoreError
from keel.link.values import Conversation, KeptLink
from keel.store import Store
from keel.store import schema as keel_schema

CONV = Conversation(bot="nova", chat="tg:chat:1")
THREAD = Conversation(bot="nova", chat="tg:chat:1", thread="5")


def link(context: str, entity: str | None, until: int, **fields: str) -> KeptLink:
    return KeptLink(
        context=context,
        entity=entity,
        until_turn=until,
        kind=fields.get("kind", "reply"),  # type: ignore[arg-type]
        feature=fields.get("feature", "support"),
    )


def test_kept_links_round_trip_per_conversation(store: Store) -> None:
    links = [link("ticket", "T-1", 4), link("kb", None, 6, kind="ask", feature="help")]
    with store.transaction() as tx:
        tx.keep(CONV, links)
        tx.keep(THREAD, [link("ticket", "T-2", 9)])
    with store.transaction() as tx:
        assert tx.kept(CONV) == (links[1], links[0])
        assert tx.kept(THREAD) == (link("ticket", "T-2", 9),)
        assert tx.kept(Conversation(bot="largo", chat="tg:chat:1")) == ()


def test_keeping_a_pair_again_replaces_its_turn_kind_and_feature(store: Store) -> None:
    with store.transaction() as tx:
        tx.keep(CONV, [link("ticket", "T-1", 4), link("ticket", "T-2", 4)])
    with store.transaction() as tx:
        tx.keep(CONV, [link("ticket", "T-1", 2, kind="code", feature="crm")])
    with store.transaction() as tx:
        assert tx.kept(CONV) == (
            link("ticket", "T-1", 2, kind="code", feature="crm"),
            link("ticket", "T-2", 4),
        )


def test_the_last_of_a_pair_given_twice_in_one_call_wins(store: Store) -> None:
    with store.transaction() as tx:
        tx.keep(CONV, [link("ticket", None, 3), link("ticket", None, 7, kind="ask")])
        tx.keep(CONV, [])
    with store.transaction() as tx:
        assert tx.kept(CONV) == (link("ticket", None, 7, kind="ask"),)


def test_expire_drops_links_kept_only_for_earlier_turns(store: Store) -> None:
    with store.transaction() as tx:
        tx.keep(CONV, [link("a", None, 3), link("b", None, 4), link("c", None, 5)])
        tx.keep(THREAD, [link("a", None, 1)])
    with store.transaction() as tx:
        assert tx.expire(CONV, 4) == 1
        assert tx.expire(CONV, 4) == 0
        assert [k.context for k in tx.kept(CONV)] == ["b", "c"]
        assert tx.kept(THREAD) == (link("a", None, 1),)


def test_an_empty_entity_is_refused(store: Store) -> None:
    with (
        pytest.raises(StoreError, match="entity of kept link 'ticket' is an empty string"),
        store.transaction() as tx,
    ):
        tx.keep(CONV, [link("ticket", "", 3)])


def test_a_row_with_an_unknown_link_kind_is_named_when_read(store: Store, engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            keel_schema.kept.insert().values(
                bot="nova",
                chat="tg:chat:1",
                thread="",
                context="ticket",
                entity="",
                kind="telepathy",
                feature="support",
                until_turn=3,
            )
        )
    with (
        pytest.raises(
            StoreError,
            match="a row of keel_kept has the link kind 'telepathy' — it must be one of run, chat",
        ),
        store.transaction() as tx,
    ):
        tx.kept(CONV)
