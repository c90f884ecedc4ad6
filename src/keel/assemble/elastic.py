"""The two parts of the input that may shrink: state render rows and older history.

A unit (a row, a message) is measured at most once, and only when it might be sent: rows
are measured top first and history newest first, in rounds, until what is measured alone
no longer fits the room (or, for a render with a budget of its own, that budget). Fitting
then is arithmetic on prefix sums. Cuts are always visible: a notice, counted inside the
budget, says what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add

from keel.assemble.tokens import TokenCounter
from keel.assemble.values import Message

Count = Callable[[str], int]
CostOf = Callable[[int], int]  # what showing n units costs
MESSAGE_FRAME = 4  # tokens a chat message costs beyond its text


@dataclass(frozen=True, slots=True, kw_only=True)
class RenderInput:
    """A state view to render: a header, its rows (top first), a footer."""

    view: str
    header: str
    rows: tuple[str, ...]
    footer: str = ""
    total: int | None = None  # rows the view holds in all, when more were not fetched


def rows_notice(hidden: int, section_id: str) -> str:
    noun = "row" if hidden == 1 else "rows"
    return f"({hidden} more {noun} not shown; raise sections.{section_id} to see more)"


def history_notice(hidden: int) -> str:
    noun = "message" if hidden == 1 else "messages"
    return f"[{hidden} earlier {noun} of this conversation not shown]"


def notice_key(hidden: int) -> int:
    """Notices that share a key cost the same: the count's digits (and one or many) vary."""
    return len(str(hidden)) if hidden > 1 else 0


def notice_counts(most: int) -> list[int]:
    """One count of each key from 1 to `most`: what every notice of a part may cost."""
    return [n for n in (1, *(max(2, 10**d) for d in range(len(str(most))))) if n <= most]


@dataclass(slots=True)
class Notices:
    """What a part's notice costs for any count it may hide, measured with the first round."""

    text: Callable[[int], str]
    count: Count
    most: int  # the most the part may hide
    extra: int = 0  # added to each notice's cost (a message's frame)
    costs: dict[int, int] = field(default_factory=dict)  # by notice_key
    counts: list[int] = field(default_factory=list)  # one hidden count per key

    def __post_init__(self) -> None:
        self.counts = notice_counts(self.most)

    def texts(self) -> list[str]:
        return [self.text(n) for n in self.counts]

    def know(self, costs: Iterator[int]) -> None:
        """Take the costs of `texts()`, in order, from `costs`."""
        for n, cost in zip(self.counts, costs, strict=False):
            self.costs[notice_key(n)] = cost + self.extra

    def tokens(self, hidden: int) -> int:
        if hidden <= 0:
            return 0
        key = notice_key(hidden)
        cost = self.costs.get(key)
        if cost is None:  # not among those measured first: measured now, once
            cost = self.costs[key] = self.count(self.text(hidden)) + self.extra
        return cost


# ---------------------------------------------------------------------------------------
# Measuring on demand


@dataclass(slots=True)
class Measured:
    """The token costs of a sequence of texts, as prefix sums, measured as far as asked."""

    texts: Sequence[str]
    extra: int = 0  # added to each text's cost (a message's frame)
    sums: list[int] = field(default_factory=lambda: [0])  # sums[n]: the first n texts

    @property
    def measured(self) -> int:
        return len(self.sums) - 1

    @property
    def complete(self) -> bool:
        return self.measured == len(self.texts)

    def costs(self) -> list[int]:
        return [b - a for a, b in zip(self.sums, self.sums[1:], strict=False)]


class Meter:
    """Measures all that the parts asked for with one `count_each` a round (a batch is fast)."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self._asked: dict[int, tuple[Measured, int]] = {}

    def ask(self, part: Measured, upto: int) -> None:
        upto = min(upto, len(part.texts))
        if upto > max(part.measured, self._asked.get(id(part), (part, 0))[1]):
            self._asked[id(part)] = (part, upto)

    def run(self) -> None:
        asked = list(self._asked.values())
        self._asked.clear()
        texts = [text for part, upto in asked for text in part.texts[part.measured : upto]]
        if not texts:
            return
        costs = self.counter.count_each(texts)
        at = 0
        for part, upto in asked:
            new = costs[at : at + upto - part.measured]
            at += len(new)
            start = part.sums.pop()  # accumulate gives it back first
            framed = map(add, new, repeat(part.extra)) if part.extra else new
            part.sums += accumulate(framed, initial=start)

    def past(self, part: Measured, total: int, first: int = 0) -> None:
        """Measure `part` (at least its `first` texts) in rounds, until those measured cost
        more than `total` or it is all measured: no count beyond can then fit `total`."""
        target = first
        while True:
            self.ask(part, target)
            self.run()
            if part.complete or part.sums[part.measured] > total:
                return
            target = grow(part.measured)


def grow(measured: int) -> int:
    """How far the next round measures: rounds double, so a bad first guess costs few."""
    return max(2 * measured, measured + 8)


# ---------------------------------------------------------------------------------------
# Renders


@dataclass(slots=True)
class RenderCut:
    """A render being fitted: how many of its rows are shown, and what that costs."""

    source: RenderInput
    section_id: str
    rows: Measured  # each row with its newline
    notice: Notices
    base_tokens: int = 0  # header and footer
    cap: int = 0  # the most rows the section's own budget allows
    shown: int = 0
    total: int = 0  # rows the view holds, shown or not

    @classmethod
    def of(cls, source: RenderInput, count: Count) -> RenderCut:
        total = len(source.rows) if source.total is None else source.total
        section_id = f"render.{source.view}"
        return cls(
            source=source,
            section_id=section_id,
            rows=Measured([f"{row}\n" for row in source.rows]),
            notice=Notices(
                text=lambda n: rows_notice(n, section_id) + "\n", count=count, most=total
            ),
            cap=len(source.rows),
            total=total,
        )

    def frame_units(self) -> list[str]:
        """The texts the base cost is made of: header, then footer."""
        return [self.source.header + "\n", self.source.footer]

    def set_frame(self, header: int, footer: int) -> None:
        self.base_tokens = header + (footer if self.source.footer else 0)

    @property
    def hidden(self) -> int:
        return self.total - self.shown

    def least(self, shown: int) -> int:
        """What `shown` rows cost at least: without the notice."""
        return self.base_tokens + self.rows.sums[shown]

    def tokens(self, shown: int | None = None) -> int:
        n = self.shown if shown is None else shown
        return self.base_tokens + self.rows.sums[n] + self.notice.tokens(self.total - n)

    def text(self) -> str:
        lines = [self.source.header, *self.source.rows[: self.shown]]
        if self.hidden > 0:
            lines.append(rows_notice(self.hidden, self.section_id))
        if self.source.footer:
            lines.append(self.source.footer)
        return "\n".join(filter(None, lines))


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


def fit_render_budgets(
    renders: Sequence[RenderCut], budgets: Sequence[int | None], meter: Meter
) -> None:
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


def drop_row_level(renders: Sequence[RenderCut]) -> bool:
    """Leave out the bottom shown row of every render at the deepest level; False if none."""
    deepest = max((r.shown for r in renders), default=0)
    if deepest == 0:
        return False
    for render in renders:
        if render.shown == deepest:
            render.shown -= 1
    return True


# ---------------------------------------------------------------------------------------
# History


@dataclass(slots=True)
class HistoryCut:
    """History being fitted: the newest `kept` messages are shown (pinned ones always)."""

    messages: tuple[Message, ...]
    newest: Measured  # newest first, each with its frame
    notice: Notices
    pinned: int
    kept: int = 0
    older: int = 0  # messages before these that were never read: hidden from the start

    @classmethod
    def of(
        cls, messages: Sequence[Message], pinned: int, count: Count, older: int = 0
    ) -> HistoryCut:
        """History to fit, from `sendable` messages, oldest first."""
        return cls(
            messages=tuple(messages),
            newest=Measured([m.text for m in reversed(messages)], extra=MESSAGE_FRAME),
            notice=Notices(
                text=history_notice, count=count, most=len(messages) + older, extra=MESSAGE_FRAME
            ),
            pinned=pinned,
            older=older,
        )

    @property
    def floor(self) -> int:
        return min(self.pinned, len(self.messages))

    @property
    def hidden(self) -> int:
        return len(self.messages) - self.kept + self.older

    def tokens(self, kept: int | None = None) -> int:
        n = self.kept if kept is None else kept
        return self.newest.sums[n] + self.notice.tokens(len(self.messages) - n + self.older)

    def cheapest(self, budget: int | None, meter: Meter) -> int:
        """The least history may cost: its pinned newest and the notice, unless keeping more
        costs less (a notice can cost more than the few short messages it stands for)."""
        best = self.tokens(self.floor)
        sums = self.newest.sums
        meter.past(self.newest, best - 1)
        for n in range(self.floor + 1, self.newest.measured + 1):
            if sums[n] >= best:  # and so are all that keep more
                break
            cost = self.tokens(n)
            if cost < best and (budget is None or cost <= budget):
                best = cost
        return best

    def keep_within(self, room: int, meter: Meter, guess: int) -> None:
        """Keep the newest messages that fit `room`; the pinned ones whatever it says."""
        meter.past(self.newest, room, first=max(self.floor, guess))
        least = self.newest.sums.__getitem__
        self.kept = max(self.floor, largest_fitting(self.newest.measured, room, least, self.tokens))

    def drop_one(self) -> bool:
        """Leave out the oldest message still shown, unless only pinned ones are left."""
        if self.kept <= self.floor:
            return False
        self.kept -= 1
        return True

    def shown(self) -> tuple[Message, ...]:
        kept = self.messages[len(self.messages) - self.kept :]
        if self.hidden:
            return (Message(role="user", text=history_notice(self.hidden)), *kept)
        return kept


def sendable(messages: Sequence[Message]) -> list[Message]:
    """The messages history may send: an empty one never is (providers refuse it)."""
    return [m for m in messages if m.text and not m.text.isspace()]
