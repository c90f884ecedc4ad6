"""CLI-agent sessions in the store: a state saved whole, read back equal, across restarts."""

from __future__ import annotations

from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine

from keel.errors import StoreError
from keel.payload.sessions import SentContext, SessionState
from keel.store import Store
from keel.store import schema as keel_schema

TICKET = SentContext(
    context="ticket",
    entity="T-ü 1",
    instructions="a" * 64,
    views=(("queue", "b" * 64), ("card", "c" * 64)),
)
KB = SentContext(context="kb", entity=None, instructions="d" * 64, instructions_sent=False)
STATE = SessionState(contexts=(TICKET, KB))


def test_a_saved_state_reads_back_equal(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.session_state("cli-1") == SessionState()
        tx.save_session("cli-1", STATE)
    with store.transaction() as tx:
        read = tx.session_state("cli-1")
    assert read == STATE
    # The views keep the block's order, not the alphabet's.
    assert read.sent("ticket", "T-ü 1") == TICKET
    assert read.sent("kb") == KB


def test_saving_replaces_the_whole_state_of_that_session_only(store: Store) -> None:
    with store.transaction() as tx:
        tx.save_session("cli-1", STATE)
        tx.save_session("cli-2", STATE)
    newer = SentContext(context="ticket", entity="T-ü 1", instructions="e" * 64)
    with store.transaction() as tx:
        tx.save_session("cli-1", SessionState(contexts=(newer,)))
    with store.transaction() as tx:
        assert tx.session_state("cli-1") == SessionState(contexts=(newer,))
        assert tx.session_state("cli-2") == STATE
        tx.save_session("cli-2", SessionState())
    with store.transaction() as tx:
        assert tx.session_state("cli-2") == SessionState()


def test_a_save_in_a_failed_transaction_leaves_the_old_state(store: Store) -> None:
    with store.transaction() as tx:
        tx.save_session("cli-1", STATE)

    def failing_turn() -> None:
        with store.transaction() as tx:
            tx.save_session("cli-1", SessionState())
            raise RuntimeError("the turn failed")

    with pytest.raises(RuntimeError, match="the turn failed"):
        failing_turn()
    with store.transaction() as tx:
        assert tx.session_state("cli-1") == STATE


def test_a_session_survives_a_new_store_on_the_same_sqlite_file(tmp_path: Path) -> None:
    url = f"sqlite:///{(tmp_path / 'keel.db').as_posix()}"
    first = create_engine(url)
    try:
        store = Store(first)
        store.migrate()
        with store.transaction() as tx:
            tx.save_session("cli-1", STATE)
    finally:
        first.dispose()
    second = create_engine(url)
    try:
        store = Store(second)
        assert store.migrate() == ()
        with store.transaction() as tx:
            assert tx.session_state("cli-1") == STATE
    finally:
        second.dispose()


@pytest.mark.parametrize(
    ("session", "state", "match"),
    [
        pytest.param("", STATE, r"session id is an empty string", id="empty-session"),
        pytest.param(
            "cli-1",
            SessionState(contexts=(SentContext(context="kb", entity="", instructions="0"),)),
            r"entity of 'kb' in session 'cli-1' is an empty string",
            id="empty-entity",
        ),
    ],
)
def test_empty_keys_are_refused(
    store: Store, session: str, state: SessionState, match: str
) -> None:
    with pytest.raises(StoreError, match=match), store.transaction() as tx:
        tx.save_session(session, state)


def test_a_row_whose_views_are_not_a_json_map_is_named(store: Store, engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            keel_schema.sessions.insert().values(
                session="cli-1",
                context="kb",
                entity="",
                instructions="0",
                instructions_sent=True,
                views="[1, 2]",
            )
        )
    with (
        pytest.raises(StoreError, match=r"views of 'kb' in session 'cli-1' .* are not a JSON"),
        store.transaction() as tx,
    ):
        tx.session_state("cli-1")
