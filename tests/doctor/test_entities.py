"""Brain entities: skipped files, and agent / skill / state-view names that point nowhere."""

from __future__ import annotations

from tests.conftest import WriteBrain
from tests.doctor.brains import BEAT, ROLE, doctor, of, only


def test_the_clean_brain_has_no_findings(write_brain: WriteBrain) -> None:
    report = doctor(write_brain)
    assert report.findings == ()
    assert not report.failed


def test_a_file_that_did_not_load_fails_with_its_line(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {"features/desk/notes.context.md": "---\nwhen: [reploy]\n---\n"})
    finding = only(report, "entity.skip")
    assert (finding.level, finding.file, finding.line) == (
        "fail",
        "features/desk/notes.context.md",
        2,
    )
    assert finding.message == "unknown when word 'reploy' — did you mean 'reply'?"


def test_an_agent_that_is_no_role_fails_with_a_did_you_mean(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {BEAT: "---\nschedule: '0 8 * * *'\nagent: suport\n---\nGo.\n"})
    finding = only(report, "entity.agent")
    assert (finding.level, finding.file, finding.line) == ("fail", BEAT, 3)
    assert finding.subject == "heartbeat:daily"
    assert "runs as agent 'suport', but no role is named 'suport' (did you mean 'support'?)" in (
        finding.message
    )
    assert finding.message.endswith("name an existing role in `agent:`, or add suport.agent.md")


def test_an_agent_whose_role_file_did_not_load_says_so(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            BEAT: "---\nschedule: '0 8 * * *'\nagent: night\n---\nGo.\n",
            "features/desk/night.agent.md": "---\ncontext: []\n---\nNight.\n",
        },
    )
    assert len(of(report, "entity.skip")) == 1
    [finding] = of(report, "entity.agent")
    assert "role 'night' did not load (features/desk/night.agent.md is skipped" in finding.message


def test_an_entity_without_an_agent_is_fine(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {BEAT: "---\nschedule: '0 8 * * *'\n---\nGo.\n"})
    assert of(report, "entity.agent") == []


def test_a_skill_that_does_not_exist_fails_on_its_item(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest]\ncapabilities: [context:read]\nskills:\n  - tone\n  - tnoe\n---\nHi.\n"
    finding = only(doctor(write_brain, {ROLE: role}), "entity.skill")
    assert (finding.level, finding.file, finding.line) == ("fail", ROLE, 6)
    assert "lists skill 'tnoe', but no skill is named 'tnoe' (did you mean 'tone'?)" in (
        finding.message
    )


def test_a_state_view_the_database_lacks_fails(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest]\ncapabilities: [context:read]\nstate: [queue, queu]\n---\nHi.\n"
    finding = only(doctor(write_brain, {ROLE: role}), "entity.state-view")
    assert (finding.level, finding.file, finding.line) == ("fail", ROLE, 4)
    assert "'queu', which the database lacks (did you mean 'queue'?)" in finding.message


def test_state_views_are_not_checked_without_a_database(write_brain: WriteBrain) -> None:
    role = (
        "---\ncontexts: [ticket, digest]\ncapabilities: [context:read]\nstate: [queu]\n---\nHi.\n"
    )
    report = doctor(write_brain, {ROLE: role}, database=False, db_note="server down")
    assert [f.check for f in report.findings] == ["view.unchecked"]
