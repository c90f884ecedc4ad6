"""Which feature contexts a turn carries: reach, the six links, admission, the pin, keep."""

from keel.link.gather import link_turn, resolve_role
from keel.link.values import (
    LINK_KINDS,
    Binding,
    Conversation,
    KeptLink,
    Link,
    LinkKind,
    LinkResult,
    Origin,
    Refusal,
    RunRef,
    Stored,
    TurnRequest,
)

__all__ = [
    "LINK_KINDS",
    "Binding",
    "Conversation",
    "KeptLink",
    "Link",
    "LinkKind",
    "LinkResult",
    "Origin",
    "Refusal",
    "RunRef",
    "Stored",
    "TurnRequest",
    "link_turn",
    "resolve_role",
]
