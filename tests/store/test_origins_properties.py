"""Any origin — unicode ids, keys and contexts, any reach — reads back exactly as recorded."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

from hypothesis import given, settings
from hypothesis import strategies as st
from sqlalchemy import create_engine
from sqlalchemy.pool import StaticPool

from keel.brain.specs import ReachEntry
from keel.link.values import Origin
from keel.store import Store

names = st.text(min_size=1, max_size=30)
optional = st.none() | names
utc_times = st.datetimes(
    min_value=datetime(1971, 1, 1), max_value=datetime(2199, 1, 1), timezones=st.just(UTC)
)
offsets = st.integers(min_value=-14 * 60, max_value=14 * 60).map(
    lambda minutes: timezone(timedelta(minutes=minutes))
)
# Any instant, seen from any fixed offset: it must come back as the same instant in UTC.
times = st.builds(lambda at, zone: at.astimezone(zone), utc_times, offsets)
reach_entries = st.builds(ReachEntry, context=names, entity=optional)
origins = st.builds(
    Origin,
    bot=names,
    chat=names,
    message_id=names,
    sent_at=times,
    thread=optional,
    feature=optional,
    run=optional,
    reach=st.lists(reach_entries, max_size=6).map(tuple),
    pending_card=st.booleans(),
)


@settings(max_examples=100, deadline=None)
@given(batch=st.lists(origins, min_size=1, max_size=8))
def test_origins_round_trip_on_sqlite(batch: list[Origin]) -> None:
    engine = create_engine("sqlite://", poolclass=StaticPool)
    try:
        store = Store(engine)
        store.migrate()
        with store.transaction() as tx:
            for item in batch:
                tx.record_origin(item)
        # The last record of a message is the one kept.
        latest = {(o.bot, o.chat, o.message_id): o for o in batch}
        with store.transaction() as tx:
            for (bot, chat, message_id), expected in latest.items():
                (found,) = tx.origins(bot, chat, [message_id])
                assert found == expected
                assert found.sent_at.tzinfo is not None
                assert found.sent_at.utcoffset() == timedelta(0)
    finally:
        engine.dispose()
