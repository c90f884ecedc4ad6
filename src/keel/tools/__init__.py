"""Agent tools: one registry, one object per tool (spec, capability, risk, function).

`TOOLS` holds Keel's own tools for API agents — `context_open`, `context_bind`,
`context_unbind`, `send_message` — and is what an `Engine` uses unless it is given another
`Registry`.
`CODING_TOOLS` is what a coding agent calls through the MCP server: the context tools, then
`context_turn`, `agent_context`, `access_explain` and `doctor_check`.
"""

from keel.tools.access_explain import ACCESS_EXPLAIN, explain_access
from keel.tools.agent_context import AGENT_CONTEXT, LEDGER_CAPABILITY, report_text
from keel.tools.binding import CONTEXT_BIND, CONTEXT_UNBIND, check_bind, check_unbind
from keel.tools.context_open import CONTEXT_OPEN, open_context
from keel.tools.context_turn import CONTEXT_TURN, turn_text
from keel.tools.doctor_check import CHECK_CAPABILITY, DOCTOR_CHECK, check_brain
from keel.tools.registry import Registry, Tool, ToolContext, usage
from keel.tools.send import origin_of, record_send
from keel.tools.send_message import SEND_CAPABILITY, SEND_MESSAGE, message_id_for

TOOLS = Registry([CONTEXT_OPEN, CONTEXT_BIND, CONTEXT_UNBIND, SEND_MESSAGE])
# A coding agent reads and binds contexts; it sends no chat messages.
CODING_TOOLS = Registry(
    [
        *(t for t in TOOLS if t is not SEND_MESSAGE),
        CONTEXT_TURN,
        AGENT_CONTEXT,
        ACCESS_EXPLAIN,
        DOCTOR_CHECK,
    ]
)

__all__ = [
    "ACCESS_EXPLAIN",
    "AGENT_CONTEXT",
    "CHECK_CAPABILITY",
    "CODING_TOOLS",
    "CONTEXT_BIND",
    "CONTEXT_OPEN",
    "CONTEXT_TURN",
    "CONTEXT_UNBIND",
    "DOCTOR_CHECK",
    "LEDGER_CAPABILITY",
    "SEND_CAPABILITY",
    "SEND_MESSAGE",
    "TOOLS",
    "Registry",
    "Tool",
    "ToolContext",
    "check_bind",
    "check_brain",
    "check_unbind",
    "explain_access",
    "message_id_for",
    "open_context",
    "origin_of",
    "record_send",
    "report_text",
    "turn_text",
    "usage",
]
