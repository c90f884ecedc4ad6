"""A turn's reads of its conversation, read ahead in one query on SQLite, answer exactly as
separate reads do — also after the transaction writes what was read ahead.

Each test runs on both databases: PostgreSQL reads each part when asked, so the two
answers must agree.
"""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from keel.errors import StoreError
from keel.link.values import Binding, Conversation, KeptLink
from keel.store import Store
from keel.store.tx import Tx

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ROOM = Conversation(bot="nova", chat="tg:chat:1", thread="5")
OTHER = Conversation(bot="nova", chat="tg:chat:1", thread="6")


def _link(context: str, until_turn: int) -> KeptLink:
    return KeptLink(context=context, entity="e1", kind="reply", feature="f", until_turn=until_turn)


def _seed(store: Store) -> None:
    """Two turns in ROOM, one in OTHER, a binding of each thread and of the whole chat."""
    with store.transaction() as tx:
        for conversation in (ROOM, OTHER):
            tx.next_turn(conversation)
            tx.record_message(conversation, turn=1, at=NOW, speaker="user", text="q1")
        tx.next_turn(ROOM)
        tx.record_message(ROOM, turn=2, at=NOW, speaker="user", text="q2")
        tx.record_message(ROOM, turn=2, at=NOW, speaker="assistant", text="a2")
        for thread, context in (("5", "mine"), ("6", "theirs"), (None, "whole")):
            tx.bind(Binding(context=context, entity="x", chat="tg:chat:1", thread=thread))
        tx.keep(ROOM, [_link("old", 2), _link("live", 9)])
        tx.keep(OTHER, [_link("elsewhere", 1)])


def _turn(tx: Tx) -> int:
    """A turn's reads, in a turn's order."""
    turn = tx.next_turn(ROOM)
    assert [b.context for b in tx.bindings_here(ROOM)] == ["whole", "mine"]
    assert [k.context for k in tx.kept(ROOM)] == ["live", "old"]
    assert [m.text for m in tx.history(ROOM, before_turn=turn)] == ["q1", "q2", "a2"]
    assert [m.text for m in tx.history(ROOM, before_turn=turn, limit=2)] == ["q2", "a2"]
    assert tx.history_count(ROOM, before_turn=turn) == 3
    return turn


def test_the_reads_of_a_turn_answer_as_separate_reads(store: Store) -> None:
    _seed(store)
    with store.transaction() as tx:
        turn = _turn(tx)
        assert turn == 3
        assert tx.history(ROOM, before_turn=2) == tx.history(ROOM, before_turn=2, limit=500)
        assert [m.text for m in tx.history(ROOM, before_turn=2)] == ["q1"]
        assert tx.history_count(ROOM, before_turn=2) == 1
        assert tx.history(ROOM, before_turn=turn, limit=0) == ()
        assert [k.context for k in tx.kept(OTHER)] == ["elsewhere"]


def test_what_the_turn_writes_is_read_back(store: Store) -> None:
    _seed(store)
    with store.transaction() as tx:
        turn = _turn(tx)
        tx.record_message(ROOM, turn=turn, at=NOW, speaker="user", text="q3")
        tx.record_message(ROOM, turn=2, at=NOW, speaker="assistant", text="late")
        assert [m.text for m in tx.history(ROOM, before_turn=turn)] == ["q1", "q2", "a2", "late"]
        assert tx.history_count(ROOM, before_turn=turn) == 4
        assert tx.history_count(ROOM, before_turn=turn + 1) == 5
        tx.keep(ROOM, [_link("new", 5)])
        assert [k.context for k in tx.kept(ROOM)] == ["live", "new", "old"]


def test_expire_drops_what_ran_out_and_only_that(store: Store) -> None:
    _seed(store)
    with store.transaction() as tx:
        turn = _turn(tx)
        assert tx.expire(ROOM, turn) == 1, "'old' lasted until turn 2"
        assert tx.expire(ROOM, turn) == 0
        assert [k.context for k in tx.kept(ROOM)] == ["live"]
        tx.keep(ROOM, [_link("brief", 1)])
        assert tx.expire(ROOM, turn) == 1, "a link kept here that already ran out"
        assert tx.expire(ROOM, 10) == 1, "'live' lasted until turn 9"
        assert tx.kept(ROOM) == ()
        assert tx.expire(ROOM, 99) == 0


def test_nothing_to_expire_leaves_every_link(store: Store) -> None:
    _seed(store)
    with store.transaction() as tx:
        tx.expire(ROOM, 3)
    with store.transaction() as tx:
        turn = tx.next_turn(ROOM)
        tx.bindings_here(ROOM)
        assert tx.expire(ROOM, turn) == 0
    with store.transaction() as tx:
        assert [k.context for k in tx.kept(ROOM)] == ["live"]
        assert [k.context for k in tx.kept(OTHER)] == ["elsewhere"]


def test_what_was_read_ahead_is_not_handed_out_after_the_block(store: Store) -> None:
    _seed(store)
    with store.transaction() as tx:
        _turn(tx)
    with pytest.raises(StoreError, match="this transaction has ended"):
        tx.kept(ROOM)
    with pytest.raises(StoreError, match="this transaction has ended"):
        tx.history(ROOM, before_turn=3)
