"""Contexts that load but cannot do what their files say: unreached, misnamed, undescribed,
or with instructions too long to ever attach."""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.knobs import context_chars
from keel.brain.specs import ContextSpec, RoleSpec
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, is_reach, is_word


def check(scope: Scope) -> Iterator[Finding]:
    yield from _unreached(scope)
    yield from _unknown_reach(scope)
    yield from _ask_descriptions(scope)
    yield from _over_budget(scope)


def _unreached(scope: Scope) -> Iterator[Finding]:
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        reached = ident in scope.reached
        if not reached and ident not in scope.admitted and ident not in scope.bound:
            yield found(
                "context.unreached",
                f"context '{ident}'",
                f"no role lists '{ident}' in `contexts:`, no heartbeat, hook or scenario "
                "reaches it and no access.yaml group binds it, so it reaches no turn — move "
                "it beside the entity it is for, name it in that entity's `reach:`, or list "
                "it in a role's `contexts:`",
                file=context.path,
            )
        elif "run" in context.when and not reached:
            yield found(
                "context.run-unreached",
                f"context '{ident}'",
                f"'{ident}' attaches on run, but no heartbeat, hook or scenario reaches it, so "
                "no run ever carries it — move it beside (or above) the entity it is for, or "
                "name it in that entity's `reach:`",
                file=context.path,
                line=scope.lines.item(context.path, "when", is_word("run")),
            )


def _unknown_reach(scope: Scope) -> Iterator[Finding]:
    contexts = scope.brain.contexts
    for key in sorted(scope.brain.entities):
        entity = scope.brain.entities[key]
        for entry in entity.reach or ():
            if entry.context in contexts:
                continue
            why = scope.absent("context", ".context.md", entry.context, contexts)
            yield found(
                "reach.unknown",
                entity.key,
                f"{entity.kind} '{entity.id}' reaches '{entry.context}', but {why}, so its "
                "runs carry nothing for it — fix the name in `reach:`, or remove it",
                file=entity.path,
                line=scope.lines.item(entity.path, "reach", is_reach(entry.context)),
            )


def _ask_descriptions(scope: Scope) -> Iterator[Finding]:
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        if "ask" not in context.when or context.description is not None:
            continue
        yield found(
            "context.ask-description",
            f"context '{ident}'",
            f"'{ident}' attaches on ask, but has no `description:`, and the description is "
            "its line in the agent's catalog — add one saying what it is for (and what not)",
            file=context.path,
            line=scope.lines.item(context.path, "when", is_word("ask")),
        )


def _over_budget(scope: Scope) -> Iterator[Finding]:
    # Instructions are never cut, so a context whose instructions alone pass its `chars`
    # arrives as a one-line stub on every turn that does not open it by name.
    manifest = scope.brain.manifest
    for ident in sorted(scope.brain.contexts):
        context = scope.brain.contexts[ident]
        size = len(context.instructions)
        budgets = {
            context_chars(context, role, manifest): role for role in _carriers(scope, context)
        }
        chars = min(budgets)
        if size <= chars:
            continue
        source, knob = _budget_source(scope, context, budgets[chars])
        yield found(
            "context.over-budget",
            f"context '{ident}'",
            f"'{ident}' has {size:,} characters of instructions, more than its chars budget "
            f"of {chars:,} ({source}); instructions are never cut, so it never attaches on its "
            f"own — every turn that does not open it gets a one-line stub instead: shorten "
            f"the instructions, or raise {knob} above {size:,}",
            file=context.path,
            line=scope.lines.key(context.path, "chars") if context.chars is not None else None,
        )


def _carriers(scope: Scope, context: ContextSpec) -> list[RoleSpec | None]:
    """The roles whose turns may carry the context (their budgets may differ); [None] if none.

    A role admits it, runs as an entity whose reach holds it, or answers a chat bound to it.
    """
    roles = scope.brain.roles
    names = {r.id for r in roles.values() if r.admits(context.id)}
    names |= {e.agent for e in scope.reached.get(context.id, ()) if e.agent is not None}
    names |= {
        rule.role
        for rule in scope.brain.access.rules
        if context.id in rule.contexts and rule.role is not None
    }
    found: list[RoleSpec | None] = [roles[n] for n in sorted(names) if n in roles]
    return found or [None]


def _budget_source(scope: Scope, context: ContextSpec, role: RoleSpec | None) -> tuple[str, str]:
    """Which tier set the budget, in words, and the knob to raise."""
    if context.chars is not None:
        return "its own `chars:`", f"`chars:` in {context.path}"
    if role is not None and role.contexts_budget.chars is not None:
        return (
            f"role '{role.id}', `contexts_budget.chars`",
            f"`contexts_budget.chars` in {role.path} (or set `chars:` in the context's file)",
        )
    if scope.brain.manifest.contexts.chars is not None:
        return (
            "MANIFEST `contexts.chars`",
            "`chars:` in the context's file (or `contexts.chars` in MANIFEST.yaml)",
        )
    return "Keel's default", "`chars:` in the context's file"
