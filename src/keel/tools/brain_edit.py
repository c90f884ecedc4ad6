"""The brain editing itself: `heartbeat_update`, `hook_update`, `scenario_update`,
`access_update` and `access_widen`.

Each edits the live brain (not the snapshot a run is pinned to), checks the new file as
the loader would, writes it atomically and commits it when the
brain is a git repository (`keel.brain.edit`); the next turn or run reads the new file.
The first four take `brain:edit` (moderate: a brain's `approvals:` decides whether they
wait for a person). `access_update` only narrows what reaches a room and refuses, naming
`access_widen`, any change that would widen it; `access_widen` takes `access:widen`,
whose calls always wait for a person's approval, whatever the brain's policy says.

Each has a preview: the same edit, checked the same way but not written, so a call that
would be refused is refused before its card is posted, and the card says which file
changes and how.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from keel.brain.edit import AccessChange, Edited, edit_access, edit_entity, live_brain, widening
from keel.brain.knobs import ALWAYS_APPROVED
from keel.errors import Refused
from keel.tools.context_open import STRING
from keel.tools.registry import Preview, Run, Tool, ToolContext

EDIT_CAPABILITY = "brain:edit"
(WIDEN_CAPABILITY,) = ALWAYS_APPROVED

# How much of one changed value a card shows.
_SHOWN = 200
_TEXT_OR_NULL = {"type": ["string", "null"]}
_REACH = {
    "type": ["array", "null"],
    "items": {
        "anyOf": [
            STRING,
            {
                "type": "object",
                "properties": {"context": STRING, "entity": STRING},
                "required": ["context"],
                "additionalProperties": False,
            },
        ]
    },
}
_COMMON = {
    "id": STRING,
    "description": _TEXT_OR_NULL,
    "agent": _TEXT_OR_NULL,
    "reach": _REACH,
    "bot": _TEXT_OR_NULL,
    "chat": _TEXT_OR_NULL,
    "thread": _TEXT_OR_NULL,
    "body": STRING,
}


def _call_text(name: str, args: Mapping[str, Any]) -> str:
    """The call as the commit message records it."""
    return f"{name}({json.dumps(dict(args), ensure_ascii=False)})"


def _said(edited: Edited) -> str:
    return (
        f"updated {edited.path}: {', '.join(edited.changed)} ({edited.git}); "
        "the next turn and run read it"
    )


def _shown(value: Any) -> str:
    shown = json.dumps(value, ensure_ascii=False)
    return shown if len(shown) <= _SHOWN else shown[:_SHOWN] + "…"


def _planned(name: str, edited: Edited, args: Mapping[str, Any]) -> str:
    """An edit as a person approving it reads it: the file, then each change."""
    lines = [f"{name}: edit {edited.path}"]
    for key in edited.changed:
        if key == "body" and "body" in args:
            lines.append(f"- body replaced ({len(str(args['body']))} chars)")
        elif key in args:
            value = args[key]
            lines.append(f"- {key}: removed" if value is None else f"- {key} = {_shown(value)}")
        else:
            lines.append(f"- {key}")
    return "\n".join(lines)


def _entity_edit(kind: str, ctx: ToolContext, args: Mapping[str, Any], *, write: bool) -> Edited:
    changes = {k: v for k, v in args.items() if k != "id"}
    return edit_entity(
        live_brain(ctx.brain),
        kind,
        args["id"],
        changes,
        author=ctx.role.id,
        message=_call_text(f"{kind}_update", args),
        write=write,
    )


def _entity_run(kind: str) -> Run:
    def run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
        return _said(_entity_edit(kind, ctx, args, write=True))

    return run


def _entity_preview(kind: str) -> Preview:
    def preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
        return _planned(f"{kind}_update", _entity_edit(kind, ctx, args, write=False), args)

    return preview


def _entity_tool(kind: str, extra: Mapping[str, Any], what: str) -> Tool:
    return Tool(
        name=f"{kind}_update",
        description=(
            f"Change a {kind}'s file: {what}; null removes a key, `body` replaces the "
            "prompt. Refused, with the reason, when the file would not load."
        ),
        parameters={
            "type": "object",
            "properties": {**_COMMON, **extra},
            "required": ["id"],
        },
        capability=EDIT_CAPABILITY,
        risk="moderate",
        run=_entity_run(kind),
        preview=_entity_preview(kind),
    )


HEARTBEAT_UPDATE = _entity_tool(
    "heartbeat", {"schedule": STRING}, "reach, schedule, agent, bot, chat, thread, description"
)
HOOK_UPDATE = _entity_tool(
    "hook", {"event": STRING}, "reach, event, agent, bot, chat, thread, description"
)
SCENARIO_UPDATE = _entity_tool(
    "scenario", {}, "reach, agent, bot, chat, thread, description (not its inline hooks:)"
)


def _change(args: Mapping[str, Any]) -> AccessChange:
    return AccessChange(
        bot=args["bot"],
        chat=args["chat"],
        title=args.get("title"),
        role=args.get("role"),
        bind=args.get("bind"),
        unbind=tuple(args.get("unbind") or ()),
    )


def _update(ctx: ToolContext, args: Mapping[str, Any], *, write: bool) -> Edited:
    change = _change(args)
    brain = live_brain(ctx.brain)
    why = widening(brain, change)
    if why is not None:
        raise Refused(
            f"access_update only narrows what reaches a room, and this widens it: {why} — "
            "call access_widen instead, which waits for an owner's approval"
        )
    message = _call_text("access_update", args)
    return edit_access(brain, change, author=ctx.role.id, message=message, write=write)


def _widen(ctx: ToolContext, args: Mapping[str, Any], *, write: bool) -> Edited:
    change = _change(args)
    brain = live_brain(ctx.brain)
    if change.role is not None and change.role not in brain.roles:
        raise Refused(f"no role '{change.role}' in this brain")
    message = _call_text("access_widen", args)
    return edit_access(brain, change, author=ctx.role.id, message=message, write=write)


def _access_update(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    return _said(_update(ctx, args, write=True))


def _access_update_preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    return _planned("access_update", _update(ctx, args, write=False), args)


def _access_widen(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    return _said(_widen(ctx, args, write=True))


def _access_widen_preview(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    return _planned("access_widen", _widen(ctx, args, write=False), args)


_RULE = {
    "bot": STRING,
    "chat": STRING,
    "title": STRING,
    "role": STRING,
    "unbind": {"type": "array", "items": STRING},
}

ACCESS_UPDATE = Tool(
    name="access_update",
    description=(
        "Narrow a rule of access.yaml (`chat` is a chat id, or default/dm): its title, its "
        "role (one the file already names), or remove bindings (`unbind`). A change that "
        "lets more reach a room is refused: use access_widen."
    ),
    parameters={"type": "object", "properties": _RULE, "required": ["bot", "chat"]},
    capability=EDIT_CAPABILITY,
    risk="moderate",
    run=_access_update,
    preview=_access_update_preview,
)
ACCESS_WIDEN = Tool(
    name="access_widen",
    description=(
        "Change a rule of access.yaml in a way that lets more reach a room: add or re-key "
        "bindings (`bind`: {context: key or null}), give it a new role, or create a rule. "
        "Always waits for an owner's approval."
    ),
    parameters={
        "type": "object",
        "properties": {
            **_RULE,
            "bind": {"type": "object", "additionalProperties": _TEXT_OR_NULL},
        },
        "required": ["bot", "chat"],
    },
    capability=WIDEN_CAPABILITY,
    risk="dangerous",
    run=_access_widen,
    preview=_access_widen_preview,
)

BRAIN_EDIT_TOOLS = (HEARTBEAT_UPDATE, HOOK_UPDATE, SCENARIO_UPDATE, ACCESS_UPDATE, ACCESS_WIDEN)
