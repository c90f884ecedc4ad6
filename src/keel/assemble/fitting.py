"""Fitting a turn's cuttable parts — state rows and older history — into their room.

Only two parts of a turn's input are ever cut: the rows of the role's state renders and
the conversation's older history. Everything else is fixed (see `keel.assemble.assembler`).
This module owns every cut and the one policy that orders them, `GIVES_WAY`:

1. older history gives way first, oldest message first, down to its pinned newest;
2. then state rows, bottom rows first, one level across every render at a time.

So rows are cut only with history down to its pinned newest, and history keeps more only
when every row is shown. `fit` applies the policy by arithmetic on measured costs;
`give_way` applies it one unit at a time, for the last few tokens the arithmetic could not
see (the request as sent is counted as a whole). `keel.assemble.measure` only measures:
the first round measures what is always sent, every notice, and a guess of how many rows
and messages will fit (from their byte lengths); later rounds measure further only as the
cuts need.
"""

from __future__ import annotations

from bisect import bisect_right
from collections.abc import Callable, Sequence
from itertools import accumulate

from keel.assemble.history_cuts import HistoryCut
from keel.assemble.measure import CostOf, Measured, Meter, grow
from keel.assemble.row_cuts import RenderCut
from keel.tokens import MESSAGE_FRAME_TOKENS

BYTES_PER_TOKEN = 4  # for the first guess of how much to measure; English runs about so
# What gives way first when the input is over its room (see the module docstring).
GIVES_WAY = ("history", "rows")

Budgets = Callable[[str], int | None]


def fit(
    room: int,
    renders: Sequence[RenderCut],
    history: HistoryCut,
    budgets: Budgets,
    meter: Meter,
    guess: tuple[int, int],
) -> None:
    """Cut rows and history to fit: each render within its own budget, history within its
    own, then both within `room`, in the order of `GIVES_WAY`."""
    cap_renders(renders, [budgets(r.section_id) for r in renders], meter)
    history_budget = budgets("history")
    levels, newest = guess
    cheapest = cheapest_history(history, history_budget, meter)
    # History is at its cheapest: rows get all the room it leaves.
    cut_rows(renders, room - cheapest, meter, levels)
    if all(r.shown == r.cap for r in renders):
        # Every row is shown: history takes what the rows leave.
        left = room - sum(r.tokens() for r in renders)
        limit = left if history_budget is None else min(left, history_budget)
        keep_history_within(history, limit, meter, newest)
        return
    history.kept = history.floor  # rows are cut: history is down to its pinned newest
    if history.tokens() > cheapest:  # the rows were cut for a cheaper history: cut again
        cut_rows(renders, room - history.tokens(), meter, levels)


def give_way(renders: Sequence[RenderCut], history: HistoryCut) -> bool:
    """Cut one more unit, in the order of `GIVES_WAY`: the oldest message still shown (not
    a pinned one), else the bottom level of rows. False when nothing is left to cut."""
    cuts = {"history": lambda: _drop_message(history), "rows": lambda: _drop_row_level(renders)}
    return any(cuts[part]() for part in GIVES_WAY)


# ---------------------------------------------------------------------------------------
# The first round: what is always sent, every notice, and a guess of the rest


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
        notice.take_costs(notice_costs)
    return levels, newest


# ---------------------------------------------------------------------------------------
# History's cuts


def cheapest_history(history: HistoryCut, budget: int | None, meter: Meter) -> int:
    """The least history may cost: its pinned newest and the notice, unless keeping more
    costs less (a notice can cost more than the few short messages it stands for)."""
    best = history.tokens(history.floor)
    sums = history.newest.sums
    meter.measure_until_over(history.newest, best - 1)
    for n in range(history.floor + 1, history.newest.measured + 1):
        if sums[n] >= best:  # and so are all that keep more
            break
        cost = history.tokens(n)
        if cost < best and (budget is None or cost <= budget):
            best = cost
    return best


def keep_history_within(history: HistoryCut, room: int, meter: Meter, guess: int) -> None:
    """Keep the newest messages that fit `room`; the pinned ones whatever it says."""
    meter.measure_until_over(history.newest, room, first=max(history.floor, guess))
    least = history.newest.sums.__getitem__
    fitting = largest_fitting(history.newest.measured, room, least, history.tokens)
    history.kept = max(history.floor, fitting)


def _drop_message(history: HistoryCut) -> bool:
    """Leave out the oldest message still shown, unless only pinned ones are left."""
    if history.kept <= history.floor:
        return False
    history.kept -= 1
    return True


# ---------------------------------------------------------------------------------------
# The rows' cuts


def cap_renders(renders: Sequence[RenderCut], budgets: Sequence[int | None], meter: Meter) -> None:
    """Cap each render at the most rows its own budget allows, measuring as far as needed."""
    pending = [(r, b) for r, b in zip(renders, budgets, strict=True) if b is not None]
    while True:
        waiting = []
        for render, budget in pending:
            if render.rows.complete or render.least(render.rows.measured) > budget:
                top = render.rows.measured
                render.cap = largest_fitting(top, budget, render.least, render.tokens)
            else:
                waiting.append((render, budget))
        if not waiting:
            return
        for render, _ in waiting:
            meter.ask(render.rows, grow(render.rows.measured))
        meter.run()
        pending = waiting


def cut_rows(renders: Sequence[RenderCut], room: int, meter: Meter, guess: int) -> None:
    """Show the most row levels (one row of every view a level) that fit `room`.

    Levels are measured in rounds from the top (`guess` levels first) until the rows
    measured alone overflow `room` or every row within its cap is measured.
    """
    top = max((r.cap for r in renders), default=0)

    def least(level: int) -> int:
        return sum(r.least(min(level, r.cap)) for r in renders)

    def cost(level: int) -> int:
        return sum(r.tokens(min(level, r.cap)) for r in renders)

    target = min(top, guess)
    while True:
        for render in renders:
            meter.ask(render.rows, min(target, render.cap))
        meter.run()
        if target >= top or least(target) > room:
            break
        target = min(top, grow(target))
    level = largest_fitting(target, room, least, cost)
    for render in renders:
        render.shown = min(level, render.cap)


def _drop_row_level(renders: Sequence[RenderCut]) -> bool:
    """Leave out the bottom shown row of every render at the deepest level; False if none."""
    deepest = max((r.shown for r in renders), default=0)
    if deepest == 0:
        return False
    for render in renders:
        if render.shown == deepest:
            render.shown -= 1
    return True


def largest_fitting(top: int, room: int, least: CostOf, cost: CostOf) -> int:
    """The largest n ≤ `top` with cost(n) ≤ room, 0 if none.

    `least` is a lower bound of `cost` that never falls as n grows (the cost without its
    notice): a bisection on it bounds the answer, a short scan on `cost` finds it.
    """
    low, high = 0, top
    while low < high:  # the largest n whose lower bound fits
        middle = (low + high + 1) // 2
        if least(middle) <= room:
            low = middle
        else:
            high = middle - 1
    while low > 0 and cost(low) > room:  # notices are small: a step or two
        low -= 1
    return low
