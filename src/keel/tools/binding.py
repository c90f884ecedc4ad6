"""`context_bind` / `context_unbind`: binding a chat (or a thread) to an entity at run time.

`check_bind` / `check_unbind` are pure; `bind_context` / `unbind_context` check, then
store in the caller's transaction. Every refusal says why and what to do instead, because
the agent reads it. Whether the role may call the tools at all (`context:bind`) is the
registry's check, made before either runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from keel.brain.limits import MAX_BOT_CHARS, MAX_CHAT_ID_CHARS
from keel.brain.problems import did_you_mean
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.errors import Refused
from keel.link.values import Binding, entity_problem, id_problem
from keel.store import Tx
from keel.tools.context_open import STRING
from keel.tools.registry import Tool, ToolContext

BIND_CAPABILITY = "context:bind"


def _context(brain: Brain, ident: str, chat: str) -> ContextSpec:
    refusal = brain.access.room_refusal(chat)
    if refusal is not None:  # a room whose access rule failed takes no binding either
        raise Refused(refusal)
    context = brain.contexts.get(ident)
    if context is None:
        raise Refused(f"no context '{ident}' in this brain{did_you_mean(ident, brain.contexts)}")
    return context


def check_bind(
    brain: Brain,
    role: RoleSpec,
    *,
    context: str,
    entity: str | None,
    chat: str,
    thread: str | None = None,
    bot: str | None = None,
) -> Binding:
    """The binding to store, or `Refused` with the reason."""
    _check_place(chat, thread, bot)
    spec = _context(brain, context, chat)
    if (problem := entity_problem(entity)) is not None:
        raise Refused(problem)
    if spec.keyed and entity is None:
        raise Refused(
            f"'{context}' is keyed by {spec.entity}: name the entity to bind (entity: '<key>')"
        )
    if not spec.keyed and entity is not None:
        raise Refused(f"'{context}' names no entity, so it takes no key ('{entity}' given)")
    for rule in brain.access.group_rules(chat):
        if context in rule.contexts and rule.contexts[context] != entity:
            bound = rule.contexts[context]
            raise Refused(
                f"access.yaml binds '{context}' in chat {chat} to "
                f"{repr(bound) if bound is not None else 'no entity'} (bot {rule.bot}'s rule); "
                "a tool binding may not contradict it — edit the rule instead"
            )
    if not role.admits(context):
        raise Refused(
            f"role '{role.id}' does not list '{context}' in its `contexts:`, so it cannot bind it"
        )
    return Binding(context=context, entity=entity, chat=chat, thread=thread, bot=bot)


def _check_place(chat: str, thread: str | None, bot: str | None) -> None:
    """The chat, thread and bot a call names, bounded as a turn's own are."""
    named = [(chat, "the chat id", MAX_CHAT_ID_CHARS), (thread, "the thread id", MAX_CHAT_ID_CHARS)]
    for value, what, limit in [*named, (bot, "the bot", MAX_BOT_CHARS)]:
        if value is not None and (problem := id_problem(value, what, limit)) is not None:
            raise Refused(problem)


def check_unbind(brain: Brain, *, context: str, chat: str) -> None:
    """Raise `Refused` when a binding must not be removed by the tool."""
    _context(brain, context, chat)
    for rule in brain.access.group_rules(chat):
        if context in rule.contexts:
            raise Refused(
                f"'{context}' is bound in chat {chat} by access.yaml (bot {rule.bot}'s rule) — "
                "edit that rule instead; the tool removes only bindings made by context_bind"
            )


def bind_context(
    brain: Brain,
    tx: Tx,
    role: RoleSpec,
    *,
    context: str,
    entity: str | None,
    chat: str,
    thread: str | None = None,
    bot: str | None = None,
) -> Binding:
    """context_bind: check, then store the binding (replacing one in the same place)."""
    binding = check_bind(
        brain, role, context=context, entity=entity, chat=chat, thread=thread, bot=bot
    )
    tx.bind(binding)
    return binding


def unbind_context(
    brain: Brain,
    tx: Tx,
    *,
    context: str,
    chat: str,
    thread: str | None = None,
    bot: str | None = None,
) -> None:
    """context_unbind: check, then remove the binding; `Refused` when there is none."""
    check_unbind(brain, context=context, chat=chat)
    if not tx.unbind(context=context, chat=chat, thread=thread, bot=bot):
        raise Refused(f"no binding of '{context}' made by context_bind here to remove")


def where(chat: str, thread: str | None) -> str:
    """The place a binding holds, as a tool's answer says it."""
    return chat + (f" thread {thread}" if thread else "")


def _bind(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    chat = args.get("chat") or ctx.request.conversation.chat
    binding = bind_context(
        ctx.brain,
        ctx.tx,
        ctx.role,
        context=args["context"],
        entity=args.get("entity"),
        chat=chat,
        thread=args.get("thread"),
        bot=args.get("bot"),
    )
    bound = f"bound {binding.context} in {where(chat, binding.thread)}"
    if "chat" in ctx.brain.contexts[binding.context].when:
        return bound
    # Legal (a keyed binding still pins the room's key), but rarely what the caller meant.
    pins = "pins the room's key but " if binding.entity is not None else ""
    return (
        f"{bound} — note: its when: has no chat link, so the binding {pins}carries the "
        "context on no turn; add chat to its when: to carry it"
    )


def _unbind(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    chat = args.get("chat") or ctx.request.conversation.chat
    context, thread = args["context"], args.get("thread")
    bot = args.get("bot")
    unbind_context(ctx.brain, ctx.tx, context=context, chat=chat, thread=thread, bot=bot)
    return f"unbound {context} in {where(chat, thread)}"


# Where a binding holds; the description says the defaults once, for all three.
_WHERE = {"chat": STRING, "thread": STRING, "bot": STRING}

CONTEXT_BIND = Tool(
    name="context_bind",
    description="Bind this chat (or one given) to a context's entity.",
    parameters={
        "type": "object",
        "properties": {"context": STRING, "entity": STRING, **_WHERE},
        "required": ["context"],
    },
    capability=BIND_CAPABILITY,
    risk="moderate",
    run=_bind,
)
CONTEXT_UNBIND = Tool(
    name="context_unbind",
    description="Undo a context_bind.",
    parameters={
        "type": "object",
        "properties": {"context": STRING, **_WHERE},
        "required": ["context"],
    },
    capability=BIND_CAPABILITY,
    risk="moderate",
    run=_unbind,
)
