"""The server-drawn SVG chart: escaped, scaled to a round bound, one linked dot per turn."""

from __future__ import annotations

import re
from datetime import UTC, datetime, timedelta

import pytest

from keel.web.charts import Point, size_chart

START = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


def point(minutes: int, value: int, *, stubbed: bool = False) -> Point:
    return Point(
        at=START + timedelta(minutes=minutes),
        value=value,
        href=f"/turns/{minutes}",
        label=f"turn <{minutes}>",
        stubbed=stubbed,
    )


def test_no_turns_says_so() -> None:
    assert "No turns in this window" in size_chart([], title="t", unit="chars")


def test_each_turn_is_a_linked_dot_in_time_order() -> None:
    svg = size_chart([point(30, 900, stubbed=True), point(0, 120)], title="a & b", unit="chars")
    assert svg.startswith('<svg class="chart"')
    assert '<title id="chart-title">a &amp; b</title>' in svg
    assert re.findall(r'href="(/turns/\d+)"', svg) == ["/turns/0", "/turns/30"]
    assert svg.count('class="dot stubbed"') == 1
    assert "turn &lt;30&gt;" in svg
    assert "turn <30>" not in svg
    # The axis tops at a round bound above the largest value.
    assert ">1,000</text>" in svg


@pytest.mark.parametrize(
    ("top", "bound"),
    [
        pytest.param(1, 1, id="one"),
        pytest.param(7, 10, id="seven"),
        pytest.param(1500, 2000, id="fifteen-hundred"),
        pytest.param(4001, 5000, id="just-over"),
    ],
)
def test_the_bound_is_one_two_or_five_times_a_power_of_ten(top: int, bound: int) -> None:
    svg = size_chart([point(0, top)], title="t", unit="u")
    assert f">{bound:,}</text>" in svg
