"""Doctor on who decides cards: approvals with no named approvers (warn), a required
approval no approver may decide (fail), an approvals chat no bot may speak in (fail)."""

from __future__ import annotations

from pathlib import Path

from keel.doctor.findings import Report
from keel.runtime.engine import Engine
from tests.conftest import WriteBrain
from tests.doctor.brains import ACCESS, CLEAN, ROLE, doctor, only

MANIFEST = "constitution/MANIFEST.yaml"
REQUIRED = 'approvals: {"message:send": required}\n'
PEOPLE = "people:\n  owners: [tg:user:1]\n  approvers: {'*': [owners]}\n"
ONLY_GROUP = CLEAN[ACCESS].replace("    default: { role: support }\n", "")


def test_approvals_with_no_people_warn_and_name_the_fix(write_brain: WriteBrain) -> None:
    finding = only(doctor(write_brain, {MANIFEST: REQUIRED}), "approvals.unnamed")
    assert (finding.level, finding.file) == ("warn", MANIFEST)
    assert "approvals have no named approvers: message:send" in finding.message
    assert "add `people:" in finding.message


def test_a_roles_own_requirement_is_named_in_the_roles_file(write_brain: WriteBrain) -> None:
    role = CLEAN[ROLE].replace("state: [queue]\n", "state: [queue]\n" + REQUIRED)
    finding = only(doctor(write_brain, {ROLE: role}), "approvals.unnamed")
    assert finding.file == ROLE


def test_named_approvers_able_to_decide_leave_doctor_quiet(write_brain: WriteBrain) -> None:
    assert doctor(write_brain, {MANIFEST: REQUIRED + PEOPLE}).findings == ()


def test_a_required_approval_no_approver_may_decide_fails(write_brain: WriteBrain) -> None:
    people = "people:\n  owners: [tg:user:1]\n  approvers: {'context:bind': [owners]}\n"
    finding = only(doctor(write_brain, {MANIFEST: REQUIRED + people}), "approvals.no-approver")
    assert (finding.level, finding.subject, finding.file) == ("fail", "message:send", MANIFEST)
    assert "MANIFEST.yaml requires approval for message:send" in finding.message
    assert "`message:send: [tg:user:ID]`" in finding.message


def test_an_approvals_chat_no_bot_may_speak_in_fails(write_brain: WriteBrain) -> None:
    manifest = REQUIRED + PEOPLE + "approvals: {chat: tg:chat:-100ops}\n"
    manifest = manifest.replace('approvals: {"message:send": required}\n', "").replace(
        "approvals: {chat:", 'approvals: {"message:send": required, chat:'
    )
    finding = only(doctor(write_brain, {MANIFEST: manifest, ACCESS: ONLY_GROUP}), "approvals.chat")
    assert (finding.level, finding.subject, finding.file) == ("fail", "tg:chat:-100ops", MANIFEST)
    assert "no bot has a rule for it in access.yaml" in finding.message
    assert "add a rule for tg:chat:-100ops" in finding.message
    # A rule for the chat lets the desk bot post the cards there.
    ops = ONLY_GROUP + '      "tg:chat:-100ops":\n        role: support\n'
    assert doctor(write_brain, {MANIFEST: manifest, ACCESS: ops}).findings == ()


def test_keels_own_default_written_out_is_not_a_requirement_to_name(
    write_brain: WriteBrain,
) -> None:
    assert doctor(write_brain, {MANIFEST: "approvals: {dangerous: required}\n"}).findings == ()


def _engine_doctor(write_brain: WriteBrain, tmp_path: Path, manifest: str) -> Report:
    # The engine's doctor knows its tools: message:send's cards are moderate.
    root = write_brain({**CLEAN, MANIFEST: manifest})
    with Engine(root, f"sqlite:///{tmp_path / 'keel.db'}", watch=False) as engine:
        engine.apply_state()
        return engine.doctor()


def test_an_approver_of_a_risk_class_the_capabilitys_tools_do_not_carry_decides_nothing(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    dangerous = "people:\n  owners: [tg:user:1]\n  approvers: {dangerous: [owners]}\n"
    finding = only(
        _engine_doctor(write_brain, tmp_path, REQUIRED + dangerous), "approvals.no-approver"
    )
    assert (finding.subject, finding.file) == ("message:send", MANIFEST)
    moderate = dangerous.replace("dangerous", "moderate")
    assert _engine_doctor(write_brain, tmp_path, REQUIRED + moderate).findings == ()


def test_a_capability_no_known_tool_holds_takes_an_approver_of_any_class(
    write_brain: WriteBrain,
) -> None:
    # Without the tools (doctor on its own), a class's approvers may be the ones its cards need.
    dangerous = "people:\n  owners: [tg:user:1]\n  approvers: {dangerous: [owners]}\n"
    assert doctor(write_brain, {MANIFEST: REQUIRED + dangerous}).findings == ()


def test_a_misspelt_capability_is_named_with_the_one_it_is_near(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    people = (
        "people:\n  owners: [tg:user:1]\n  approvers:\n"
        '    "mesage:send": [tg:user:7]\n    "*": [owners]\n'
    )
    report = _engine_doctor(write_brain, tmp_path, REQUIRED + people)
    finding = only(report, "approvals.unknown-capability")
    assert (finding.level, finding.subject, finding.file) == ("warn", "mesage:send", MANIFEST)
    assert finding.line == 5
    assert "did you mean 'message:send'?" in finding.message
