"""Report windows: `7d`, `24h`, `30m` before a clock's now, or an ISO 8601 time.

The clock is passed in, never read here, so a report over the same rows and the same now
always says the same.
"""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

from keel.errors import UsageError

DEFAULT_SINCE = "7d"
_SPAN = re.compile(r"^(\d{1,6})([dhm])$")
_UNITS = {"d": "days", "h": "hours", "m": "minutes"}


def parse_since(text: str, now: datetime) -> datetime:
    """The start of the window `text` names, in UTC, relative to `now` for a span."""
    value = text.strip()
    span = _SPAN.match(value)
    if span is not None:
        amount, unit = int(span.group(1)), span.group(2)
        try:
            return now.astimezone(UTC) - timedelta(**{_UNITS[unit]: amount})
        except OverflowError:
            # Further back than a datetime reaches: every recorded time is after it.
            return datetime.min.replace(tzinfo=UTC)
    try:
        moment = datetime.fromisoformat(value)
    except ValueError:
        raise UsageError(
            f"since {text!r}: write a span such as 7d, 24h or 30m, or an ISO 8601 time "
            "(e.g. 2026-11-29T18:00:00Z)"
        ) from None
    if moment.tzinfo is None:
        return moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(UTC)
    except OverflowError:
        raise UsageError(
            f"since {text!r}: in UTC this time falls before year 1 or after year 9999 — "
            "name a time between them"
        ) from None
