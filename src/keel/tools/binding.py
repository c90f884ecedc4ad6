"""`context_bind` / `context_unbind`: binding a chat (or a thread) to an entity at run time.

`check_bind` / `check_unbind` are pure; `bind_context` / `unbind_context` check, then
store in the caller's transaction. Every refusal says why and what to do instead, because
the agent reads it.
"""

from __future__ import annotations

from keel.brain.problems import did_you_mean
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.errors import Refused
from keel.link.values import Binding, entity_problem
from keel.store import Tx

BIND_CAPABILITY = "context:bind"


def _context(brain: Brain, role: RoleSpec, ident: str, tool: str) -> ContextSpec:
    if not role.can(BIND_CAPABILITY):
        raise Refused(
            f"role '{role.id}' cannot call {tool} — add {BIND_CAPABILITY} to its capabilities:"
        )
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
    spec = _context(brain, role, context, "context_bind")
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
            f"role '{role.id}' does not list '{context}' in its contexts:, so it cannot bind it"
        )
    return Binding(context=context, entity=entity, chat=chat, thread=thread, bot=bot)


def check_unbind(brain: Brain, role: RoleSpec, *, context: str, chat: str) -> None:
    """Raise `Refused` when a binding must not be removed by the tool."""
    _context(brain, role, context, "context_unbind")
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
    role: RoleSpec,
    *,
    context: str,
    chat: str,
    thread: str | None = None,
    bot: str | None = None,
) -> None:
    """context_unbind: check, then remove the binding; `Refused` when there is none."""
    check_unbind(brain, role, context=context, chat=chat)
    if not tx.unbind(context=context, chat=chat, thread=thread, bot=bot):
        raise Refused(f"no binding of '{context}' made by context_bind here to remove")
