"""Roles and the contexts they admit: unknown names, a catalog they cannot open, no list at all."""

from __future__ import annotations

from collections.abc import Iterator

from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, is_word, quoted


def check(scope: Scope) -> Iterator[Finding]:
    yield from _unknown(scope)
    yield from _no_open(scope)
    yield from _no_contexts(scope)


def _unknown(scope: Scope) -> Iterator[Finding]:
    contexts = scope.brain.contexts
    for ident in sorted(scope.brain.roles):
        role = scope.brain.roles[ident]
        for name in role.contexts or ():
            if name == "*" or name in contexts:
                continue
            why = scope.absent("context", ".context.md", name, contexts)
            yield found(
                "role.unknown-context",
                f"role '{ident}'",
                f"role '{ident}' admits '{name}', but {why}, so the entry admits nothing — fix "
                "the name in `contexts:`, or remove it",
                file=role.path,
                line=scope.lines.item(role.path, "contexts", is_word(name)),
            )


def _no_open(scope: Scope) -> Iterator[Finding]:
    asks = sorted(c.id for c in scope.brain.contexts.values() if "ask" in c.when)
    for ident in sorted(scope.brain.roles):
        role = scope.brain.roles[ident]
        admitted = [c for c in asks if role.admits(c)]
        if not admitted or role.can("context:read"):
            continue
        where = "capabilities" if role.capabilities else "contexts"
        yield found(
            "role.no-open",
            f"role '{ident}'",
            f"role '{ident}' admits ask context(s) {quoted(admitted)} but cannot call "
            "context_open (no `context:read` and no '*' in `capabilities:`), so it gets no "
            "catalog line for them and can never open them — add context:read to "
            "`capabilities:`",
            file=role.path,
            line=scope.lines.key(role.path, where),
        )


def _no_contexts(scope: Scope) -> Iterator[Finding]:
    missing = [
        scope.brain.roles[i]
        for i in sorted(scope.brain.roles)
        if scope.brain.roles[i].contexts is None
    ]
    if not missing:
        return
    named = ", ".join(f"'{r.id}' ({r.path})" for r in missing)
    yield found(
        "role.no-contexts",
        "roles",
        f"{len(missing)} role(s) have no `contexts:` list, so they admit no feature context "
        f"(no always or ask context, no reply or code link): {named} — add `contexts: [...]` "
        "listing what each may carry, or `contexts: []` to say none on purpose",
    )
