"""What every token counter is, and the chat frame every counter adds the same way.

One `TokenCounter` measures everything a turn is judged by — each section's `used_tokens`,
the budgets, and the request as it is finally sent — so the fit check and the provider see
the same numbers. A chat request costs its messages' text tokens, `MESSAGE_FRAME_TOKENS`
for each message (role and delimiters) and `REPLY_PRIMING_TOKENS` once for the start of
the reply; this module is the one place those two numbers are defined.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Final, Literal, Protocol

MESSAGE_FRAME_TOKENS: Final = 4
"""Tokens each chat message costs beyond its text (role and delimiters)."""
REPLY_PRIMING_TOKENS: Final = 3
"""Tokens every chat request costs for the start of the reply."""

Encoding = Literal["o200k_base", "cl100k_base"]


class TokenCounter(Protocol):
    """Counts tokens in texts and in whole chat requests, framing included."""

    @property
    def name(self) -> str: ...

    def count(self, text: str) -> int: ...

    def count_each(self, texts: Sequence[str]) -> list[int]:
        """One count per text; a counter may do them in one pass."""
        ...

    def count_messages(self, messages: Sequence[tuple[str, str]]) -> int: ...


def framed(text_tokens: Sequence[int]) -> int:
    """A chat request's tokens from its messages' text tokens: those + 4 each + 3."""
    return sum(text_tokens) + MESSAGE_FRAME_TOKENS * len(text_tokens) + REPLY_PRIMING_TOKENS
