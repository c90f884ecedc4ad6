"""Reading the ledger and the turn journal back: reports, `/context`, explain, what-if.

Every report is a pure function of values read from the store (ledger entries, journaled
turns, kept links) and the brain; `keel.runtime.Engine` reads them and calls these.
"""

from keel.ledger.agent_context import AgentContext, ContextUse, agent_context
from keel.ledger.chat_context import ChatContext, KeptUse, WindowUse, chat_context
from keel.ledger.explain import ExplainRow, Explanation, explain
from keel.ledger.knob_set import Override, apply_overrides, parse_overrides
from keel.ledger.stubbed import context_stubbed
from keel.ledger.whatif import ContextShift, TurnShift, WhatIf, refit, replay_fit, what_if
from keel.ledger.window import DEFAULT_SINCE, parse_since

__all__ = [
    "DEFAULT_SINCE",
    "AgentContext",
    "ChatContext",
    "ContextShift",
    "ContextUse",
    "ExplainRow",
    "Explanation",
    "KeptUse",
    "Override",
    "TurnShift",
    "WhatIf",
    "WindowUse",
    "agent_context",
    "apply_overrides",
    "chat_context",
    "context_stubbed",
    "explain",
    "parse_overrides",
    "parse_since",
    "refit",
    "replay_fit",
    "what_if",
]
