"""Roles and the contexts they admit."""

from __future__ import annotations

from tests.conftest import WriteBrain
from tests.doctor.brains import ROLE, doctor, of, only


def test_an_admitted_name_that_is_no_context_warns(write_brain: WriteBrain) -> None:
    role = "---\ncontexts:\n  - ticket\n  - digest\n  - tickt\ncapabilities: [context:read]\n---\nHi.\n"
    finding = only(doctor(write_brain, {ROLE: role}), "role.unknown-context")
    assert (finding.level, finding.file, finding.line) == ("warn", ROLE, 5)
    assert "admits 'tickt', but no context is named 'tickt' (did you mean 'ticket'?)" in (
        finding.message
    )


def test_an_admitted_context_of_a_switched_off_feature_says_so(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest, promo]\ncapabilities: [context:read]\n---\nHi.\n"
    report = doctor(
        write_brain,
        {
            ROLE: role,
            "features/old/FEATURE.md": "---\nenabled: false\n---\n",
            "features/old/promo.context.md": "---\nwhen: [chat]\n---\nPromo.\n",
        },
    )
    [finding] = of(report, "role.unknown-context")
    assert "'promo' belongs to feature 'old', which is switched off" in finding.message


def test_an_ask_context_without_context_read_warns(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest]\n---\nHi.\n"
    finding = only(doctor(write_brain, {ROLE: role}), "role.no-open")
    assert (finding.level, finding.file, finding.line) == ("warn", ROLE, 2)
    assert "admits ask context(s) 'ticket' but cannot call context_open" in finding.message
    assert finding.message.endswith("add context:read to `capabilities:`")


def test_no_open_points_at_capabilities_when_there_are_some(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest]\ncapabilities:\n  - context:bind\n---\nHi.\n"
    assert only(doctor(write_brain, {ROLE: role}), "role.no-open").line == 3


def test_a_star_capability_can_open(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: ['*']\ncapabilities: ['*']\n---\nHi.\n"
    assert doctor(write_brain, {ROLE: role}).findings == ()


def test_a_role_admitting_no_ask_context_needs_no_context_read(write_brain: WriteBrain) -> None:
    # ticket stays reached through its access.yaml binding.
    assert doctor(write_brain, {ROLE: "---\ncontexts: [digest]\n---\nHi.\n"}).findings == ()


def test_roles_without_contexts_get_one_note(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            "features/desk/night.agent.md": "---\ndescription: Night.\n---\nNight.\n",
            "features/desk/triage.agent.md": "---\nskills: [tone]\n---\nTriage.\n",
            "features/desk/quiet.agent.md": "---\ncontexts: []\n---\nQuiet.\n",
        },
    )
    finding = only(report, "role.no-contexts")
    assert (finding.level, finding.file, finding.line, finding.subject) == (
        "note",
        None,
        None,
        "roles",
    )
    assert finding.message.startswith("2 role(s) have no `contexts:` list")
    assert "'night' (features/desk/night.agent.md), 'triage' (features/desk/triage.agent.md)" in (
        finding.message
    )
    assert "quiet" not in finding.message
