"""examples/broken: one deliberate fault per check, and doctor finds each exactly once."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from keel.brain import load_brain
from keel.code.runner import CodeRunner
from keel.doctor import CHECKS, run_doctor
from keel.state.database import connect
from keel.state.schema import read_schema

BROKEN = Path(__file__).resolve().parents[2] / "examples" / "broken"
DESK = "features/desk"
ACCESS = "constitution/access.yaml"

EXPECTED = {
    ("entity.skip", "fail", f"{DESK}/notes.context.md", 3),
    ("entity.agent", "fail", f"{DESK}/escalate.hook.md", 4),
    ("entity.skill", "fail", f"{DESK}/triage.agent.md", 4),
    ("entity.state-view", "fail", f"{DESK}/night.agent.md", 4),
    ("code.load", "fail", f"{DESK}/faq.context.py", 10),
    ("code.orphan", "warn", f"{DESK}/refund.context.py", None),
    ("code.probe", "warn", f"{DESK}/escalate.hook.py", 11),
    ("access.unknown-context", "fail", ACCESS, 11),
    ("access.missing-key", "warn", ACCESS, 14),
    ("access.extra-key", "fail", ACCESS, 17),
    ("access.unknown-role", "fail", ACCESS, 19),
    ("access.rule", "fail", ACCESS, 22),
    ("tenancy.context", "fail", "constitution/MANIFEST.yaml", 6),
    ("code.env", "warn", "constitution/MANIFEST.yaml", 9),
    ("context.unreached", "warn", f"{DESK}/archive.context.md", None),
    ("context.run-unreached", "warn", f"{DESK}/nightly/report.context.md", 3),
    ("reach.unknown", "fail", f"{DESK}/weekly.heartbeat.md", 7),
    ("context.ask-description", "warn", f"{DESK}/policy.context.md", 3),
    ("view.shared", "warn", f"{DESK}/morning/digest.context.md", 4),
    ("view.missing", "fail", f"{DESK}/refunds.context.md", 5),
    ("view.by-column", "fail", f"{DESK}/lookup.context.md", 6),
    ("view.widget-line", "fail", f"{DESK}/queue.context.md", 7),
    ("role.unknown-context", "warn", f"{DESK}/support.agent.md", 14),
    ("role.no-open", "warn", f"{DESK}/triage.agent.md", 3),
    ("view.by-unkeyed", "warn", f"{DESK}/card.context.md", 6),
    ("view.by-without-entity", "warn", f"{DESK}/client.context.md", 5),
    ("role.no-contexts", "note", None, None),
    ("entity.bot", "warn", f"{DESK}/morning/digest.heartbeat.md", 5),
    ("code.missing", "fail", f"{DESK}/reopen.scenario.md", None),
    ("context.over-budget", "warn", f"{DESK}/macros.context.md", 4),
    ("role.always-over", "warn", f"{DESK}/watch.agent.md", 4),
    ("role.catalog-over", "warn", f"{DESK}/browse.agent.md", 5),
}
NEEDS_DATABASE = {"entity.state-view", "view.missing", "view.by-column", "view.widget-line"}
# Checks this brain cannot show: a broken access.yaml hides the faults of its rules,
# view.unchecked needs an unreachable database, context.stubbed recorded turns,
# tenancy.global-views and code.query a tenancy that works, and view.timeout and view.slow
# a view that takes its time, which would hold up every check of this brain (each has
# tests of its own).
NOT_SHOWN = {
    "access.file",
    "view.unchecked",
    "view.timeout",
    "view.slow",
    "context.stubbed",
    "tenancy.global-views",
    "code.query",
    "code.unloaded",  # doctor without a code runner
    # A MANIFEST that does not load: this brain's must load, to show tenancy.context.
    "tenancy.withheld",
    "approvals.strict",
    "approvals.nobody",
    # Approvers named or not, and where cards go: tests/doctor/test_people.py (no approvers
    # at all and approvers who cannot decide cannot both be faults of one brain).
    "approvals.unnamed",
    "approvals.no-approver",
    "approvals.chat",
    # Known only to a doctor that has the tools (the engine's): tests/doctor/test_people.py.
    "approvals.unknown-capability",
    # State files against a database: a refused one leaves no view to check, and one not
    # yet applied needs a database that applied the others — tests/doctor/test_state.py.
    "state.pending",
    "state.refused",
}


@pytest.fixture(scope="module")
def runner() -> Iterator[CodeRunner]:
    with CodeRunner(BROKEN) as running:
        yield running


def test_doctor_finds_every_fault_of_the_broken_brain_once(
    tmp_path: Path, runner: CodeRunner
) -> None:
    brain = load_brain(BROKEN)
    engine = connect(f"sqlite:///{tmp_path / 'broken.db'}", brain)
    report = run_doctor(brain, schema=read_schema(engine), runner=runner, probe=True)
    engine.dispose()
    found = [(f.check, f.level, f.file, f.line) for f in report.findings]
    assert len(found) == len(set(found))
    assert set(found) == EXPECTED
    assert {f[0] for f in found} == set(CHECKS) - NOT_SHOWN
    assert report.failed


def test_without_a_database_the_view_checks_say_they_did_not_look(runner: CodeRunner) -> None:
    report = run_doctor(
        load_brain(BROKEN), schema=None, db_note="no route to the server", runner=runner
    )
    found = {(f.check, f.level, f.file, f.line) for f in report.findings}
    assert found == {e for e in EXPECTED if e[0] not in {*NEEDS_DATABASE, "code.probe"}} | {
        ("view.unchecked", "note", None, None)
    }


def test_without_a_runner_doctor_says_the_code_was_not_loaded() -> None:
    report = run_doctor(load_brain(BROKEN), schema=None)
    # code.missing needs no runner: it reads the files beside a scenario.
    runs_code = {"code.missing"}
    (note,) = [
        f
        for f in report.findings
        if f.check.startswith("code.") and f.level != "warn" and f.check not in runs_code
    ]
    assert (note.check, note.level) == ("code.unloaded", "note")
    assert "were not loaded: no code runner was given" in note.message


def test_every_fault_is_marked_in_its_file() -> None:
    marked = set()
    for path in BROKEN.rglob("*"):
        if path.is_file() and path.suffix in {".md", ".py", ".yaml", ".sql"}:
            text = path.read_text(encoding="utf-8")
            marked |= {check for check in CHECKS if f"FAULT {check}:" in text}
    assert marked == set(CHECKS) - NOT_SHOWN
