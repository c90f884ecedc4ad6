"""`people:` in MANIFEST and in a role, and who may decide which card (`may_decide`).

Approvers are keyed by capability, then risk class, then `*`; `owners` in a list stands
for the owners; a role's `people:` overrides MANIFEST's key by key. No `people:` at all lets
anyone decide, as before people were named.
"""

from __future__ import annotations

import pytest

from keel.brain import Brain, load_brain
from keel.brain.people import approvals_chat, first_owner, may_decide, people_of
from keel.brain.specs import People
from tests.conftest import WriteBrain

ROLE = "features/desk/desk.agent.md"
MANIFEST = "constitution/MANIFEST.yaml"
PEOPLE = (
    "people:\n"
    "  owners: [tg:user:1, tg:user:2]\n"
    "  approvers:\n"
    '    "message:send": [tg:user:7]\n'
    "    dangerous: [owners, tg:user:9]\n"
    '    "*": [owners]\n'
)


def load(write_brain: WriteBrain, manifest: str, role_extra: str = "") -> Brain:
    role = f"---\ncontexts: []\n{role_extra}---\nYou are the desk.\n"
    return load_brain(write_brain({MANIFEST: manifest, ROLE: role}))


# (capability, risk, person, allowed?)
CASES = [
    pytest.param("message:send", "moderate", "tg:user:7", True, id="listed-for-capability"),
    pytest.param("message:send", "moderate", "tg:user:1", False, id="owner-not-listed"),
    pytest.param("context:bind", "dangerous", "tg:user:9", True, id="risk-class"),
    pytest.param("context:bind", "dangerous", "tg:user:2", True, id="owners-expand"),
    pytest.param("context:bind", "moderate", "tg:user:1", True, id="star"),
    pytest.param("context:bind", "moderate", "tg:user:9", False, id="star-owners-only"),
    pytest.param("", "moderate", "tg:user:2", True, id="no-capability-falls-to-star"),
]


@pytest.mark.parametrize(("capability", "risk", "person", "allowed"), CASES)
def test_who_may_decide_follows_the_approvers(
    write_brain: WriteBrain, capability: str, risk: str, person: str, allowed: bool
) -> None:
    brain = load(write_brain, PEOPLE)
    assert brain.skips == ()
    said = may_decide(people_of(brain, "desk"), capability, person, risk)
    assert (said is True) is allowed
    if not allowed:
        assert isinstance(said, str)
        assert f"{person} may not decide" in said


def test_a_decision_that_names_no_one_is_refused_when_people_are_named() -> None:
    people = People(owners=("tg:user:1",), approvers=(("*", ("owners",)),))
    said = may_decide(people, "message:send", None)
    assert isinstance(said, str)
    assert "names no person" in said


def test_no_people_lets_anyone_decide(write_brain: WriteBrain) -> None:
    brain = load(write_brain, 'approvals: {"message:send": required}\n')
    assert people_of(brain, "desk") is None
    assert may_decide(people_of(brain, "desk"), "message:send", None) is True
    assert may_decide(None, "message:send", "tg:user:666") is True
    assert first_owner(brain, "desk") is None


def test_a_capability_nobody_may_decide_says_so() -> None:
    people = People(owners=("tg:user:1",), approvers=(("message:send", ("tg:user:7",)),))
    said = may_decide(people, "context:bind", "tg:user:1", "moderate")
    assert isinstance(said, str)
    assert "no one may decide" in said


def test_a_roles_people_override_manifests_key_by_key(write_brain: WriteBrain) -> None:
    mine = 'people:\n  owners: [tg:user:5]\n  approvers: {"message:send": [owners]}\n'
    brain = load(write_brain, PEOPLE, role_extra=mine)
    assert brain.skips == ()
    people = people_of(brain, "desk")
    assert people is not None
    assert people.owners == ("tg:user:5",)
    assert may_decide(people, "message:send", "tg:user:5") is True
    assert may_decide(people, "message:send", "tg:user:7") is not True
    # MANIFEST's other keys stand, `owners` now the role's.
    assert may_decide(people, "context:bind", "tg:user:9", "dangerous") is True
    assert may_decide(people, "context:bind", "tg:user:5", "dangerous") is True
    assert first_owner(brain, "desk") == "tg:user:5"


@pytest.mark.parametrize(
    ("manifest", "error"),
    [
        pytest.param("people: {owners: [alice]}\n", "is not a person's id", id="bare-name"),
        pytest.param(
            'people: {approvers: {"send it": [tg:user:1]}}\n',
            "is not something to approve",
            id="bad-key",
        ),
        pytest.param("people: {owner: [tg:user:1]}\n", "owner", id="unknown-key"),
    ],
)
def test_a_people_entry_that_cannot_be_read_is_named(
    write_brain: WriteBrain, manifest: str, error: str
) -> None:
    brain = load(write_brain, manifest)
    [skip] = brain.skips
    assert skip.path == MANIFEST
    assert error in skip.reason


@pytest.mark.parametrize(
    "manifest",
    [
        pytest.param("people: {owners: [alice]}\n", id="a-wrong-value"),
        pytest.param('people: {approvers: {"message:send": [tg:user:7]}\n', id="broken-yaml"),
        pytest.param("peeple: {owners: [tg:user:1]}\n", id="a-misspelt-key"),
        pytest.param("name: x\nnot a mapping\n", id="no-people-at-all"),
    ],
)
def test_a_broken_manifest_lets_no_one_decide(write_brain: WriteBrain, manifest: str) -> None:
    # Whatever broke it, who decides cannot be read: nobody may, never whoever replies.
    brain = load(write_brain, manifest)
    assert brain.manifest.broken is not None
    people = people_of(brain, "desk")
    assert people is not None
    for person in ("tg:user:1", "tg:user:7", "tg:user:99"):
        assert may_decide(people, "message:send", person) is not True


@pytest.mark.parametrize(
    ("manifest", "role_extra", "chat"),
    [
        pytest.param("", "", None, id="not-said"),
        pytest.param("approvals: {chat: tg:chat:-100ops}\n", "", "tg:chat:-100ops", id="manifest"),
        pytest.param("approvals: {chat: here}\n", "", None, id="here"),
        pytest.param(
            "approvals: {chat: tg:chat:-100ops}\n", "approvals: {chat: here}\n", None, id="role"
        ),
    ],
)
def test_the_approvals_chat_is_the_roles_over_manifests(
    write_brain: WriteBrain, manifest: str, role_extra: str, chat: str | None
) -> None:
    brain = load(write_brain, manifest or "name: x\n", role_extra)
    assert brain.skips == ()
    assert approvals_chat(brain, "desk") == chat
