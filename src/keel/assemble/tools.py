"""Keel's own tools, and which of them a role may see and call.

A tool is described to the model only when the role's capabilities allow it, and a call is
checked again when it executes: a description the model saw earlier, or a name it made
up, grants nothing.
"""

from __future__ import annotations

from collections.abc import Iterable

from keel.assemble.values import ToolSpec
from keel.brain.specs import RoleSpec
from keel.errors import Refused

_ENTITY = {"type": "string", "description": "The entity key, for a context keyed by one."}
_WHERE = {
    "chat": {"type": "string", "description": "The chat (default: this turn's chat)."},
    "thread": {"type": "string", "description": "One thread of it (default: the whole chat)."},
    "bot": {"type": "string", "description": "One bot (default: every bot of the brain)."},
}

CONTEXT_OPEN = ToolSpec(
    name="context_open",
    description=(
        "Open a feature context from the catalog (or one a stub names) and read it now: its "
        "instructions and its data as of this moment. It then stays with you for the next "
        "few turns."
    ),
    parameters={
        "type": "object",
        "properties": {"name": {"type": "string"}, "entity": _ENTITY},
        "required": ["name"],
        "additionalProperties": False,
    },
    capability="context:read",
)
CONTEXT_BIND = ToolSpec(
    name="context_bind",
    description=(
        "Bind this chat (or one of its threads) to a context and the entity it is about, so "
        "every later turn there carries that entity's data."
    ),
    parameters={
        "type": "object",
        "properties": {"context": {"type": "string"}, "entity": _ENTITY, **_WHERE},
        "required": ["context"],
        "additionalProperties": False,
    },
    capability="context:bind",
)
CONTEXT_UNBIND = ToolSpec(
    name="context_unbind",
    description="Remove a binding made with context_bind.",
    parameters={
        "type": "object",
        "properties": {"context": {"type": "string"}, **_WHERE},
        "required": ["context"],
        "additionalProperties": False,
    },
    capability="context:bind",
)
KEEL_TOOLS: tuple[ToolSpec, ...] = (CONTEXT_OPEN, CONTEXT_BIND, CONTEXT_UNBIND)


def allowed_tools(role: RoleSpec, tools: Iterable[ToolSpec] = KEEL_TOOLS) -> tuple[ToolSpec, ...]:
    """The tools whose capability the role holds (a tool with none is open to all)."""
    return tuple(t for t in tools if not t.capability or role.can(t.capability))


def authorize(role: RoleSpec, name: str, tools: Iterable[ToolSpec] = KEEL_TOOLS) -> ToolSpec:
    """The tool a call names, if the role may call it; `Refused` otherwise."""
    known = {t.name: t for t in tools}
    tool = known.get(name)
    if tool is None:
        raise Refused(f"there is no tool '{name}'")
    if tool.capability and not role.can(tool.capability):
        raise Refused(
            f"role '{role.id}' may not call {name} — it needs {tool.capability} in its "
            "capabilities:"
        )
    return tool
