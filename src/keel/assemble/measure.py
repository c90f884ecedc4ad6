"""Measuring texts only as far as they might be sent, in batched rounds.

A unit (a row, a message) is measured at most once, and only when it might be sent: a
part is measured from its start in rounds that double, until what is measured alone no
longer fits the room it is given. Each round asks the counter once (`count_each` on a
batch is much cheaper than one call a text). Fitting is then arithmetic on prefix sums.

Notices (what a cut left out) are measured too, once per distinct cost: a notice's cost
changes only with the digits of the count it states.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import accumulate, repeat
from operator import add

from keel.tokens import TokenCounter

Count = Callable[[str], int]
CostOf = Callable[[int], int]  # what showing n units costs


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

    def take_costs(self, costs: Iterator[int]) -> None:
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

    def measure_until_over(self, part: Measured, total: int, first: int = 0) -> None:
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
