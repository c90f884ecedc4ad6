"""The cut policy: older history gives way before state rows, in `fit` and in `give_way`."""

from __future__ import annotations

import pytest

from keel.assemble.fitting import fit, give_way, measure_first
from keel.assemble.history_cuts import HistoryCut, sendable
from keel.assemble.measure import Measured, Meter
from keel.assemble.row_cuts import RenderCut, RenderInput
from keel.assemble.values import Message
from keel.tokens.estimate import Estimator

COUNTER = Estimator()


def parts(rows: int, messages: int) -> tuple[list[RenderCut], HistoryCut]:
    renders = [
        RenderCut.of(
            RenderInput(
                view=name,
                header=f"{name}: id | note",
                rows=tuple(f"{name}-{i:03d} | " + "note " * 6 for i in range(rows)),
            ),
            COUNTER.count,
        )
        for name in ("orders", "tickets")
    ]
    chat = [
        Message(role="user" if i % 2 == 0 else "assistant", text=f"m{i:03d} " + "word " * 20)
        for i in range(messages)
    ]
    return renders, HistoryCut.of(sendable(chat), 2, COUNTER.count)


def fitted(room: int, rows: int = 30, messages: int = 30) -> tuple[list[RenderCut], HistoryCut]:
    """Rows and history fitted into `room` tokens, with no section budget."""
    renders, history = parts(rows, messages)
    meter = Meter(COUNTER)
    guess = measure_first(Measured(["fixed"]), renders, history, meter, room)
    fit(room, renders, history, lambda _section: None, meter, guess)
    return renders, history


def cost(renders: list[RenderCut], history: HistoryCut) -> int:
    return sum(r.tokens() for r in renders) + history.tokens()


@pytest.mark.parametrize("room", [300, 600, 1200, 2000, 3000])
def test_rows_are_cut_only_once_history_is_down_to_its_pinned_newest(room: int) -> None:
    renders, history = fitted(room)
    assert cost(renders, history) <= room
    if any(r.shown < r.cap for r in renders):
        assert history.kept == history.floor, "history gives way before any row"
    else:
        assert history.kept > history.floor or history.kept == len(history.messages)


def test_with_room_for_everything_nothing_is_cut() -> None:
    renders, history = fitted(100_000)
    assert [r.shown for r in renders] == [r.cap for r in renders] == [30, 30]
    assert history.kept == len(history.messages)


def test_one_unit_gives_way_at_a_time_history_first_then_rows() -> None:
    renders, history = fitted(100_000, rows=3, messages=5)
    cuts = []
    while give_way(renders, history):
        cuts.append((history.kept, [r.shown for r in renders]))
    assert cuts == [
        (4, [3, 3]),
        (3, [3, 3]),
        (2, [3, 3]),  # history is down to its pinned newest two
        (2, [2, 2]),
        (2, [1, 1]),
        (2, [0, 0]),
    ]
    assert not give_way(renders, history), "nothing is left to cut"
