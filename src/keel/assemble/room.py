"""Fitting state rows and older history into the room the fixed sections leave.

The first round measures what is always sent, every notice, and a guess of how many rows
and messages will fit (from their byte lengths); later rounds measure further only as
needed. Older history goes first, then rows level by level: rows are cut only with
history down to its pinned newest, and history keeps more only when every row is shown.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Sequence
from itertools import accumulate

from keel.assemble.history_cuts import HistoryCut
from keel.assemble.measure import Measured, Meter
from keel.assemble.row_cuts import RenderCut, cut_rows
from keel.tokens import MESSAGE_FRAME_TOKENS

BYTES_PER_TOKEN = 4  # for the first guess of how much to measure; English runs about so


def first_guess(
    fixed: Measured, renders: Sequence[RenderCut], history: HistoryCut, allocation: int
) -> tuple[int, int]:
    """How many row levels and history messages the first round measures.

    A guess from the texts' lengths at a few bytes a token: a short guess costs another
    round, a long one measures more than needed; neither changes what is kept.
    """
    frame = BYTES_PER_TOKEN * MESSAGE_FRAME_TOKENS  # a message's frame, in the guess's bytes
    messages = [len(text) + frame for text in history.newest.texts]
    room = (
        BYTES_PER_TOKEN * allocation - sum(map(len, fixed.texts)) - sum(messages[: history.floor])
    )
    widths = [list(accumulate(map(len, r.rows.texts), initial=0)) for r in renders]
    top = max((len(w) - 1 for w in widths), default=0)

    def width(level: int) -> int:
        return sum(w[min(level, len(w) - 1)] for w in widths)

    # One more level, or message, than the guess: the round then sees the overflow.
    level = bisect_right(range(top + 1), room, key=width) - 1
    if level < top:
        return level + 1, history.floor + 1
    room -= width(top)  # every row fits the guess: the rest goes to history, newest first
    spent = list(accumulate(messages[history.floor :], initial=0))
    return top, history.floor + bisect_right(spent, room)


def measure_first(
    fixed: Measured,
    renders: Sequence[RenderCut],
    history: HistoryCut,
    meter: Meter,
    allocation: int,
) -> tuple[int, int]:
    """One round: what is always sent, every notice, and the first guess of the rest.

    Returns the guess (row levels, history messages), for the rounds that may follow.
    """
    frames = Measured([unit for r in renders for unit in r.frame_units()])
    notices = [*(r.notice for r in renders), history.notice]
    notice_texts = Measured([text for notice in notices for text in notice.texts()])
    levels, newest = first_guess(fixed, renders, history, allocation)
    for always in (fixed, frames, notice_texts):
        meter.ask(always, len(always.texts))
    for render in renders:
        meter.ask(render.rows, levels)
    meter.ask(history.newest, newest)
    meter.run()
    frame_costs = frames.costs()
    for i, render in enumerate(renders):
        render.set_frame(frame_costs[2 * i], frame_costs[2 * i + 1])
    notice_costs = iter(notice_texts.costs())
    for notice in notices:
        notice.know(notice_costs)
    return levels, newest


def fit_room(
    room: int,
    renders: Sequence[RenderCut],
    history: HistoryCut,
    history_budget: int | None,
    meter: Meter,
    guess: tuple[int, int],
) -> None:
    """Fit rows and history into `room`.

    Older history goes first, then rows level by level: rows are cut only with history
    down to its pinned newest, and history keeps more only when every row is shown.
    """
    levels, newest = guess
    cheapest = history.cheapest(history_budget, meter)
    cut_rows(renders, room - cheapest, meter, levels)
    if all(r.shown == r.cap for r in renders):
        left = room - sum(r.tokens() for r in renders)
        limit = left if history_budget is None else min(left, history_budget)
        history.keep_within(limit, meter, newest)
        return
    history.kept = history.floor  # rows are cut: history is down to its pinned newest
    if history.tokens() > cheapest:  # the rows were cut for a cheaper history: cut again
        cut_rows(renders, room - history.tokens(), meter, levels)
