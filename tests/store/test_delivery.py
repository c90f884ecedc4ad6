"""The outbox and the updates handled, on SQLite and PostgreSQL."""

from __future__ import annotations

import threading
from datetime import UTC, datetime, timedelta

from sqlalchemy import Engine

from keel.link.values import Conversation
from keel.store import Store
from keel.store.delivery import Delivery

AT = datetime(2026, 5, 1, 9, 0, tzinfo=UTC)
TOPIC = Conversation(bot="desk", chat="tg:chat:-100", thread="12")


def record(store: Store, text: str, message_id: str, conversation: Conversation = TOPIC) -> None:
    with store.transaction() as tx:
        tx.record_message(
            conversation,
            turn=1,
            at=AT,
            speaker="assistant",
            text=text,
            message_id=message_id,
            surface_reply_to="40",
        )


def test_a_bot_message_waits_in_the_outbox_until_delivered(store: Store) -> None:
    with store.transaction() as tx:
        tx.record_message(TOPIC, turn=1, at=AT, speaker="user", text="where is it?")
    record(store, "On its way.", "m-1")
    record(store, "Elsewhere.", "m-2", Conversation(bot="desk", chat="cli:local"))
    record(store, "Other bot.", "m-3", Conversation(bot="nova", chat="tg:chat:-100"))
    with store.transaction() as tx:
        (waiting,) = tx.outbox("desk", "tg:", AT)
        assert (waiting.text, waiting.thread, waiting.reply_to, waiting.attempts) == (
            "On its way.",
            "12",
            "40",
            0,
        )
        tx.attempt_failed(waiting.row, "network: reset", final=False)
        (again,) = tx.outbox("desk", "tg:", AT)
        assert again.attempts == 1
        assert tx.mark_delivered(waiting.row, "91") is True
        assert tx.mark_delivered(waiting.row, "92") is False  # delivered once
        assert tx.outbox("desk", "tg:", AT) == ()
        assert tx.by_surface_id("desk", "tg:chat:-100", "91") == "m-1"
        assert tx.by_surface_id("nova", "tg:chat:-100", "91") is None
        (sent,) = tx.sent_messages("tg:chat:-100", limit=1)
        assert sent.message_id == "m-3"
        shown = [m.to_json() for m in tx.sent_messages("tg:chat:-100")]
    assert [(m["message_id"], m["delivery"], m["surface_message_id"]) for m in shown] == [
        ("m-1", {"state": "delivered", "attempts": 2, "reason": None}, "91"),
        ("m-3", {"state": "pending", "attempts": 0, "reason": None}, None),
    ]


def test_a_message_that_cannot_be_delivered_fails_with_the_reason(store: Store) -> None:
    record(store, "Hello", "m-1")
    with store.transaction() as tx:
        (waiting,) = tx.outbox("desk", "tg:", AT)
        tx.attempt_failed(waiting.row, "Bad Request: chat not found", final=True)
        assert tx.outbox("desk", "tg:", AT) == ()
        (sent,) = tx.sent_messages("tg:chat:-100")
    assert sent.delivery == Delivery(
        state="failed", attempts=1, reason="Bad Request: chat not found"
    )


def test_an_update_is_claimed_once(store: Store) -> None:
    with store.transaction() as tx:
        assert tx.update_handled("desk", 7) is False
        assert tx.claim_update("desk", 7, AT) is True
        tx.note_update_turn("desk", 7, 3)
    with store.transaction() as tx:
        assert tx.claim_update("desk", 7, AT) is False
        assert tx.claim_update("nova", 7, AT) is True
        assert tx.update_handled("desk", 7) is True


def test_two_processes_claiming_one_update_at_once_get_it_once(engine: Engine) -> None:
    Store(engine).migrate()
    won: list[bool] = []
    start = threading.Barrier(2)

    def claim() -> None:
        store = Store(engine)
        start.wait()
        with store.transaction() as tx:
            won.append(tx.claim_update("desk", 8, AT))

    threads = [threading.Thread(target=claim) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(won) == [False, True]


def test_a_message_one_process_is_sending_is_not_handed_to_another(store: Store) -> None:
    record(store, "On its way.", "m-1")
    later = AT + timedelta(minutes=5)
    with store.transaction() as tx:
        (waiting,) = tx.outbox("desk", "tg:", AT)
        assert tx.take(waiting.row, AT, AT + timedelta(minutes=2)) is True
    with store.transaction() as tx:
        assert tx.outbox("desk", "tg:", AT) == ()
        assert tx.take(waiting.row, AT, AT + timedelta(minutes=2)) is False
        # The process that took it died: once its lease ends, another takes it.
        assert [m.row for m in tx.outbox("desk", "tg:", later)] == [waiting.row]
        assert tx.take(waiting.row, later, later + timedelta(minutes=2)) is True
        assert tx.mark_delivered(waiting.row, "91") is True
        assert tx.outbox("desk", "tg:", later + timedelta(hours=1)) == ()
