"""`access_explain()`: who answers in this room, and what its bindings pin, strongest first.

An agent (or the person behind a coding agent) asking "why do I see Acme's rows here, and
why is Globex refused?" gets the answer Keel itself works from:

- the role: named by the caller, or which access.yaml rule gave it;
- every binding that holds in the room — access.yaml's group rules, then `context_bind`
  calls for this thread, then for the whole chat; the turn's bot before any bot, any bot
  before another one — each with where it comes from;
- for the first binding of each context, the one that holds: what it pins (a keyed
  context, to its key or to none) and whether it attaches on this bot's turns; the others
  are named as shadowed by it.

The ranking and the chat links are the linker's own (`keel.link`), asked here, never
restated. It reads only; it explains the room the call is made in, not another one.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from keel.brain.snapshot import Brain
from keel.link.bindings import access_bindings, covers, effective_bindings, pins_of, rank
from keel.link.gather import link_turn
from keel.link.values import Binding, Conversation, Stored, TurnRequest
from keel.store import Tx
from keel.tools.registry import Tool, ToolContext

# The room's bindings name which client's data reaches it: an operator's question, so a
# capability of its own rather than the `context:read` every chat role holds.
ACCESS_CAPABILITY = "access:read"


def explain_access(brain: Brain, tx: Tx, request: TurnRequest) -> str:
    """The room's role and bindings in plain lines; `Refused` when access.yaml refuses it."""
    conversation = request.conversation
    stored = tx.bindings_here(conversation)
    # A turn here with nothing but the room: its role, and what it carries on chat links.
    bare = replace(
        request, input="", reply_to=(), run=None, entity=None, reach=None, attach=(), open=()
    )
    turn = max(tx.current_turn(conversation), 1)
    linked = link_turn(brain, bare, Stored(turn=turn, bindings=stored))
    chat_links = {link.pair for link in linked.links if link.kind == "chat"}
    holding = effective_bindings(brain, conversation, stored)
    candidates = access_bindings(brain, conversation) + [
        b for b in stored if covers(b, conversation)
    ]
    ranked = sorted(candidates, key=lambda b: rank(b, conversation))
    lines = [f"{_room(conversation)}: role {linked.role}, {_role_source(brain, request)}."]
    if not ranked:
        lines.append("No binding holds here: nothing pins this room or attaches on a chat link.")
        return "\n".join(lines)
    lines.append("Bindings, strongest first (the first of each context holds):")
    pins = pins_of(brain, holding)
    for binding in ranked:
        holder = holding[binding.context]
        if holder == binding:
            effect = _effect(binding, pins, chat_links)
        else:
            effect = f"shadowed by {_pair(holder)} ({_source(holder)})"
        lines.append(f"- {_pair(binding)}: {_source(binding)} — {effect}")
    return "\n".join(lines)


def _effect(
    binding: Binding,
    pins: Mapping[str, str | None],
    chat_links: set[tuple[str, str | None]],
) -> str:
    said = []
    if binding.context in pins:
        pinned = pins[binding.context]
        said.append(
            f"pins {binding.context} to '{pinned}'"
            if pinned is not None
            else f"pins {binding.context} to no entity"
        )
    if (binding.context, binding.entity) in chat_links:
        said.append("attaches on this bot's turns")
    else:
        said.append("does not attach on this bot's turns")
    return "holds: " + "; ".join(said)


def _room(conversation: Conversation) -> str:
    thread = f" thread {conversation.thread}" if conversation.thread else ""
    return f"Bot {conversation.bot} in {conversation.chat}{thread}"


def _role_source(brain: Brain, request: TurnRequest) -> str:
    if request.role is not None:
        return "named by the caller"
    conversation = request.conversation
    rule = brain.access.rule_for(conversation.bot, conversation.chat, dm=request.dm)
    # A turn without a rule and without a named role was already refused by the linker.
    scope = "this chat's" if rule is None or rule.is_group else f"its {rule.scope}"
    return f"from access.yaml ({scope} rule for bot {conversation.bot})"


def _pair(binding: Binding) -> str:
    return binding.context + (f"={binding.entity}" if binding.entity is not None else "")


def _source(binding: Binding) -> str:
    if binding.source == "access":
        return f"access.yaml, bot {binding.bot}'s rule for this chat"
    where = f"thread {binding.thread}" if binding.thread else "the whole chat"
    bot = "any bot" if binding.bot is None else f"bot {binding.bot}"
    return f"context_bind for {where}, {bot}"


def _run(ctx: ToolContext, _args: Mapping[str, Any]) -> str:
    return explain_access(ctx.brain, ctx.tx, ctx.request)


ACCESS_EXPLAIN = Tool(
    name="access_explain",
    description="Explain this room: its role, and its bindings strongest first with their source.",
    parameters={"type": "object", "properties": {}},
    capability=ACCESS_CAPABILITY,
    risk="safe",
    run=_run,
)
