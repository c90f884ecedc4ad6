"""What is sent: provider request bodies, and a CLI agent's session delta."""

from keel.payload.providers import (
    PAYLOADS,
    PayloadFormat,
    anthropic_messages,
    first_request,
    openai_chat,
    openai_responses,
)
from keel.payload.sessions import SentContext, SessionState, session_delta

__all__ = [
    "PAYLOADS",
    "PayloadFormat",
    "SentContext",
    "SessionState",
    "anthropic_messages",
    "first_request",
    "openai_chat",
    "openai_responses",
    "session_delta",
]
