"""Counting tokens: the built-in estimate, exact counters, and the chat frame they share."""

from keel.tokens.counter import (
    MESSAGE_FRAME_TOKENS,
    REPLY_PRIMING_TOKENS,
    Encoding,
    TokenCounter,
    framed,
)
from keel.tokens.estimate import Estimator, estimate_many, estimate_tokens
from keel.tokens.exact import TiktokenCounter, ToktokCounter, counter_from_settings

__all__ = [
    "MESSAGE_FRAME_TOKENS",
    "REPLY_PRIMING_TOKENS",
    "Encoding",
    "Estimator",
    "TiktokenCounter",
    "TokenCounter",
    "ToktokCounter",
    "counter_from_settings",
    "estimate_many",
    "estimate_tokens",
    "framed",
]
