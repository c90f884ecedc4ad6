"""Agent tools: one registry, one object per tool (spec, capability, risk, function).

`TOOLS` holds Keel's own tools for API agents — `context_open`, `context_bind`,
`context_unbind`, the sends (`send_message`, `notification_send`, `file_send`,
`voice_send`), `topic_open`, the brain's own edits (`heartbeat_update`, `hook_update`,
`scenario_update`, `access_update`, `access_widen`) and the operator's questions
(`access_explain`, `agent_context`, `doctor_check`, each on a capability of its own) — and
is what an `Engine` uses unless it is given another `Registry`.
`CODING_TOOLS` is what a coding agent calls through the MCP server: the same without the
sends and the brain's edits, plus `context_turn`.
"""

from keel.tools.access_explain import ACCESS_CAPABILITY, ACCESS_EXPLAIN, explain_access
from keel.tools.agent_context import AGENT_CONTEXT, LEDGER_CAPABILITY, report_text
from keel.tools.binding import CONTEXT_BIND, CONTEXT_UNBIND, check_bind, check_unbind
from keel.tools.brain_edit import (
    ACCESS_UPDATE,
    ACCESS_WIDEN,
    BRAIN_EDIT_TOOLS,
    EDIT_CAPABILITY,
    HEARTBEAT_UPDATE,
    HOOK_UPDATE,
    SCENARIO_UPDATE,
    WIDEN_CAPABILITY,
)
from keel.tools.context_open import CONTEXT_OPEN, open_context
from keel.tools.context_turn import CONTEXT_TURN, turn_text
from keel.tools.doctor_check import CHECK_CAPABILITY, DOCTOR_CHECK, check_brain
from keel.tools.file_send import FILE_CAPABILITY, FILE_SEND, VOICE_SEND
from keel.tools.notification_send import NOTIFICATION_SEND, NOTIFY_CAPABILITY
from keel.tools.registry import Registry, Tool, ToolContext, usage
from keel.tools.send import origin_of, record_send
from keel.tools.send_message import SEND_CAPABILITY, SEND_MESSAGE, message_id_for
from keel.tools.topic_open import TOPIC_CAPABILITY, TOPIC_OPEN, open_topic, topic_thread

# What an operator asks of the brain in a chat or from a coding agent: read-only, each on
# a capability of its own that a client-facing role does not hold.
OPERATOR_TOOLS = (AGENT_CONTEXT, ACCESS_EXPLAIN, DOCTOR_CHECK)
TOOLS = Registry(
    [
        CONTEXT_OPEN,
        CONTEXT_BIND,
        CONTEXT_UNBIND,
        SEND_MESSAGE,
        NOTIFICATION_SEND,
        TOPIC_OPEN,
        FILE_SEND,
        VOICE_SEND,
        *BRAIN_EDIT_TOOLS,
        *OPERATOR_TOOLS,
    ]
)
# A coding agent reads and binds contexts; it sends no chat messages and edits the brain
# through its own file tools, not these.
CODING_TOOLS = Registry([CONTEXT_OPEN, CONTEXT_BIND, CONTEXT_UNBIND, CONTEXT_TURN, *OPERATOR_TOOLS])

__all__ = [
    "ACCESS_CAPABILITY",
    "ACCESS_EXPLAIN",
    "ACCESS_UPDATE",
    "ACCESS_WIDEN",
    "AGENT_CONTEXT",
    "BRAIN_EDIT_TOOLS",
    "CHECK_CAPABILITY",
    "CODING_TOOLS",
    "CONTEXT_BIND",
    "CONTEXT_OPEN",
    "CONTEXT_TURN",
    "CONTEXT_UNBIND",
    "DOCTOR_CHECK",
    "EDIT_CAPABILITY",
    "FILE_CAPABILITY",
    "FILE_SEND",
    "HEARTBEAT_UPDATE",
    "HOOK_UPDATE",
    "LEDGER_CAPABILITY",
    "NOTIFICATION_SEND",
    "NOTIFY_CAPABILITY",
    "OPERATOR_TOOLS",
    "SCENARIO_UPDATE",
    "SEND_CAPABILITY",
    "SEND_MESSAGE",
    "TOOLS",
    "TOPIC_CAPABILITY",
    "TOPIC_OPEN",
    "VOICE_SEND",
    "WIDEN_CAPABILITY",
    "Registry",
    "Tool",
    "ToolContext",
    "check_bind",
    "check_brain",
    "check_unbind",
    "explain_access",
    "message_id_for",
    "open_context",
    "open_topic",
    "origin_of",
    "record_send",
    "report_text",
    "topic_thread",
    "turn_text",
    "usage",
]
