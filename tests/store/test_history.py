"""The history log: messages by turn, read back oldest first, newest `limit`, before a turn."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, select

from keel.assemble.values import Message
from keel.errors import StoreError
from keel.link.values import Conversation
from keel.store import MIGRATIONS, Store
from keel.store import schema as keel_schema

NOW = datetime(2025, 3, 1, 12, 0, tzinfo=UTC)
CONV = Conversation(bot="nova", chat="tg:chat:1")
THREAD = Conversation(bot="nova", chat="tg:chat:1", thread="5")


def _log(store: Store, conversation: Conversation, turns: int) -> None:
    """Turn n holds 'q<n>' from the user and 'a<n>' from the bot."""
    with store.transaction() as tx:
        for turn in range(1, turns + 1):
            at = NOW + timedelta(minutes=turn)
            tx.record_message(conversation, turn=turn, at=at, speaker="user", text=f"q{turn}")
            tx.record_message(conversation, turn=turn, at=at, speaker="assistant", text=f"a{turn}")


def _texts(messages: tuple[Message, ...]) -> list[str]:
    return [m.text for m in messages]


def test_history_is_oldest_first_and_stops_before_the_turn(store: Store) -> None:
    _log(store, CONV, 4)
    with store.transaction() as tx:
        messages = tx.history(CONV, before_turn=4)
        assert messages[:2] == (
            Message(role="user", text="q1"),
            Message(role="assistant", text="a1"),
        )
        assert _texts(messages) == ["q1", "a1", "q2", "a2", "q3", "a3"]
        assert _texts(tx.history(CONV, before_turn=99)) == [*_texts(messages), "q4", "a4"]
        assert tx.history(CONV, before_turn=1) == ()


@pytest.mark.parametrize(
    ("limit", "expected"),
    [
        pytest.param(3, ["a2", "q3", "a3"], id="the-newest-three"),
        pytest.param(1, ["a3"], id="one"),
        pytest.param(0, [], id="none"),
        pytest.param(50, ["q1", "a1", "q2", "a2", "q3", "a3"], id="more-than-there-are"),
    ],
)
def test_limit_keeps_the_newest_messages(store: Store, limit: int, expected: list[str]) -> None:
    _log(store, CONV, 4)
    with store.transaction() as tx:
        assert _texts(tx.history(CONV, before_turn=4, limit=limit)) == expected


def test_within_a_turn_messages_keep_the_order_they_were_recorded_in(store: Store) -> None:
    with store.transaction() as tx:
        # The later message is stamped earlier: the order recorded wins, not the clock.
        tx.record_message(CONV, turn=1, at=NOW, speaker="user", text="first")
        tx.record_message(CONV, turn=1, at=NOW - timedelta(hours=1), speaker="assistant", text="2")
        tx.record_message(CONV, turn=1, at=NOW, speaker="assistant", text="3")
    with store.transaction() as tx:
        assert _texts(tx.history(CONV, before_turn=2)) == ["first", "2", "3"]


def test_each_conversation_has_its_own_history(store: Store) -> None:
    _log(store, CONV, 2)
    with store.transaction() as tx:
        tx.record_message(THREAD, turn=1, at=NOW, speaker="user", text="in the thread")
    with store.transaction() as tx:
        assert _texts(tx.history(THREAD, before_turn=5)) == ["in the thread"]
        assert _texts(tx.history(CONV, before_turn=5)) == ["q1", "a1", "q2", "a2"]
        assert tx.history(Conversation(bot="largo", chat="tg:chat:1"), before_turn=5) == ()


def test_unicode_and_newlines_come_back_as_written(store: Store) -> None:
    text = "Grüße — 你好 👋\nzweite Zeile\twith a tab, 'quotes' and \"more\""
    with store.transaction() as tx:
        tx.record_message(CONV, turn=1, at=NOW, speaker="user", text=text, message_id="m-ü")
    with store.transaction() as tx:
        assert tx.history(CONV, before_turn=2) == (Message(role="user", text=text),)


def test_a_row_keeps_its_time_in_utc_and_its_message_id(store: Store, engine: Engine) -> None:
    plus_two = datetime(2025, 3, 1, 14, 0, tzinfo=timezone(timedelta(hours=2)))
    with store.transaction() as tx:
        tx.record_message(CONV, turn=1, at=plus_two, speaker="user", text="hi", message_id="m1")
        tx.record_message(THREAD, turn=1, at=NOW, speaker="assistant", text="yo")
    with engine.connect() as conn:
        rows = conn.execute(select(keel_schema.messages).order_by(keel_schema.messages.c.id)).all()
    assert [(r.thread, r.at, r.message_id) for r in rows] == [("", NOW, "m1"), ("5", NOW, None)]
    assert all(r.at.tzinfo is not None for r in rows)


@pytest.mark.parametrize(
    ("fields", "match"),
    [
        pytest.param({"text": ""}, r"user message of turn 1 .* is empty \(''\)", id="empty"),
        pytest.param({"text": " \n\t"}, r"is empty .* record only messages", id="blank"),
        pytest.param({"turn": -1}, r"turn number -1 — turns are counted from 0", id="turn-neg"),
        pytest.param({"speaker": "system"}, r"speaker 'system' — it must be one of", id="who"),
        pytest.param({"message_id": ""}, r"empty message id — pass None", id="message-id"),
        pytest.param({"at": datetime(2025, 3, 1)}, r"has no time zone", id="naive-time"),
    ],
)
def test_a_message_that_cannot_be_sent_is_refused(
    store: Store, fields: dict[str, object], match: str
) -> None:
    given: dict[str, object] = {"turn": 1, "at": NOW, "speaker": "user", "text": "hi", **fields}
    with pytest.raises(StoreError, match=match), store.transaction() as tx:
        tx.record_message(CONV, **given)  # type: ignore[arg-type]
    with store.transaction() as tx:
        assert tx.history(CONV, before_turn=9) == ()


def test_a_negative_limit_is_refused(store: Store) -> None:
    with store.transaction() as tx, pytest.raises(StoreError, match=r"limit of -1 is negative"):
        tx.history(CONV, before_turn=3, limit=-1)


def test_a_row_with_an_unknown_speaker_is_named_when_read(store: Store, engine: Engine) -> None:
    with engine.begin() as conn:
        conn.execute(
            keel_schema.messages.insert().values(
                bot="nova", chat="tg:chat:1", thread="", turn=1, at=NOW, speaker="tool", text="x"
            )
        )
    with (
        pytest.raises(StoreError, match=r"keel_messages has the speaker 'tool'"),
        store.transaction() as tx,
    ):
        tx.history(CONV, before_turn=2)


def test_a_database_made_by_the_first_migration_gains_history_and_sessions(
    engine: Engine,
) -> None:
    first = Store(engine, migrations=MIGRATIONS[:1])
    assert first.migrate() == ("0001_keel_tables",)
    with first.transaction() as tx:
        tx.next_turn(CONV)
    store = Store(engine)
    assert store.migrate() == tuple(name for name, _ in MIGRATIONS[1:])
    _log(store, CONV, 1)
    with store.transaction() as tx:
        assert tx.current_turn(CONV) == 1
        assert _texts(tx.history(CONV, before_turn=2)) == ["q1", "a1"]
        assert tx.session_state("s") == tx.session_state("never-saved")
