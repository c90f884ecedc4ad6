"""Brain entities: files that did not load, and names between entities that point nowhere.

A heartbeat's `schedule` that cron cannot read, or that never fires, fails its file's
load, so it is reported here as a skip, with its line and the field that is wrong.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.doctor.findings import Finding, found
from keel.doctor.scope import Scope, is_word, maybe


def check(scope: Scope) -> Iterator[Finding]:
    yield from _skips(scope)
    yield from _agents(scope)
    yield from _bots(scope)
    yield from _skills(scope)
    yield from _state_views(scope)


def _skips(scope: Scope) -> Iterator[Finding]:
    # The loader's reason already says what is wrong and how to fix it. access.yaml's
    # problems are Chat access findings (keel.doctor.access), with what each one refuses.
    access = scope.brain.access.path
    for skip in scope.brain.skips:
        if skip.path != access:
            yield found("entity.skip", skip.path, skip.reason, file=skip.path, line=skip.line)


def _agents(scope: Scope) -> Iterator[Finding]:
    roles = scope.brain.roles
    for key in sorted(scope.brain.entities):
        entity = scope.brain.entities[key]
        if entity.agent is None or entity.agent in roles:
            continue
        why = scope.absent("role", ".agent.md", entity.agent, roles)
        yield found(
            "entity.agent",
            entity.key,
            f"{entity.kind} '{entity.id}' runs as agent '{entity.agent}', but {why}, so it "
            f"cannot run — name an existing role in `agent:`, or add "
            f"{entity.agent}.agent.md",
            file=entity.path,
            line=scope.lines.key(entity.path, "agent"),
        )


def _bots(scope: Scope) -> Iterator[Finding]:
    access = scope.brain.access
    if access.path is None or access.broken is not None:
        return  # no access.yaml to know bots by, or one whose failure is reported already
    bots = access.named_bots
    for key in sorted(scope.brain.entities):
        entity = scope.brain.entities[key]
        if entity.bot is None or entity.bot in bots:
            continue
        yield found(
            "entity.bot",
            entity.key,
            f"{entity.kind} '{entity.id}' speaks as bot '{entity.bot}', but access.yaml has "
            f"no rule for that bot{maybe(entity.bot, bots)}, so no chat of it is known — "
            "fix the name in `bot:`, or give the bot its rules in access.yaml",
            file=entity.path,
            line=scope.lines.key(entity.path, "bot"),
        )


def _skills(scope: Scope) -> Iterator[Finding]:
    skills = scope.brain.skills
    for ident in sorted(scope.brain.roles):
        role = scope.brain.roles[ident]
        for name in role.skills:
            if name in skills:
                continue
            why = scope.absent("skill", ".skill.md", name, skills)
            yield found(
                "entity.skill",
                f"role '{role.id}'",
                f"role '{role.id}' lists skill '{name}', but {why} — fix the name in "
                f"`skills:`, or add {name}.skill.md",
                file=role.path,
                line=scope.lines.item(role.path, "skills", is_word(name)),
            )


def _state_views(scope: Scope) -> Iterator[Finding]:
    schema = scope.schema
    if schema is None:
        return  # view.unchecked says the database was not looked at
    for ident in sorted(scope.brain.roles):
        role = scope.brain.roles[ident]
        for view in role.state:
            if schema.has(view):
                continue
            yield found(
                "entity.state-view",
                f"role '{role.id}'",
                f"role '{role.id}' shows state view '{view}', which the database lacks"
                f"{maybe(view, schema.names)} — create it in state/*.sql and apply it, or fix "
                "the name in `state:`",
                file=role.path,
                line=scope.lines.item(role.path, "state", is_word(view)),
            )
