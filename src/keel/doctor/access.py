"""Chat access: access.yaml that did not load (whole or a rule of it), and bindings and
rules that name what the brain does not have.

Every problem of access.yaml is reported here, once, with what it refuses: a file that
failed whole refuses every turn of every bot; a failed group rule, every turn in its chat;
a failed default or DM rule, the turns of its bot that the template would have governed.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.access import rule_loc
from keel.brain.constitution import ChatRule, FailedRule
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope


def check(scope: Scope) -> Iterator[Finding]:
    yield from _failures(scope)
    path = scope.brain.access.path
    for rule in scope.brain.access.rules:
        loc = rule_loc(rule)
        subject = _subject(rule)
        if rule.role is not None and rule.role not in scope.brain.roles:
            why = scope.absent("role", ".agent.md", rule.role, scope.brain.roles)
            yield found(
                "access.unknown-role",
                subject,
                f"{subject} gives role '{rule.role}', but {why}, so the rule cannot answer "
                "— name an existing role in `role:`",
                file=path,
                line=scope.lines.key(path, *loc, "role"),
            )
        for ident, key in rule.contexts.items():
            line = scope.lines.key(path, *loc, "contexts", ident)
            yield from _binding(scope, rule, ident, key, path, line)


def _binding(
    scope: Scope, rule: ChatRule, ident: str, key: str | None, path: str | None, line: int | None
) -> Iterator[Finding]:
    subject = _subject(rule)
    context = scope.brain.contexts.get(ident)
    if context is None:
        why = scope.absent("context", ".context.md", ident, scope.brain.contexts)
        yield found(
            "access.unknown-context",
            subject,
            f"{subject} binds context '{ident}', but {why}, so the binding does nothing — "
            "fix the name under `contexts:`, or remove the binding",
            file=path,
            line=line,
        )
    elif context.entity is not None and key is None:
        yield found(
            "access.missing-key",
            subject,
            f"{subject} binds '{ident}' (keyed by {context.entity}) with no key, which pins "
            f"this chat to no {context.entity}: every link naming one is refused here — give "
            f"the key, `{ident}: <{context.entity}>`, unless that is what you meant",
            file=path,
            line=line,
        )
    elif context.entity is None and key is not None:
        yield found(
            "access.extra-key",
            subject,
            f"{subject} binds '{ident}' with key '{key}', but '{ident}' names no entity (its "
            f"file has no `entity:`), so the key can never apply — write `{ident}:` with no "
            f"value, or add `entity:` to {context.path}",
            file=path,
            line=line,
        )


def _failures(scope: Scope) -> Iterator[Finding]:
    access = scope.brain.access
    if access.broken is not None:
        for skip in scope.brain.skips:
            if skip.path == access.path:
                yield found(
                    "access.file",
                    skip.path,
                    f"{skip.reason} — access rules fail closed: until this is fixed, every "
                    "turn of every bot is refused",
                    file=skip.path,
                    line=skip.line,
                )
    for failure in access.failed:
        for problem in failure.problems:
            yield found(
                "access.rule",
                failure.subject,
                f"{problem.reason} — the rule did not load, so {_refused(failure)} until it "
                "is fixed",
                file=problem.path,
                line=problem.line,
            )


def _refused(failure: FailedRule) -> str:
    if failure.scope == "chat":
        chat = failure.chat or ""
        return f"no bot answers in chat '{chat if len(chat) <= 80 else chat[:77] + '...'}'"
    if failure.scope == "dm":
        return f"bot '{failure.bot}' answers no direct message that has no rule of its own"
    return f"bot '{failure.bot}' answers no chat that has no rule of its own"


def _subject(rule: ChatRule) -> str:
    if rule.is_group:
        return f"bot '{rule.bot}' chat '{rule.scope}'"
    return f"bot '{rule.bot}' {'DM' if rule.scope == 'dm' else 'default'} rule"
