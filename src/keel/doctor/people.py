"""Who decides cards: approvals no one is named to decide, and an operators' chat no bot
may speak in.

Read from the brain's policies alone (MANIFEST's and each role's `approvals:` and
`people:`): a policy that says `required` needs a person able to decide it. Without
`people:` anyone who can reply decides, which doctor warns of; with it, a required
approval no approver may decide would leave its cards pending until they time out.
"""

from __future__ import annotations

from collections.abc import Iterator

from keel.brain.files import ACCESS_PATH, MANIFEST_PATH
from keel.brain.knobs import DEFAULT_DECISIONS
from keel.brain.people import HERE, Deciders, approvals_chat, deciders, people_of
from keel.brain.problems import suggest
from keel.brain.snapshot import Brain
from keel.brain.specs import RISK_CLASSES, RoleSpec
from keel.doctor.findings import Finding, found
from keel.doctor.scope import Risks, Scope

_DEFAULT_REQUIRED = frozenset(k for k, d in DEFAULT_DECISIONS.items() if d == "required")


def check(scope: Scope) -> Iterator[Finding]:
    yield from _unnamed(scope)
    yield from _undecidable(scope)
    yield from _silent_chat(scope)
    yield from _unknown_capabilities(scope)


def _roles(brain: Brain) -> list[RoleSpec | None]:
    # None stands for MANIFEST alone (a run whose role did not resolve).
    return [None, *(brain.roles[i] for i in sorted(brain.roles))]


def _required(brain: Brain, role: RoleSpec | None) -> list[str]:
    """The risk classes and capabilities whose calls the policy says wait for a person."""
    decisions = dict(brain.manifest.approvals.decisions)
    if role is not None:
        decisions.update(role.approvals.decisions)
    return [key for key, decision in decisions.items() if decision == "required"]


def _own(role: RoleSpec) -> set[str]:
    return {key for key, decision in role.approvals.decisions if decision == "required"}


def _policy_file(brain: Brain, role: RoleSpec | None, key: str) -> str:
    if role is not None and key in dict(role.approvals.decisions):
        return role.path
    return brain.manifest.path or MANIFEST_PATH


def _unnamed(scope: Scope) -> Iterator[Finding]:
    brain = scope.brain
    if brain.manifest.broken is not None:
        return  # approvals.strict says what a broken MANIFEST holds
    # Keel's own default (`dangerous: required`) holds in every brain; only a requirement
    # the brain adds makes the lack of named approvers worth saying.
    required = {
        k: role
        for role in _roles(brain)
        for k in _required(brain, role)
        if k not in _DEFAULT_REQUIRED
    }
    if not required or any(people_of(brain, role) is not None for role in _roles(brain)):
        return
    key, role = next(iter(required.items()))
    yield found(
        "approvals.unnamed",
        "approvals",
        f"approvals have no named approvers: {', '.join(sorted(required))} wait for a person, "
        "but anyone who can reply to a card decides it (a client in the room included) — add "
        "`people: {owners: [tg:user:ID], approvers: {'*': [owners]}}` to MANIFEST.yaml",
        file=_policy_file(brain, role, key),
    )


def _undecidable(scope: Scope) -> Iterator[Finding]:
    brain = scope.brain
    broken = brain.manifest.broken is not None
    for role in _roles(brain):
        people = people_of(brain, role)
        if people is None or (broken and (role is None or role.people is None)):
            continue  # approvals.nobody says that a broken MANIFEST lets nobody decide
        for key in _required(brain, role):
            if role is not None and role.people is None and key not in _own(role):
                continue  # MANIFEST's own requirement, said once for MANIFEST
            if not _undecided(people, key, scope.risks):
                continue
            who = f"role '{role.id}'" if role is not None else "MANIFEST.yaml"
            yield found(
                "approvals.no-approver",
                key,
                f"{who} requires approval for {key}, but people: names no approver able to "
                f"decide it, so its cards wait until they time out (denied) — add "
                f"`{key}: [tg:user:ID]` (or owners) under `people: approvers:`, or a '*' entry",
                file=_policy_file(brain, role, key),
            )


def _undecided(people: Deciders, key: str, risks: Risks) -> bool:
    """Whether some card of `key` (a risk class, or a capability) has nobody to decide it.

    A capability's cards carry the risk class of the tool that made them: each class its
    tools carry needs an approver. A capability no known tool holds may come in any class,
    so an approver of any class will do.
    """
    if key in RISK_CLASSES:
        return not deciders(people, "", key)
    carried = risks.get(key)
    if carried:
        return any(not deciders(people, key, risk) for risk in sorted(carried))
    return not any(deciders(people, key, risk) for risk in RISK_CLASSES)


def _unknown_capabilities(scope: Scope) -> Iterator[Finding]:
    """A capability in `approvals:` or `people: approvers:` that no tool holds: a policy or
    an approver that never applies (a misspelling leaves its cards to the next key)."""
    if not scope.risks:
        return  # doctor without the tools cannot tell
    brain = scope.brain
    for role in _roles(brain):
        path = role.path if role is not None else brain.manifest.path or MANIFEST_PATH
        policy = role.approvals if role is not None else brain.manifest.approvals
        people = role.people if role is not None else brain.manifest.people
        keys = [("approvals", k) for k, _ in policy.decisions]
        keys += [("people: approvers", k) for k, _ in (people.approvers if people else ())]
        for where, key in keys:
            if key in RISK_CLASSES or key in ("*", "chat") or key in scope.risks:
                continue
            near = suggest(key, scope.risks)
            hint = f"did you mean '{near}'? " if near else ""
            yield found(
                "approvals.unknown-capability",
                key,
                f"{where} names '{key}', a capability no tool holds, so it never applies — "
                f"{hint}the tools' capabilities are {', '.join(sorted(scope.risks))}",
                file=path,
                line=scope.lines.key(path, *where.split(": "), key),
            )


def _silent_chat(scope: Scope) -> Iterator[Finding]:
    brain = scope.brain
    access = brain.access
    bots = access.bots
    seen: set[str] = set()
    for role in _roles(brain):
        chat = approvals_chat(brain, role)
        if chat is None or chat in seen:
            continue
        seen.add(chat)
        refused = access.room_refusal(chat)
        # An operators' chat is a group: a group rule for it, or a bot's default rule.
        if refused is None and any(access.rule_for(bot, chat) for bot in bots):
            continue
        said = role.path if role is not None and role.approvals.chat not in (None, HERE) else None
        why = refused or "no bot has a rule for it in access.yaml (nor a default rule)"
        yield found(
            "approvals.chat",
            chat,
            f"approval cards go to {chat}, but no bot may speak there: {why} — add a rule for "
            f"{chat} under a bot's `chats:` in {access.path or ACCESS_PATH}, or name another "
            "chat in `approvals: {chat:}`",
            file=said or brain.manifest.path or MANIFEST_PATH,
        )
