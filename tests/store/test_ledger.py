"""The spend ledger: entries read back exactly, filtered by role, bot, chat and time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from keel.errors import StoreError
from keel.link.values import Conversation
from keel.store import LedgerEntry, Store

T0 = datetime(2025, 3, 1, 8, 0, tzinfo=UTC)


def entry(turn: int, **fields: object) -> LedgerEntry:
    values: dict[str, object] = {
        "bot": "nova",
        "chat": "tg:chat:1",
        "thread": None,
        "turn": turn,
        "role": "desk",
        "at": T0 + timedelta(minutes=turn),
        "context": "ticket",
        "feature": "support",
        "entity": "T-1",
        "link": "chat",
        "chars": 100 * turn,
        "knob": None,
    }
    values.update(fields)
    return LedgerEntry(**values)  # type: ignore[arg-type]


def test_entries_round_trip_oldest_first(store: Store) -> None:
    attached = entry(2, thread="77", entity=None)
    stubbed = entry(1, link="ask", chars=0, knob="contexts.maxActive")
    with store.transaction() as tx:
        tx.record_ledger([attached, stubbed])
        tx.record_ledger([])
    with store.transaction() as tx:
        assert tx.ledger() == (stubbed, attached)
    assert stubbed.stubbed
    assert not attached.stubbed
    assert attached.conversation == Conversation(bot="nova", chat="tg:chat:1", thread="77")


def test_filters_combine(store: Store) -> None:
    rows = [
        entry(1),
        entry(2, role="sdr"),
        entry(3, bot="largo"),
        entry(4, chat="tg:chat:2"),
        entry(5, role="sdr", bot="largo", chat="tg:chat:2"),
    ]
    with store.transaction() as tx:
        tx.record_ledger(rows)
    with store.transaction() as tx:
        assert [e.turn for e in tx.ledger(role="sdr")] == [2, 5]
        assert [e.turn for e in tx.ledger(bot="largo")] == [3, 5]
        assert [e.turn for e in tx.ledger(chat="tg:chat:2")] == [4, 5]
        assert [e.turn for e in tx.ledger(role="sdr", bot="largo", chat="tg:chat:2")] == [5]
        assert [e.turn for e in tx.ledger(role="desk", bot="nova", chat="tg:chat:1")] == [1]
        assert [e.turn for e in tx.ledger(since=T0 + timedelta(minutes=3))] == [3, 4, 5]
        assert tx.ledger(role="nobody") == ()


def test_since_and_times_are_compared_as_instants_whatever_their_zone(store: Store) -> None:
    tokyo = timezone(timedelta(hours=9))
    with store.transaction() as tx:
        tx.record_ledger([entry(1, at=datetime(2025, 3, 1, 17, 0, tzinfo=tokyo))])
    with store.transaction() as tx:
        (found,) = tx.ledger(since=datetime(2025, 3, 1, 8, 0, tzinfo=UTC))
        assert tx.ledger(since=datetime(2025, 3, 1, 8, 0, 1, tzinfo=UTC)) == ()
    assert found.at == datetime(2025, 3, 1, 8, 0, tzinfo=UTC)
    assert found.at.utcoffset() == timedelta(0)


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        pytest.param(
            entry(1, at=datetime(2025, 1, 1)),
            "time of the ledger entry for 'ticket' in turn 1 has no time zone",
            id="naive-time",
        ),
        pytest.param(
            entry(1, entity=""),
            "entity of the ledger entry .* is an empty string",
            id="empty-entity",
        ),
        pytest.param(entry(1, link="psychic"), "has the link kind 'psychic'", id="unknown-link"),
    ],
)
def test_bad_entries_are_refused(store: Store, bad: LedgerEntry, match: str) -> None:
    with pytest.raises(StoreError, match=match), store.transaction() as tx:
        tx.record_ledger([bad])


def test_since_must_be_aware(store: Store) -> None:
    with pytest.raises(StoreError, match="since has no time zone"), store.transaction() as tx:
        tx.ledger(since=datetime(2025, 1, 1))
