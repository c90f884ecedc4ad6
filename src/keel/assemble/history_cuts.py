"""Fitting the conversation's history: its newest messages within the room, with a notice.

History is measured newest first. The newest `pinned` messages (the latest exchange) are
always sent; older ones go first when room is short, and a one-line notice counted inside
the budget says how many earlier messages are not shown. No empty message is ever sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from keel.assemble.measure import Count, Measured, Meter, Notices, largest_fitting
from keel.assemble.values import Message
from keel.tokens import MESSAGE_FRAME_TOKENS


def history_notice(hidden: int) -> str:
    noun = "message" if hidden == 1 else "messages"
    return f"[{hidden} earlier {noun} of this conversation not shown]"


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
            newest=Measured([m.text for m in reversed(messages)], extra=MESSAGE_FRAME_TOKENS),
            notice=Notices(
                text=history_notice,
                count=count,
                most=len(messages) + older,
                extra=MESSAGE_FRAME_TOKENS,
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
