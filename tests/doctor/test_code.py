"""Feature context code: code that does not load, and code with no spec beside it."""

from __future__ import annotations

import pytest

from tests.conftest import WriteBrain
from tests.doctor.brains import doctor, of, only

CODE = "features/desk/ticket.context.py"
GOOD = "from keel.code import define_context\n\ncontext = define_context(match=lambda t: None)\n"


def test_context_code_that_loads_is_fine(write_brain: WriteBrain) -> None:
    assert doctor(write_brain, {CODE: GOOD}).findings == ()


@pytest.mark.parametrize(
    ("source", "line", "words"),
    [
        pytest.param("def match(turn)\n    pass\n", 1, "syntax error", id="syntax"),
        pytest.param("x = 1\nraise RuntimeError('nope')\n", 2, "raised RuntimeError", id="raises"),
        pytest.param("x = 1\n", None, "exports no 'context'", id="no-export"),
        pytest.param("x = 1\ncontext = 3\n", 2, "a value of type int", id="wrong-type"),
    ],
)
def test_context_code_that_does_not_load_fails(
    write_brain: WriteBrain, source: str, line: int | None, words: str
) -> None:
    finding = only(doctor(write_brain, {CODE: source}), "code.load")
    assert (finding.level, finding.file, finding.line) == ("fail", CODE, line)
    assert finding.subject == "context 'ticket'"
    assert words in finding.message
    assert "fix the code" in finding.message or "define_context" in finding.message


def test_a_hook_gate_that_exports_no_hook_fails(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            "features/desk/escalate.hook.md": "---\nevent: escalated\nagent: support\n---\nGo.\n",
            "features/desk/escalate.hook.py": "gate = None\n",
        },
    )
    finding = only(report, "code.load")
    assert (finding.file, finding.subject) == ("features/desk/escalate.hook.py", "hook:escalate")
    assert "exports no 'hook'" in finding.message


def test_code_with_no_spec_beside_it_warns_with_the_near_name(write_brain: WriteBrain) -> None:
    finding = only(doctor(write_brain, {"features/desk/tickets.context.py": GOOD}), "code.orphan")
    assert (finding.level, finding.file, finding.line) == (
        "warn",
        "features/desk/tickets.context.py",
        None,
    )
    assert finding.message.startswith(
        "no tickets.context.md beside it, so it is never loaded (did you mean 'ticket'?)"
    )


def test_code_whose_spec_did_not_load_points_at_the_spec(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            "features/desk/notes.context.md": "---\nwhen: [nope]\n---\n",
            "features/desk/notes.context.py": GOOD,
        },
    )
    assert [f.check for f in report.findings] == ["entity.skip", "code.orphan"]
    assert "features/desk/notes.context.md is beside it but did not load" in (
        of(report, "code.orphan")[0].message
    )
