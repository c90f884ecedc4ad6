"""The report: its order, its JSON, and how it reads in a terminal."""

from __future__ import annotations

import io
import json

from rich.console import Console

from keel.doctor import CHECKS, Report, render
from keel.doctor.findings import found
from tests.conftest import WriteBrain
from tests.doctor.brains import BEAT, ROLE, doctor


def _text(report: Report, *, colour: bool = False, width: int | None = None) -> str:
    """The report as printed: one line per finding, or wrapped at `width` like a terminal."""
    out = io.StringIO()
    console = Console(
        file=out,
        width=width or 400,
        force_terminal=colour or width is not None,
        color_system="standard" if colour else None,
        highlight=False,
        soft_wrap=width is None,
    )
    render(report, console)
    return out.getvalue()


def _broken(write_brain: WriteBrain) -> Report:
    return doctor(
        write_brain,
        {
            BEAT: "---\nschedule: '0 8 * * *'\nagent: suport\n---\nGo.\n",
            ROLE: "---\ncontexts: [ticket, digest, tickt]\ncapabilities: [context:read]\n---\nHi.\n",
            "features/desk/night.agent.md": "---\ndescription: Night.\n---\nNight.\n",
        },
    )


def test_json_has_one_object_per_finding_with_fixed_keys(write_brain: WriteBrain) -> None:
    data = _broken(write_brain).to_json()
    assert list(data) == ["checks"]
    assert [c["check"] for c in data["checks"]] == [
        "entity.agent",
        "role.unknown-context",
        "role.no-contexts",
    ]
    first = data["checks"][0]
    assert first == {
        "check": "entity.agent",
        "group": "Brain entities",
        "level": "fail",
        "subject": "heartbeat:daily",
        "file": BEAT,
        "line": 3,
        "message": first["message"],
    }
    assert data["checks"][2]["file"] is None
    assert json.loads(json.dumps(data)) == data


def test_findings_are_ordered_by_group_then_check() -> None:
    report = Report.of(
        [
            found("role.no-contexts", "roles", "n"),
            found("view.missing", "context 'b'", "m", file="b.md", line=9),
            found("view.missing", "context 'a'", "m", file="a.md", line=20),
            found("entity.skip", "x.md", "s", file="x.md"),
            found("code.orphan", "y.py", "o", file="y.py"),
        ]
    )
    assert [(f.check, f.file) for f in report.findings] == [
        ("entity.skip", "x.md"),
        ("code.orphan", "y.py"),
        ("view.missing", "a.md"),
        ("view.missing", "b.md"),
        ("role.no-contexts", None),
    ]


def test_failed_is_true_only_with_a_fail() -> None:
    assert Report.of([found("entity.skip", "x", "s")]).failed
    assert not Report.of(
        [found("code.orphan", "x", "o"), found("role.no-contexts", "r", "n")]
    ).failed
    assert not Report().failed


def test_every_check_has_a_group_and_level() -> None:
    for check, (group, level) in CHECKS.items():
        finding = found(check, "s", "m")
        assert (finding.group, finding.level) == (group, level)


def test_render_groups_by_group_and_check_and_names_file_line_and_fix(
    write_brain: WriteBrain,
) -> None:
    text = _text(_broken(write_brain))
    lines = text.splitlines()
    assert lines[0] == "Brain entities"
    assert lines[1] == "  entity.agent"
    assert lines[2].startswith(f"    fail {BEAT}:3: heartbeat 'daily' runs as agent 'suport'")
    assert lines[2].endswith("name an existing role in `agent:`, or add suport.agent.md")
    assert lines[3:7] == ["Feature context code", "  ok", "Chat access", "  ok"]
    assert lines[7] == "Feature contexts"
    assert lines[8] == "  role.unknown-context"
    assert lines[9].startswith(f"    warn {ROLE}:2: role 'support' admits 'tickt'")
    assert lines[10] == "  role.no-contexts"
    # A finding about no one file is named by its subject; brackets survive (no markup).
    assert lines[11].startswith("    note roles: 1 role(s) have no `contexts:` list")
    assert "add `contexts: [...]`" in lines[11]
    assert lines[-1] == "1 fail, 1 warn, 1 note"


def test_on_a_terminal_a_long_finding_wraps_under_its_message(write_brain: WriteBrain) -> None:
    lines = _text(_broken(write_brain), width=60).splitlines()
    first = next(n for n, line in enumerate(lines) if line.startswith("    fail "))
    assert len(lines[first].rstrip()) <= 60
    follow = lines[first + 1]
    assert follow.startswith(" " * 9)
    assert follow[9] != " "
    assert all(len(line) <= 60 for line in lines)
    assert all(line == line.rstrip() for line in lines)  # nothing padded to the width


def test_into_a_pipe_a_finding_is_one_line_whatever_the_width(write_brain: WriteBrain) -> None:
    out = io.StringIO()
    render(_broken(write_brain), Console(file=out, width=60, highlight=False))
    lines = out.getvalue().splitlines()
    [fail] = [line for line in lines if line.startswith("    fail ")]
    assert fail.endswith("name an existing role in `agent:`, or add suport.agent.md")
    assert all(line == line.rstrip() for line in lines)


def test_render_colours_each_level(write_brain: WriteBrain) -> None:
    text = _text(_broken(write_brain), colour=True)
    assert "\x1b[1;31mfail" in text
    assert "\x1b[33mwarn" in text
    assert "\x1b[36mnote" in text


def test_render_says_plainly_when_there_is_nothing_wrong(write_brain: WriteBrain) -> None:
    text = _text(doctor(write_brain))
    assert text.splitlines() == [
        "Brain entities",
        "  ok",
        "Feature context code",
        "  ok",
        "Chat access",
        "  ok",
        "Feature contexts",
        "  ok",
        "",
        "No problems found.",
    ]


def test_render_counts_notes_alone_as_no_problems() -> None:
    text = _text(Report.of([found("role.no-contexts", "roles", "n")]))
    assert text.splitlines()[-1] == "No problems found (1 note)."
