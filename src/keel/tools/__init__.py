"""Agent tools: one registry, one object per tool (spec, capability, risk, function).

`TOOLS` holds Keel's own tools — `context_open`, `context_bind`, `context_unbind` — and
is what an `Engine` uses unless it is given another `Registry`.
"""

from keel.tools.binding import CONTEXT_BIND, CONTEXT_UNBIND, check_bind, check_unbind
from keel.tools.context_open import CONTEXT_OPEN, open_context
from keel.tools.registry import Registry, Tool, ToolContext, usage
from keel.tools.send import origin_of, record_send

TOOLS = Registry([CONTEXT_OPEN, CONTEXT_BIND, CONTEXT_UNBIND])

__all__ = [
    "CONTEXT_BIND",
    "CONTEXT_OPEN",
    "CONTEXT_UNBIND",
    "TOOLS",
    "Registry",
    "Tool",
    "ToolContext",
    "check_bind",
    "check_unbind",
    "open_context",
    "origin_of",
    "record_send",
    "usage",
]
