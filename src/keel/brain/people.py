"""Who may decide a card: the brain's `people:` and where its cards are posted.

A pure answer over the brain's values. `people:` in MANIFEST names the owners and, per
capability (or risk class, or `*` for the rest), the approvers; a role's `people:` overrides
MANIFEST's key by key, as its `approvals:` does. A brain with no `people:` at all names no
one, and then anyone who can reply to a card decides it (today's behaviour; doctor warns).

`approvals: {chat: ...}` says where a run's cards go: an operators' chat, or `here` (the room
the run speaks in). Not said, a card goes to the run's room.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from keel.brain.snapshot import Brain
from keel.brain.specs import People, RoleSpec

# The approver entry that stands for every owner.
OWNERS = "owners"
# The `approvals: {chat:}` word for the run's own room.
HERE = "here"


@dataclass(frozen=True, slots=True, kw_only=True)
class Deciders:
    """Who may decide cards of one role: its owners and approvers, MANIFEST's under the role's."""

    owners: tuple[str, ...]
    approvers: tuple[tuple[str, tuple[str, ...]], ...]


def people_of(brain: Brain, role: RoleSpec | str | None) -> Deciders | None:
    """The people who decide a role's cards; None when neither MANIFEST nor the role names
    any (anyone who can reply decides)."""
    spec = brain.roles.get(role) if isinstance(role, str) else role
    tiers = [p for p in (brain.manifest.people, spec.people if spec else None) if p is not None]
    if not tiers:
        return None
    owners: tuple[str, ...] = ()
    approvers: dict[str, tuple[str, ...]] = {}
    for tier in tiers:
        if tier.owners is not None:
            owners = tier.owners
        approvers.update(tier.approvers)
    return Deciders(owners=owners, approvers=tuple(approvers.items()))


def deciders(people: Deciders | People, capability: str, risk: str) -> tuple[str, ...]:
    """Who may decide a card of this capability and risk class: the approvers listed for the
    capability, else for its risk class, else for `*`; `owners` expanded."""
    listed = dict(people.approvers)
    names = next(
        (listed[k] for k in (capability, risk, "*") if k and k in listed),
        (),
    )
    owners = people.owners or ()
    found: list[str] = []
    for name in names:
        found.extend(owners if name == OWNERS else (name,))
    return tuple(dict.fromkeys(found))


def may_decide(
    people: Deciders | People | None, capability: str, person: str | None, risk: str = ""
) -> Literal[True] | str:
    """True when `person` may decide a card of `capability` (and `risk`), else the reason
    they may not, in words to show them and record. No `people:` lets anyone decide."""
    if people is None:
        return True
    what = capability or risk or "this"
    allowed = deciders(people, capability, risk)
    if person is None:
        return (
            f"the decision names no person, and only named approvers decide {what} cards — "
            "say who decides (a turn's sender, keel approve --as ID, the person field of "
            "POST /v1/approvals/{card})"
        )
    if person in allowed:
        return True
    if not allowed:
        return (
            f"no one may decide {what} cards: people: in MANIFEST.yaml lists no approver for "
            f"{capability or '*'} — add one (keel doctor says the same)"
        )
    return (
        f"{person} may not decide {what} cards — only {', '.join(allowed)} may "
        "(people: approvers in MANIFEST.yaml)"
    )


def first_owner(brain: Brain, role: RoleSpec | str | None) -> str | None:
    """The role's first owner (who `keel approve` decides as on the local machine), or None."""
    people = people_of(brain, role)
    return people.owners[0] if people is not None and people.owners else None


def approve_as(brain: Brain, role: str | None, capability: str, risk: str) -> str | None:
    """The `--as` a hint to decide a card must carry: None when `keel approve`'s default (the
    first owner) may decide it, or anyone may; else the first person who may, or `ID`."""
    people = people_of(brain, role)
    if people is None:
        return None
    owner = first_owner(brain, role)
    if owner is not None and may_decide(people, capability, owner, risk) is True:
        return None
    able = deciders(people, capability, risk)
    return able[0] if able else "ID"


def approvals_chat(brain: Brain, role: RoleSpec | str | None) -> str | None:
    """The operators' chat a role's cards go to; None for the run's own room (`here`, or not
    said). The role's `approvals: {chat:}` over MANIFEST's."""
    spec = brain.roles.get(role) if isinstance(role, str) else role
    said = spec.approvals.chat if spec is not None else None
    chat = said or brain.manifest.approvals.chat
    return None if chat in (None, HERE) else chat
