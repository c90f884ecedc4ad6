"""The conversation's history as it is fitted: its newest messages, and a notice.

History is measured newest first. The newest `pinned` messages (the latest exchange) are
always sent; older ones may be left out (`keel.assemble.fitting` decides how many), and a
one-line notice counted inside the budget says how many earlier messages are not shown.
No empty message is ever sent.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from keel.assemble.measure import Count, Measured, Notices
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

    def shown(self) -> tuple[Message, ...]:
        kept = self.messages[len(self.messages) - self.kept :]
        if self.hidden:
            return (Message(role="user", text=history_notice(self.hidden)), *kept)
        return kept


def sendable(messages: Sequence[Message]) -> list[Message]:
    """The messages history may send: an empty one never is (providers refuse it)."""
    return [m for m in messages if m.text and not m.text.isspace()]
