"""The two parts of the input that may shrink: state render rows and older history.

Each is measured once per unit (a row, a message) and then selected by arithmetic, so
fitting a large input costs one tokenization of each piece, not one per attempt. Cuts are
always visible: a notice, counted inside the budget, says what was left out.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from itertools import accumulate

from keel.assemble.values import Message

Count = Callable[[str], int]
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


@dataclass(slots=True)
class RenderCut:
    """A render being fitted: how many of its rows are shown, and what that costs."""

    source: RenderInput
    prefix: list[int]  # prefix[n]: tokens of the top n rows
    base_tokens: int
    count: Count
    shown: int = 0
    total: int = 0  # rows the view holds, shown or not
    _notice_cache: dict[int, int] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.total = len(self.source.rows) if self.source.total is None else self.source.total

    @property
    def section_id(self) -> str:
        return f"render.{self.source.view}"

    @property
    def hidden(self) -> int:
        return self.total - self.shown

    def notice_tokens(self, hidden: int) -> int:
        if hidden <= 0:
            return 0
        # A notice's cost depends only on how many digits the count has (and one/many).
        key = len(str(hidden)) if hidden > 1 else 0
        cost = self._notice_cache.get(key)
        if cost is None:
            cost = self._notice_cache[key] = self.count(rows_notice(hidden, self.section_id) + "\n")
        return cost

    def tokens(self, shown: int | None = None) -> int:
        n = self.shown if shown is None else shown
        return self.base_tokens + self.prefix[n] + self.notice_tokens(self.total - n)

    def fit_budget(self, budget: int | None) -> None:
        """Show as many rows from the top as the section's own budget allows."""
        self.shown = len(self.prefix) - 1
        if budget is None:
            return
        while self.shown > 0 and self.tokens() > budget:
            self.shown -= 1

    def text(self) -> str:
        lines = [self.source.header, *self.source.rows[: self.shown]]
        if self.hidden > 0:
            lines.append(rows_notice(self.hidden, self.section_id))
        if self.source.footer:
            lines.append(self.source.footer)
        return "\n".join(filter(None, lines))


def render_units(source: RenderInput) -> list[str]:
    """The texts a render's cost is made of: header, footer, then each row."""
    return [source.header + "\n", source.footer, *[f"{row}\n" for row in source.rows]]


def cut_render(source: RenderInput, costs: Sequence[int], count: Count) -> RenderCut:
    """A render to fit, from the costs of its `render_units` (in that order)."""
    header, footer, *rows = costs
    base = header + (footer if source.footer else 0)
    return RenderCut(source=source, prefix=[0, *accumulate(rows)], base_tokens=base, count=count)


@dataclass(slots=True)
class HistoryCut:
    """History being fitted: the newest `kept` messages are shown (pinned ones always)."""

    messages: tuple[Message, ...]
    newest: list[int]  # newest[n]: tokens of the newest n messages, framing included
    pinned: int
    count: Count
    kept: int = 0
    older: int = 0  # messages before these that were never read: hidden from the start
    _notice_cache: dict[int, int] = field(default_factory=dict)

    @property
    def hidden(self) -> int:
        return len(self.messages) - self.kept + self.older

    def tokens(self, kept: int | None = None) -> int:
        n = self.kept if kept is None else kept
        shown = self.newest[n]
        hidden = len(self.messages) - n + self.older
        if not hidden:
            return shown
        key = len(str(hidden)) if hidden > 1 else 0
        cost = self._notice_cache.get(key)
        if cost is None:
            cost = self._notice_cache[key] = self.count(history_notice(hidden)) + MESSAGE_FRAME
        return shown + cost

    def fit_budget(self, budget: int | None) -> None:
        """Keep the newest messages that fit the budget; the pinned ones whatever it says."""
        self.kept = len(self.messages)
        if budget is not None:
            self.keep_within(budget)

    def keep_within(self, room: int) -> None:
        """Leave out the oldest messages until the rest fits `room` (pinned ones stay)."""
        floor = min(self.pinned, len(self.messages))
        if self.kept <= floor or self.tokens() <= room:
            return
        # Fewer messages never cost more, so the most that fit is found by bisection.
        low, high = floor, self.kept - 1
        while low < high:
            middle = (low + high + 1) // 2
            if self.tokens(middle) <= room:
                low = middle
            else:
                high = middle - 1
        self.kept = low

    def drop_one(self) -> bool:
        """Leave out the oldest message still shown, unless only pinned ones are left."""
        if self.kept <= min(self.pinned, len(self.messages)):
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
    return [m for m in messages if m.text.strip()]


def cut_history(
    messages: Sequence[Message],
    costs: Sequence[int],
    pinned: int,
    count: Count,
    *,
    older: int = 0,
) -> HistoryCut:
    """History to fit, from `sendable` messages (oldest first) and each one's text cost."""
    framed = [c + MESSAGE_FRAME for c in reversed(costs)]
    return HistoryCut(
        messages=tuple(messages),
        newest=[0, *accumulate(framed)],
        pinned=pinned,
        count=count,
        older=older,
    )


def cut_rows_within(renders: Sequence[RenderCut], room: int) -> None:
    """Leave out bottom rows, one level across every view at a time, until they fit `room`.

    Levels are found by bisection: showing fewer rows never costs more.
    """

    def cost(level: int) -> int:
        return sum(r.tokens(min(r.shown, level)) for r in renders)

    deepest = max((r.shown for r in renders), default=0)
    if cost(deepest) <= room:
        return
    low, high = 0, deepest - 1
    while low < high:
        middle = (low + high + 1) // 2
        if cost(middle) <= room:
            low = middle
        else:
            high = middle - 1
    for render in renders:
        render.shown = min(render.shown, low)


def drop_row_level(renders: Sequence[RenderCut]) -> bool:
    """Leave out the bottom shown row of every render at the deepest level; False if none."""
    deepest = max((r.shown for r in renders), default=0)
    if deepest == 0:
        return False
    for render in renders:
        if render.shown == deepest:
            render.shown -= 1
    return True
