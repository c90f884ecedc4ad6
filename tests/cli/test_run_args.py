"""The run commands' words for what they were given: the argument as the command takes it,
JSON's own names for a value that is not an object, what an empty listing was filtered by,
and the real brain path in a hint. None of these starts a run or loads DBOS."""

from __future__ import annotations

import shlex
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from keel.cli import app
from keel.runtime.engine import Engine
from keel.store.run_values import RunRow
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import write_files

runner = CliRunner()


@pytest.fixture
def brain(tmp_path: Path) -> Path:
    return write_files(tmp_path / "brain", RUNS_BRAIN)


def invoke(*words: str) -> Result:
    return runner.invoke(app, list(words), env={"COLUMNS": "1000"})


def said(result: Result) -> str:
    """stderr as one line: a long temporary path may still wrap it."""
    return " ".join(result.stderr.split())


def test_keel_run_names_its_argument_not_a_flag(brain: Path) -> None:
    result = invoke("run", str(brain), "nope")
    assert result.exit_code == 2
    assert "what to run, 'nope': write KIND:ID with KIND one of heartbeat" in said(result)
    assert "--run" not in result.stderr


@pytest.mark.parametrize(
    ("text", "kind"),
    [
        pytest.param("null", "null", id="null"),
        pytest.param("[1]", "an array", id="array"),
        pytest.param('"x"', "a string", id="string"),
        pytest.param("4.5", "a number", id="number"),
        pytest.param("true", "true", id="true"),
    ],
)
def test_vars_not_an_object_is_named_in_json_words(brain: Path, text: str, kind: str) -> None:
    result = invoke("scenario", str(brain), "first-touch", "--vars", text)
    assert result.exit_code == 2
    assert said(result).endswith(f"--vars must be a JSON object ({{...}}), not {kind}")


@pytest.fixture
def listed(brain: Path, database_url: str) -> Path:
    """The brain with one done run recorded on `database_url`."""
    engine = Engine(brain, database_url, watch=False)
    try:
        if not database_url.startswith("sqlite"):
            engine.apply_state()
        now = datetime.now(UTC)
        with engine.store.transaction() as tx:
            tx.record_run(RunRow(id="heartbeat-daily-1", kind="heartbeat", entity_id="daily",
                                 status="done", created_at=now, updated_at=now))  # fmt: skip
    finally:
        engine.close()
    return brain


@pytest.mark.parametrize(
    ("flags", "empty"),
    [
        pytest.param(("--status", "waiting"), "no waiting runs", id="status"),
        pytest.param(("--limit", "0"), "--limit 0 lists no runs", id="limit-0"),
    ],
)
def test_an_empty_listing_says_what_it_was_filtered_by(
    listed: Path, database_url: str, flags: tuple[str, ...], empty: str
) -> None:
    out = invoke("runs", str(listed), *flags, "--db", database_url)
    assert (out.exit_code, out.stdout.strip()) == (0, empty)
    assert "heartbeat-daily-1" in invoke("runs", str(listed), "--db", database_url).stdout


def test_an_unknown_card_or_run_names_the_real_listing_command(
    listed: Path, database_url: str
) -> None:
    runs = f"keel runs {shlex.quote(str(listed))} --db"
    card = invoke("approve", str(listed), "nope", "--yes", "--db", database_url)
    assert card.exit_code == 2
    assert "no approval card 'nope' — `" + runs in said(card)
    assert said(card).endswith("` lists the runs; add `show RUN` to see a run's cards")
    run = invoke("runs", str(listed), "show", "nope", "--db", database_url)
    assert run.exit_code == 2
    assert "no run 'nope' — `" + runs in said(run)
    assert "BRAIN" not in said(card) + said(run)


@pytest.mark.parametrize(
    ("reach", "error"),
    [
        pytest.param("zzz", "the reach names 'zzz', which is not a context — expected one of:",
                     id="far"),
        pytest.param("topic,topc", "the reach names 'topc', which is not a context — did you "
                     "mean 'topic'?", id="near"),
    ],
)  # fmt: skip
def test_a_reach_naming_no_context_stops_the_run_before_it_starts(
    listed: Path, database_url: str, reach: str, error: str
) -> None:
    words = ["run", str(listed), "heartbeat:daily", "--reach", reach, "--model", "none"]
    result = invoke(*words, "--db", database_url)
    assert result.exit_code == 2
    assert f"error: heartbeat:daily: {error}" in said(result)
    quiet = invoke(*words, "--db", database_url, "--json")
    assert (quiet.exit_code, quiet.stdout) == (2, "")


def test_a_heartbeat_whose_file_did_not_load_points_to_doctor(brain: Path) -> None:
    beat = brain / "features/news/late.heartbeat.md"
    beat.write_text('---\nschedule: "99 99 * * *"\nagent: news\n---\nLate.\n', encoding="utf-8")
    result = invoke("run", str(brain), "heartbeat:late", "--model", "none")
    assert result.exit_code == 2
    assert (
        "heartbeat:late: its file features/news/late.heartbeat.md did not load — line 2: "
        "'schedule': '99 99 * * *'" in said(result)
    )
    assert "`keel doctor <brain>`" in said(result)


def test_a_turn_of_a_run_with_a_reach_naming_no_context_is_a_usage_error(brain: Path) -> None:
    words = ["turn", str(brain), "--run", "heartbeat:daily", "--reach", "topc", "--dry-run"]
    result = invoke(*words)
    assert result.exit_code == 2
    assert "heartbeat:daily: the reach names 'topc', which is not a context" in said(result)
    assert invoke("turn", str(brain), "--run", "heartbeat:daily", "--reach", "topic",
                  "--dry-run").exit_code == 0  # fmt: skip
