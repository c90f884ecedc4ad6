"""Contexts that load but cannot do what their files say: unreached, misnamed, undescribed."""

from __future__ import annotations

from collections.abc import Iterator

from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, is_reach, is_word


def check(scope: Scope) -> Iterator[Finding]:
    yield from _unreached(scope)
    yield from _unknown_reach(scope)
    yield from _ask_descriptions(scope)


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
