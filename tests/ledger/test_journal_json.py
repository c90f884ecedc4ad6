"""Journaled view rows render exactly as the rows that were read: a re-fit can trust them."""

from __future__ import annotations

import json
from datetime import UTC, date, datetime
from decimal import Decimal

from hypothesis import given, settings
from hypothesis import strategies as st

from keel.budget.render import render_block
from keel.budget.rows import ViewRows
from keel.store.journal_json import view_json, view_rows

CELLS = st.one_of(
    st.none(),
    st.text(max_size=30),
    st.integers(),
    st.floats(allow_nan=False),
    st.booleans(),
    st.decimals(allow_nan=False, allow_infinity=False),
    st.dates(),
    st.datetimes(timezones=st.just(UTC)),
)


@st.composite
def views(draw: st.DrawFn) -> ViewRows:
    width = draw(st.integers(min_value=1, max_value=4))
    rows = draw(st.lists(st.tuples(*[CELLS] * width), max_size=6))
    return ViewRows(
        view=draw(st.sampled_from(["a_view", "b_view"])),
        by=draw(st.one_of(st.none(), st.just("key"))),
        columns=tuple(f"c{i}" for i in range(width)),
        rows=tuple(rows),
        total=len(rows) + draw(st.integers(min_value=0, max_value=5)),
    )


def render(rows: ViewRows, chars: int) -> str | None:
    block = render_block(
        context="c",
        entity=None,
        instructions="Do the thing.",
        views=[rows],
        chars=chars,
    )
    return block.text if block is not None else None


@settings(max_examples=200, deadline=None)
@given(rows=views(), chars=st.integers(min_value=40, max_value=1200))
def test_rows_through_the_journals_json_render_the_same_block(rows: ViewRows, chars: int) -> None:
    again = view_rows(json.loads(json.dumps(view_json(rows))))
    assert render(again, chars) == render(rows, chars)


def test_dates_and_decimals_are_kept_as_the_block_shows_them() -> None:
    rows = ViewRows(
        view="v",
        columns=("on", "at", "amount", "none"),
        rows=(
            (date(2025, 9, 30), datetime(2025, 9, 30, 8, 0, tzinfo=UTC), Decimal("8000.50"), None),
        ),
        total=1,
    )
    assert view_json(rows)["rows"] == [["2025-09-30", "2025-09-30T08:00:00+00:00", "8000.50", None]]
