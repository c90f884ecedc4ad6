"""`approvals:` in MANIFEST and in a role, and the knobs that read them.

Which tool calls wait for a person: the role's entries override MANIFEST's key by key, a
capability's entry overrides its risk class's, and with neither only `dangerous` waits.
A card waits for the role's `timeout`, else MANIFEST's, else two days.
"""

from __future__ import annotations

from datetime import timedelta

import pytest

from keel.brain import Brain, load_brain
from keel.brain import limits as bounds
from keel.brain.knobs import approval_required, approval_timeout
from keel.brain.specs import RISK_CLASSES, RiskClass
from tests.conftest import WriteBrain

ROLE = "features/desk/desk.agent.md"
OTHER = "features/desk/other.agent.md"
MANIFEST = "constitution/MANIFEST.yaml"


def role(approvals: str | None) -> str:
    line = f"approvals: {approvals}\n" if approvals is not None else ""
    return f"---\ncontexts: []\n{line}---\nYou are the desk.\n"


def load(write_brain: WriteBrain, *, manifest: str | None, mine: str | None) -> Brain:
    files: dict[str, str | bytes] = {ROLE: role(mine), OTHER: role(None)}
    if manifest is not None:
        files[MANIFEST] = f"approvals: {manifest}\n"
    brain = load_brain(write_brain(files))
    assert brain.skips == ()
    return brain


@pytest.mark.parametrize("risk", RISK_CLASSES)
def test_with_no_policy_only_dangerous_calls_wait(write_brain: WriteBrain, risk: RiskClass) -> None:
    brain = load(write_brain, manifest=None, mine=None)
    assert approval_required(brain, "desk", "context:bind", risk) is (risk == "dangerous")
    assert approval_required(brain, None, "", risk) is (risk == "dangerous")


# (MANIFEST's approvals, the role's, capability, risk, required?)
CASES = [
    pytest.param("{moderate: required}", None, "message:send", "moderate", True, id="manifest"),
    pytest.param("{dangerous: none}", None, "x:y", "dangerous", False, id="manifest-off"),
    pytest.param(
        "{moderate: required}", "{moderate: none}", "message:send", "moderate", False, id="role"
    ),
    pytest.param(
        "{moderate: required, 'context:bind': none}",
        None,
        "context:bind",
        "moderate",
        False,
        id="capability-over-risk",
    ),
    pytest.param(
        None, "{'context:bind': required}", "context:bind", "safe", True, id="capability-on-safe"
    ),
    pytest.param(
        "{'context:bind': required}",
        "{'context:bind': none}",
        "context:bind",
        "moderate",
        False,
        id="role-capability-over-manifest-capability",
    ),
    pytest.param(
        "{'context:bind': required}",
        "{moderate: none}",
        "context:bind",
        "moderate",
        True,
        id="manifest-capability-over-role-risk",
    ),
    pytest.param(
        None, "{'context:bind': none}", "message:send", "dangerous", True, id="other-capability"
    ),
    pytest.param(None, "{dangerous: none}", "", "dangerous", False, id="no-capability"),
]


@pytest.mark.parametrize(("manifest", "mine", "capability", "risk", "required"), CASES)
def test_role_over_manifest_and_capability_over_risk_class(
    write_brain: WriteBrain,
    manifest: str | None,
    mine: str | None,
    capability: str,
    risk: RiskClass,
    required: bool,
) -> None:
    brain = load(write_brain, manifest=manifest, mine=mine)
    assert approval_required(brain, "desk", capability, risk) is required
    assert approval_required(brain, brain.roles["desk"], capability, risk) is required


def test_another_role_and_no_role_read_manifest_alone(write_brain: WriteBrain) -> None:
    brain = load(write_brain, manifest="{moderate: required}", mine="{moderate: none}")
    assert approval_required(brain, "other", "message:send", "moderate")
    assert approval_required(brain, None, "message:send", "moderate")
    assert approval_required(brain, "no-such-role", "message:send", "moderate")


@pytest.mark.parametrize(
    ("manifest", "mine", "timeout"),
    [
        pytest.param(None, None, timedelta(days=2), id="default"),
        pytest.param("{timeout: 30m}", None, timedelta(minutes=30), id="manifest"),
        pytest.param("{timeout: 30m}", "{timeout: 1h30m}", timedelta(minutes=90), id="role"),
        pytest.param(None, "{timeout: 1w}", timedelta(weeks=1), id="weeks"),
        pytest.param(None, "{timeout: 45s}", timedelta(seconds=45), id="seconds"),
    ],
)
def test_a_card_waits_for_the_nearest_timeout(
    write_brain: WriteBrain, manifest: str | None, mine: str | None, timeout: timedelta
) -> None:
    brain = load(write_brain, manifest=manifest, mine=mine)
    assert approval_timeout(brain, "desk") == timeout
    assert approval_timeout(brain, "other") == (
        timedelta(minutes=30) if manifest else timedelta(days=2)
    )


def test_the_policy_keeps_what_the_file_says(write_brain: WriteBrain) -> None:
    brain = load(
        write_brain,
        manifest="{'message:send': required, dangerous: required, safe: none, timeout: 2d}",
        mine=None,
    )
    policy = brain.manifest.approvals
    assert policy.decisions == (
        ("safe", "none"),
        ("dangerous", "required"),
        ("message:send", "required"),
    )
    assert policy.timeout == timedelta(days=2)


@pytest.mark.parametrize(
    ("approvals", "line", "message"),
    [
        pytest.param(
            "  dangerus: required\n",
            4,
            "'approvals.dangerus': 'dangerus' is neither a risk class nor a capability — did "
            "you mean 'dangerous'? The keys are safe, moderate, dangerous, a capability such as "
            "context:bind, timeout and chat",
            id="misspelt-risk",
        ),
        pytest.param(
            "  sending: none\n",
            4,
            "'approvals.sending': 'sending' is neither a risk class nor a capability — the keys "
            "are safe, moderate, dangerous, a capability such as context:bind, timeout and chat",
            id="not-a-capability",
        ),
        pytest.param(
            "  context:bind: maybe\n",
            4,
            "'approvals.context:bind' cannot be 'maybe' — expected one of: none, required",
            id="capability-decision",
        ),
        pytest.param(
            "  moderate: yes\n",
            4,
            "'approvals.moderate' cannot be 'yes' — expected one of: none, required",
            id="risk-decision",
        ),
        pytest.param(
            "  timeout: 90\n",
            4,
            "'approvals.timeout': 90 is not a duration — write a number and a unit: 30m, 12h, "
            "2d (s, m, h, d or w; 1h30m also works)",
            id="timeout-number",
        ),
        pytest.param(
            "  timeout: two days\n",
            4,
            "'approvals.timeout': 'two days' is not a duration",
            id="timeout-words",
        ),
        pytest.param(
            "  timeout: 367d\n",
            4,
            "'approvals.timeout': '367d' is 31,708,800 seconds; a timeout is 1 second to 366 "
            "days (docs/limits.md) — use a duration in that range",
            id="timeout-too-long",
        ),
        pytest.param(
            "  timeout: 0m\n", 4, "'approvals.timeout': '0m' is 0 seconds", id="timeout-zero"
        ),
    ],
)
def test_a_wrong_policy_skips_its_file_naming_key_value_and_fix(
    write_brain: WriteBrain, approvals: str, line: int, message: str
) -> None:
    text = f"---\ncontexts: []\napprovals:\n{approvals}---\nYou.\n"
    brain = load_brain(write_brain({ROLE: text}))
    [skip] = brain.skips
    assert (skip.path, skip.line) == (ROLE, line)
    assert skip.reason.startswith(message), skip.reason
    assert "desk" not in brain.roles


def test_a_wrong_policy_in_manifest_skips_manifest(write_brain: WriteBrain) -> None:
    brain = load_brain(write_brain({MANIFEST: "name: x\napprovals:\n  risky: required\n"}))
    [skip] = brain.skips
    assert (skip.path, skip.line) == (MANIFEST, 3)
    assert "'approvals.risky': 'risky' is neither a risk class nor a capability" in skip.reason
    assert brain.manifest.broken is not None
    assert brain.manifest.name is None, "MANIFEST is skipped: its defaults apply"
    assert approval_required(brain, None, "context:bind", "moderate"), "but none looser"


def test_the_timeout_bounds_are_those_of_limits() -> None:
    assert bounds.APPROVAL_TIMEOUT_SECONDS.low == 1
    assert bounds.APPROVAL_TIMEOUT_SECONDS.high == 366 * 86_400


# A MANIFEST that does not load never lets a call run without the person it would wait for.
BROKEN = [
    pytest.param(
        "approvals: {'message:send': required}\nstate: { rows: -1 }\n",
        {"message:send": True, "context:bind": False},
        id="approvals-readable-kept-as-written",
    ),
    pytest.param(
        "approvals: {'message:send': requird}\n",
        {"message:send": True, "context:bind": True},
        id="approvals-unreadable-all-wait",
    ),
    pytest.param(
        "approvals: {'message:send': required}\nstate: rows: 5\n",
        {"message:send": True, "context:bind": True},
        id="yaml-unreadable-all-wait",
    ),
    pytest.param(
        "aprovals: {'message:send': required}\n",
        {"message:send": True, "context:bind": True},
        id="key-misspelt-all-wait",
    ),
]


@pytest.mark.parametrize(("manifest", "waits"), BROKEN)
def test_a_broken_manifest_never_loosens_approvals(
    write_brain: WriteBrain, manifest: str, waits: dict[str, bool]
) -> None:
    brain = load_brain(write_brain({ROLE: role(None), MANIFEST: manifest}))
    assert brain.manifest.broken is not None
    assert [s.path for s in brain.skips] == [MANIFEST]
    for capability, required in waits.items():
        assert approval_required(brain, "desk", capability, "moderate") is required, capability
    assert not approval_required(brain, "desk", "context:read", "safe")
