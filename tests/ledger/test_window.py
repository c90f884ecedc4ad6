"""Report windows: spans before the clock's now, or an ISO time."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta, timezone

import pytest

from keel.errors import UsageError
from keel.ledger import parse_since

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


@pytest.mark.parametrize(
    ("text", "start"),
    [
        pytest.param("7d", NOW - timedelta(days=7), id="days"),
        pytest.param("24h", NOW - timedelta(hours=24), id="hours"),
        pytest.param(" 30m ", NOW - timedelta(minutes=30), id="minutes"),
        pytest.param("0d", NOW, id="nothing-before-now"),
        pytest.param("2026-11-01T00:00:00Z", datetime(2026, 11, 1, tzinfo=UTC), id="iso-utc"),
        pytest.param(
            "2026-11-01T09:00:00+09:00", datetime(2026, 11, 1, tzinfo=UTC), id="iso-zoned"
        ),
        pytest.param("2026-11-01", datetime(2026, 11, 1, tzinfo=UTC), id="a-date-is-utc"),
        pytest.param("999999d", datetime.min.replace(tzinfo=UTC), id="before-any-date"),
    ],
)
def test_a_window_starts_where_its_text_says(text: str, start: datetime) -> None:
    found = parse_since(text, NOW)
    assert found == start
    assert found.tzinfo is not None


def test_a_span_counts_back_from_a_zoned_now_in_utc() -> None:
    tokyo = NOW.astimezone(timezone(timedelta(hours=9)))
    assert parse_since("1h", tokyo) == NOW - timedelta(hours=1)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("7 days", id="words"),
        pytest.param("7w", id="weeks"),
        pytest.param("", id="empty"),
    ],
)
def test_anything_else_says_how_to_write_a_window(text: str) -> None:
    with pytest.raises(
        UsageError, match=r"write a span such as 7d, 24h or 30m, or an ISO 8601 time"
    ):
        parse_since(text, NOW)


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("0001-01-01T00:00:00+14:00", id="before-year-1"),
        pytest.param("9999-12-31T23:59:59-14:00", id="after-year-9999"),
    ],
)
def test_a_time_no_utc_datetime_holds_says_so(text: str) -> None:
    with pytest.raises(UsageError, match=r"falls before year 1 or after year 9999"):
        parse_since(text, NOW)
