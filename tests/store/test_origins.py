"""Message origins: recorded with their reach in order, replaced whole, pruned by age."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine, func, inspect, select, text

from keel.brain.specs import ReachEntry
from keel.errors import StoreError
from keel.link.values import Origin
from keel.store import Store
from keel.store import schema as keel_schema

SENT = datetime(2025, 3, 1, 9, 30, 15, 123456, tzinfo=UTC)
BOT, CHAT = "nova", "tg:chat:-100"


def origin(message_id: str, **fields: object) -> Origin:
    values: dict[str, object] = {
        "bot": BOT,
        "chat": CHAT,
        "message_id": message_id,
        "sent_at": SENT,
    }
    values.update(fields)
    return Origin(**values)  # type: ignore[arg-type]


def test_an_origin_round_trips_every_field(store: Store) -> None:
    full = origin(
        "m1",
        thread="77",
        feature="support",
        run="hook:ticket-opened",
        pending_card=True,
        reach=(ReachEntry(context="ticket", entity="T-481"), ReachEntry(context="kb")),
    )
    bare = origin("m2")
    with store.transaction() as tx:
        tx.record_origin(full)
        tx.record_origin(bare)
    with store.transaction() as tx:
        assert tx.origins(BOT, CHAT, ["m1", "m2"]) == (full, bare)
        # One id (a reply's, nearly always) is looked up by its own statement: the same rows.
        assert tx.origins(BOT, CHAT, ["m1"]) == (full,)
        assert tx.origins(BOT, CHAT, ["m2"]) == (bare,)
        assert tx.origins(BOT, CHAT, ["m3"]) == ()


def test_reach_entries_keep_their_order(store: Store) -> None:
    reach = tuple(ReachEntry(context=name, entity=f"e-{i}") for i, name in enumerate("zyxwvuts"))
    with store.transaction() as tx:
        tx.record_origin(origin("m1", reach=reach))
    with store.transaction() as tx:
        (found,) = tx.origins(BOT, CHAT, ["m1"])
    assert found.reach == reach


def test_times_come_back_aware_in_utc_whatever_zone_went_in(store: Store) -> None:
    paris = timezone(timedelta(hours=2))
    with store.transaction() as tx:
        tx.record_origin(origin("m1", sent_at=datetime(2025, 6, 1, 14, 0, tzinfo=paris)))
    with store.transaction() as tx:
        (found,) = tx.origins(BOT, CHAT, ["m1"])
    assert found.sent_at == datetime(2025, 6, 1, 12, 0, tzinfo=UTC)
    assert found.sent_at.utcoffset() == timedelta(0)


def test_recording_a_message_again_replaces_its_origin_and_whole_reach(
    store: Store, engine: Engine
) -> None:
    first = origin(
        "m1",
        feature="support",
        pending_card=True,
        reach=(ReachEntry(context="a"), ReachEntry(context="b"), ReachEntry(context="c")),
    )
    second = origin(
        "m1", thread="9", feature="billing", reach=(ReachEntry(context="d", entity="x"),)
    )
    with store.transaction() as tx:
        tx.record_origin(first)
    with store.transaction() as tx:
        tx.record_origin(second)
        assert tx.origins(BOT, CHAT, ["m1"]) == (second,)
    with engine.connect() as conn:
        reach_rows = conn.execute(select(func.count()).select_from(keel_schema.origin_reach))
        assert reach_rows.scalar_one() == 1


def test_lookup_answers_in_the_order_asked_and_leaves_out_unknown_ids(store: Store) -> None:
    with store.transaction() as tx:
        for message_id in ("1", "2", "3"):
            tx.record_origin(origin(message_id))
        tx.record_origin(origin("4", bot="largo"))
        tx.record_origin(origin("5", chat="tg:chat:other"))
    with store.transaction() as tx:
        found = tx.origins(BOT, CHAT, ["3", "nope", "1", "3", "4", "5"])
        assert [o.message_id for o in found] == ["3", "1"]
        assert tx.origins(BOT, CHAT, []) == ()


def test_lookup_of_many_ids_returns_them_all(store: Store) -> None:
    ids = [str(n) for n in range(700)]
    with store.transaction() as tx:
        for message_id in ids:
            tx.record_origin(
                origin(message_id, reach=(ReachEntry(context="c", entity=message_id),))
            )
    with store.transaction() as tx:
        found = tx.origins(BOT, CHAT, reversed(ids))
    assert [o.message_id for o in found] == ids[::-1]
    assert all(o.reach == (ReachEntry(context="c", entity=o.message_id),) for o in found)


@pytest.mark.usefixtures("store")
def test_lookup_by_message_goes_through_a_unique_index(engine: Engine) -> None:
    indexes = {
        tuple(i["column_names"]): bool(i["unique"])
        for i in inspect(engine).get_indexes("keel_origins")
    }
    assert indexes[("bot", "chat", "message_id")] is True


def test_sqlite_plans_the_lookup_on_the_index(sqlite_engine: Engine) -> None:
    Store(sqlite_engine).migrate()
    with sqlite_engine.connect() as conn:
        plan = [
            str(row[-1])
            for row in conn.execute(
                text(
                    "EXPLAIN QUERY PLAN SELECT * FROM keel_origins "
                    "LEFT OUTER JOIN keel_origin_reach ON keel_origin_reach.origin_id = keel_origins.id "
                    "WHERE keel_origins.bot = 'b' AND keel_origins.chat = 'c' "
                    "AND keel_origins.message_id IN ('1', '2') "
                    "ORDER BY keel_origins.id, keel_origin_reach.position"
                )
            )
        ]
    assert any("INDEX ix_keel_origins_bot_chat_message_id" in step for step in plan), plan
    assert not any(step.startswith("SCAN keel_origins") for step in plan), plan
    assert not any(step.startswith("SCAN keel_origin_reach") for step in plan), plan


def test_resolving_a_card_clears_pending(store: Store) -> None:
    with store.transaction() as tx:
        tx.record_origin(origin("card", pending_card=True))
    with store.transaction() as tx:
        assert tx.resolve_card(BOT, CHAT, "card") is True
        assert tx.resolve_card(BOT, CHAT, "unknown") is False
        assert tx.resolve_card("largo", CHAT, "card") is False
        (card,) = tx.origins(BOT, CHAT, ["card"])
    assert card.pending_card is False


def test_pruning_deletes_old_origins_but_keeps_pending_cards(store: Store, engine: Engine) -> None:
    cutoff = datetime(2025, 1, 1, tzinfo=UTC)
    old = cutoff - timedelta(days=400)
    reach = (ReachEntry(context="ticket", entity="T-1"),)
    with store.transaction() as tx:
        tx.record_origin(origin("old", sent_at=old, reach=reach))
        tx.record_origin(origin("old-2", sent_at=cutoff - timedelta(microseconds=1)))
        tx.record_origin(origin("old-card", sent_at=old, pending_card=True, reach=reach))
        tx.record_origin(origin("at-cutoff", sent_at=cutoff, reach=reach))
    with store.transaction() as tx:
        assert tx.prune_origins(cutoff) == 2
        assert tx.prune_origins(cutoff) == 0
        left = tx.origins(BOT, CHAT, ["old", "old-2", "old-card", "at-cutoff"])
    assert [o.message_id for o in left] == ["old-card", "at-cutoff"]
    with engine.connect() as conn:
        reach_rows = conn.execute(select(func.count()).select_from(keel_schema.origin_reach))
        assert reach_rows.scalar_one() == 2


def test_a_resolved_card_is_pruned_like_any_message(store: Store) -> None:
    with store.transaction() as tx:
        tx.record_origin(origin("card", sent_at=SENT - timedelta(days=30), pending_card=True))
        tx.resolve_card(BOT, CHAT, "card")
        assert tx.prune_origins(SENT) == 1


@pytest.mark.parametrize(
    ("bad", "match"),
    [
        pytest.param(
            origin("m", sent_at=datetime(2025, 1, 1)),
            "sent_at of message 'm' has no time zone",
            id="naive-time",
        ),
        pytest.param(
            origin("m", reach=(ReachEntry(context="c", entity=""),)),
            "entity of reach entry 'c' is an empty string",
            id="empty-entity",
        ),
        pytest.param(origin("m", thread=""), "thread is an empty string", id="empty-thread"),
    ],
)
def test_values_that_would_not_round_trip_are_refused(
    store: Store, bad: Origin, match: str
) -> None:
    with pytest.raises(StoreError, match=match), store.transaction() as tx:
        tx.record_origin(bad)


def test_pruning_with_a_naive_time_is_refused(store: Store) -> None:
    with pytest.raises(StoreError, match="older_than has no time zone"), store.transaction() as tx:
        tx.prune_origins(datetime(2025, 1, 1))
