"""`doctor_check`: `keel doctor`'s report as a tool, behind its own capability."""

from __future__ import annotations

import shutil
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner

from keel.brain.specs import ReachEntry
from keel.cli import app
from keel.errors import Refused, StoreError
from keel.ledger import checkup as checkup_module
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from keel.tools import CHECK_CAPABILITY, CODING_TOOLS, DOCTOR_CHECK
from tests.runtime.driver import copy_reference
from tests.state.guard import guarded

BROKEN = Path(__file__).parents[2] / "examples" / "broken"
NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)


def check(root: Path, role: str) -> str:
    request = TurnRequest(conversation=Conversation(bot="cli", chat="cli"), now=NOW, role=role)
    with Engine(root, tools=CODING_TOOLS, watch=False) as engine:
        return engine.call(request, "doctor_check", {})


def test_a_sound_brain_reads_as_doctor_prints_it(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "features" / "agency" / "auditor.agent.md").write_text(
        "---\ndescription: Checks.\ncontexts: []\ncapabilities: [doctor:read]\n---\nCheck.\n",
        encoding="utf-8",
    )
    text = check(brain, "auditor")
    printed = CliRunner().invoke(app, ["doctor", str(brain)], env={"COLUMNS": "1000"})
    assert printed.exit_code == 0
    assert text == "\n".join(line.rstrip() for line in printed.stdout.rstrip("\n").splitlines())
    assert text.splitlines()[0] == "Brain entities"
    assert text.splitlines()[-1].startswith("No problems found")


def test_findings_are_the_answer_not_an_error(tmp_path: Path) -> None:
    brain = tmp_path / "broken"
    shutil.copytree(BROKEN, brain, ignore=shutil.ignore_patterns(".keel"))
    (brain / "features" / "desk" / "auditor.agent.md").write_text(
        "---\ndescription: Checks.\ncontexts: []\ncapabilities: ['*']\n---\nCheck.\n",
        encoding="utf-8",
    )
    text = check(brain, "auditor")
    assert "fail" in text
    assert text.splitlines()[-1].startswith(tuple("0123456789"))
    assert "\x1b[" not in text, "plain text, no terminal colours"


def test_a_role_without_brain_check_is_refused(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    with pytest.raises(Refused, match="add doctor:read to its `capabilities:`"):
        check(brain, "support")


def test_its_capability_is_its_own() -> None:
    assert (DOCTOR_CHECK.capability, DOCTOR_CHECK.risk) == (CHECK_CAPABILITY, "safe")
    assert CHECK_CAPABILITY == "doctor:read"


def test_a_catalog_it_cannot_read_is_said_in_the_report(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def unreachable(_engine: object) -> object:
        raise StoreError("cannot read the tables and views of the test database")

    monkeypatch.setattr(checkup_module, "read_schema", unreachable)
    brain = copy_reference(tmp_path / "brain")
    (brain / "features" / "agency" / "auditor.agent.md").write_text(
        "---\ndescription: Checks.\ncontexts: []\ncapabilities: [doctor:read]\n---\nCheck.\n",
        encoding="utf-8",
    )
    assert "cannot read the tables and views of the test database" in check(brain, "auditor")


def test_a_view_that_never_ends_is_in_the_report_and_the_check_ends(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "state" / "900_forever.sql").write_text(
        "CREATE VIEW forever AS WITH RECURSIVE n(i) AS "
        "(SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n;\n",
        encoding="utf-8",
    )
    (brain / "features" / "agency" / "auditor.agent.md").write_text(
        "---\ndescription: Checks.\ncontexts: []\ncapabilities: [doctor:read]\n"
        "state: [forever]\n---\nCheck.\n",
        encoding="utf-8",
    )
    request = TurnRequest(conversation=Conversation(bot="cli", chat="cli"), now=NOW, role="auditor")
    with Engine(brain, tools=CODING_TOOLS, watch=False) as engine, guarded(engine.database):
        text = engine.call(request, "doctor_check", {})
    assert "view 'forever' did not finish within state.readTimeoutMs (2000 ms)" in text


def test_the_tool_reports_what_keel_doctor_reports_on_a_database_with_turns(
    tmp_path: Path,
) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "features" / "agency" / "auditor.agent.md").write_text(
        "---\ndescription: Checks.\ncontexts: []\ncapabilities: [doctor:read]\n---\nCheck.\n",
        encoding="utf-8",
    )
    tickets = tuple(ReachEntry(context="ticket", entity=f"T-{n}") for n in range(479, 484))
    shopper = Conversation(bot="desk", chat="tg:user:42")
    with Engine(brain, watch=False) as engine:  # a turn whose tickets pass maxActive
        engine.prepare(TurnRequest(conversation=shopper, now=datetime.now(UTC), attach=tickets))
    text = check(brain, "auditor")
    printed = CliRunner().invoke(app, ["doctor", str(brain)], env={"COLUMNS": "1000"})
    assert "context.stubbed" in printed.stdout or "stubbed" in printed.stdout
    assert text == "\n".join(line.rstrip() for line in printed.stdout.rstrip("\n").splitlines())
    assert "stubbed 1" in text or "stubbed once" in text
