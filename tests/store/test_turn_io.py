"""A turn meets the store twice: `Tx.read_turn` at its top, `Tx.record_turn` at its end.

Each test runs on both databases (SQLite reads the conversation's rows in one query,
PostgreSQL part by part): the answers must be the same.
"""

from __future__ import annotations

from datetime import UTC, datetime

from keel.link.values import Binding, Conversation, KeptLink, Origin
from keel.payload.sessions import SessionState
from keel.store import Store
from keel.store.turn_io import HISTORY_READ

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
ROOM = Conversation(bot="nova", chat="tg:chat:1")


def test_read_turn_counts_the_turn_and_reads_what_bears_on_it(store: Store) -> None:
    with store.transaction() as tx:
        tx.next_turn(ROOM)
        tx.record_message(ROOM, turn=1, at=NOW, speaker="user", text="q1")
        tx.record_message(ROOM, turn=1, at=NOW, speaker="assistant", text="a1", message_id="m1")
        tx.record_origin(Origin(bot="nova", chat="tg:chat:1", message_id="m1", sent_at=NOW))
        tx.bind(Binding(context="client", entity="acme", chat="tg:chat:1"))
        tx.keep(ROOM, [KeptLink(context="x", entity=None, kind="reply", feature="f", until_turn=4)])
    with store.transaction() as tx:
        state = tx.read_turn(ROOM, reply_to=("m1", "unknown"))
        stored = state.stored
        assert stored.turn == 2
        assert [o.message_id for o in stored.origins] == ["m1"]
        assert [(b.context, b.entity) for b in stored.bindings] == [("client", "acme")]
        assert [k.context for k in stored.kept] == ["x"]
        assert [(m.role, m.text) for m in state.history] == [("user", "q1"), ("assistant", "a1")]
        assert state.older == 0
        assert state.sent is None, "no session named: none read"
        assert state.views is tx.connection
    with store.transaction() as tx:
        assert tx.read_turn(ROOM, session="s1").sent == SessionState()
        assert tx.read_turn(ROOM).stored.turn == 4, "each read counts a turn"


def test_read_turn_counts_the_history_it_did_not_read(store: Store) -> None:
    with store.transaction() as tx:
        turn = tx.next_turn(ROOM)
        for n in range(HISTORY_READ + 3):
            tx.record_message(ROOM, turn=turn, at=NOW, speaker="user", text=f"m{n}")
    with store.transaction() as tx:
        state = tx.read_turn(ROOM)
    assert len(state.history) == HISTORY_READ
    assert state.history[-1].text == f"m{HISTORY_READ + 2}", "the newest are read"
    assert state.older == 3
