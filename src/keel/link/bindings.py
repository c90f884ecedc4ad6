"""Chat bindings and the pin: which entity a chat is about, per context.

A chat's bindings come from two places: group rules of access.yaml, and `context_bind`
calls stored by Keel. Per context the strongest wins: access.yaml, then a binding for the
turn's thread, then one for the whole chat; and the turn's bot over every bot.

The winning binding pins its context in the room: whatever the link, a keyed context
attaches there only with the bound key (or, bound with no key, with none). A room whose
access.yaml rule failed to load has no known pin, so nothing is bound there: it is refused.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from keel.brain.constitution import Room
from keel.brain.snapshot import Brain
from keel.brain.specs import Skip
from keel.errors import Refused
from keel.link.values import Binding, Conversation, LinkKind, Tenant


@dataclass(frozen=True, slots=True, kw_only=True)
class PinVerdict:
    """The entity a link may carry in a pinned room, or why it may not."""

    entity: str | None
    refusal: str | None = None


def access_bindings(
    brain: Brain, conversation: Conversation, room: Room | None = None
) -> list[Binding]:
    """Every bot's access.yaml bindings for this chat; the turn's bot's rule first
    (`room`: what access.yaml says of it, when the turn has looked it up already)."""
    group = room.group_rules if room is not None else brain.access.group_rules(conversation.chat)
    rules = sorted(group, key=lambda r: (r.bot != conversation.bot, r.bot))
    return [
        Binding(
            context=context,
            entity=entity,
            chat=conversation.chat,
            bot=rule.bot,
            source="access",
        )
        for rule in rules
        for context, entity in rule.contexts.items()
    ]


def rank(binding: Binding, conversation: Conversation) -> tuple[int, int, int]:
    """Sort key, strongest first: access.yaml before a bind call, a thread's before the
    chat's, the turn's bot before any bot before another bot."""
    bot = 0 if binding.bot == conversation.bot else 1 if binding.bot is None else 2
    return (binding.source != "access", binding.thread is None, bot)


def covers(binding: Binding, conversation: Conversation) -> bool:
    """Whether a binding holds in this conversation's room (its chat, and thread or whole)."""
    return binding.chat == conversation.chat and binding.thread in (None, conversation.thread)


def for_bot(binding: Binding, conversation: Conversation) -> bool:
    """Whether a binding links turns of this conversation's bot (not only pins its room)."""
    return binding.bot is None or binding.bot == conversation.bot


def effective_bindings(
    brain: Brain, conversation: Conversation, stored: Iterable[Binding], room: Room | None = None
) -> dict[str, Binding]:
    """The strongest binding of each context in this conversation's room, whatever its bot.

    Every bot's binding counts, because a binding pins the room for all of them; whether it
    also links this bot's turns is `for_bot`'s answer. Raises `Refused` when access.yaml
    failed for this room: without its rule, no one can say what the room is pinned to.
    """
    refusal = room.closed if room is not None else brain.access.room_refusal(conversation.chat)
    if refusal is not None:
        raise Refused(str(refusal))
    found: dict[str, Binding] = {}
    candidates = access_bindings(brain, conversation, room) + [
        b for b in stored if covers(b, conversation)
    ]
    for binding in sorted(candidates, key=lambda b: rank(b, conversation)):
        found.setdefault(binding.context, binding)
    return found


def pins_of(brain: Brain, bindings: Mapping[str, Binding]) -> dict[str, str | None]:
    """Context id → the key the room is pinned to (None: pinned to no entity).

    Only keyed contexts are pinned: an unkeyed context has no entity to hold. A bound
    context that did not load (or whose feature is off) may be keyed, so it pins too: it
    attaches nowhere, but if it is the brain's tenancy context its room stays its tenant's.
    """
    return {
        ident: binding.entity
        for ident, binding in bindings.items()
        if ident not in brain.contexts or brain.contexts[ident].keyed
    }


def pin(
    context: str,
    entity: str | None,
    pins: Mapping[str, str | None],
    *,
    kind: LinkKind = "ask",
    held: Binding | None = None,
    bot: str | None = None,
) -> PinVerdict:
    """Hold a link to the room's pin: no key takes the pinned one, another key is refused.

    A refusal says who pins the room when `held` (the binding that pins `context`) is
    given — this chat or a thread, and the bot when it is not `bot`, the turn's — and what
    to do instead, for the link `kind` that was refused.
    """
    if context not in pins:
        return PinVerdict(entity=entity)
    pinned = pins[context]
    if entity is None or entity == pinned:
        return PinVerdict(entity=pinned)
    where, by = _holder(held, bot)
    if pinned is None:
        return PinVerdict(
            entity=None,
            refusal=f"{where} pins '{context}' to no entity{by}, so '{entity}' is refused here",
        )
    return PinVerdict(
        entity=pinned,
        refusal=(
            f"{where} is bound to {context} '{pinned}'{by}; '{entity}' belongs to another "
            f"entity and is refused here — {_ADVICE[kind].format(pinned=pinned, entity=entity)}"
        ),
    )


# What a refused link of each kind can do instead. A chat link carries the pinned key and an
# always link none, so neither is refused by a pin; their advice is the open's.
_ADVICE: dict[LinkKind, str] = {
    "ask": "ask without a key to read '{pinned}'",
    "code": "attach it without a key to read '{pinned}', or take '{entity}' to a room of its own",
    "run": "reach it without a key to read '{pinned}', or run for '{entity}' in a room of its own",
    "reply": "the message replied to is about '{entity}'; ask without a key to read '{pinned}'",
    "chat": "ask without a key to read '{pinned}'",
    "always": "ask without a key to read '{pinned}'",
}


def _holder(held: Binding | None, bot: str | None) -> tuple[str, str]:
    """Where a pin holds (`this chat`, `thread 77`), and ` by bot 'x'` when another bot's
    binding pins it."""
    if held is None:
        return "this chat", ""
    by = f" by bot '{held.bot}'" if held.bot is not None and held.bot != bot else ""
    return bound_where(held), by


def bound_where(binding: Binding) -> str:
    """Where a binding holds, as a message names it: `thread 77`, or `this chat`."""
    return f"thread {binding.thread}" if binding.thread is not None else "this chat"


def another_bots_pin(binding: Binding) -> str:
    """Why a bound context rides none of this bot's turns, though it holds the room: the
    note a turn logs, and explain repeats on that context's row."""
    by = "an access.yaml rule" if binding.source == "access" else "a context_bind call"
    key = f"'{binding.entity}'" if binding.entity is not None else "no entity"
    return (
        f"'{binding.context}' is pinned to {key} in {bound_where(binding)} by bot "
        f"'{binding.bot}' ({by}): it attaches to that bot's turns only, and holds this "
        f"bot's links there to {key}"
    )


def links_bot(binding: Binding, conversation: Conversation) -> bool:
    """Whether a binding links turns of this conversation's bot with a chat link: an
    access.yaml rule only its own bot's, a context_bind call its bot's or every bot's."""
    if binding.source == "access":
        return binding.bot == conversation.bot
    return for_bot(binding, conversation)


def tenant_of(brain: Brain, pins: Mapping[str, str | None]) -> Tenant | None:
    """The room's tenant when MANIFEST `tenancy:` names a context the room is pinned for.

    With MANIFEST broken and its `tenancy:` unreadable, any pinned room may be a tenant's:
    it withholds every view (fails closed) until the file is fixed.
    """
    manifest = brain.manifest
    if manifest.broken is not None and manifest.tenancy is None and pins:
        return Tenant(column=None, key=None, withheld=withheld_reason(manifest.broken))
    tenancy = manifest.tenancy
    if tenancy is None or tenancy.context not in pins:
        return None
    return Tenant(column=tenancy.column, key=pins[tenancy.context])


def withheld_reason(broken: Skip) -> str:
    """Why a pinned room shows no view while MANIFEST does not load."""
    return (
        f"withheld: whose rows this room may see is unknown while {broken.path} does not "
        f"load ({broken}); fix the file — keel doctor shows it"
    )
