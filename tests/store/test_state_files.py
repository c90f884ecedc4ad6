"""The record of applied state files: empty before Keel migrates, one row per path after."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest
from sqlalchemy import Engine

from keel.errors import StoreError
from keel.store import Store
from keel.store.state_files import AppliedFile, record, recorded

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


def test_a_database_keel_never_migrated_has_an_empty_record(engine: Engine) -> None:
    with engine.connect() as conn:
        assert recorded(conn) == ()


def test_recording_a_path_again_replaces_its_hash_and_time(store: Store) -> None:
    amsterdam = timezone(timedelta(hours=1))
    with store.transaction() as tx:
        record(tx.connection, "state/20_b.sql", "b" * 64, NOW)
        record(tx.connection, "state/10_a.sql", "a" * 64, NOW)
    with store.transaction() as tx:
        record(
            tx.connection,
            "state/20_b.sql",
            "c" * 64,
            datetime(2026, 11, 30, 10, 0, tzinfo=amsterdam),
        )
    with store.transaction() as tx:
        assert recorded(tx.connection) == (
            AppliedFile(path="state/10_a.sql", sha256="a" * 64, applied_at=NOW),
            AppliedFile(
                path="state/20_b.sql",
                sha256="c" * 64,
                applied_at=datetime(2026, 11, 30, 9, 0, tzinfo=UTC),
            ),
        )


def test_a_time_without_a_zone_is_refused(store: Store) -> None:
    with (
        pytest.raises(StoreError, match=r"applied_at has no time zone .* pass a timezone-aware"),
        store.transaction() as tx,
    ):
        record(tx.connection, "state/10_a.sql", "a" * 64, datetime(2026, 11, 29, 18, 0))
