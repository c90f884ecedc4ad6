"""What the run commands print for a person: text as it was written, ids whole at any
width, each long text once, the thread, a word for an event nobody listens to, and a worker
that says what it is and what it did."""

from __future__ import annotations

import re
import shlex
import signal
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from typer.testing import CliRunner, Result

from keel.cli import app
from keel.runs.app import system_database
from keel.runs.schedules import schedules_of
from keel.runtime.engine import Engine
from keel.state.database import shown
from keel.store.run_values import RunRow
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import Runs, drop_dbos_schema, script, write_files
from tests.runs.processes import finish, keel, kill, until

runner = CliRunner()
NOTICE = "The lift in block B is out until Friday; use the stairs by the east door. " * 2
REFUSAL_TAIL = "or opt out with about: {context: '<id>'}"


def printed(runs: Runs, *args: str, width: int = 80, code: int = 0) -> str:
    """A run command's output for a person on a terminal `width` columns wide."""
    words = [args[0], str(runs.brain), *args[1:], "--db", runs.db]
    result: Result = runner.invoke(app, words, env={"COLUMNS": str(width)})
    assert result.exit_code == code, (result.exit_code, result.output)
    return result.stdout


def lines_over(text: str, width: int) -> list[str]:
    return [line for line in text.splitlines() if len(line.rstrip()) > width]


def run_id(output: str) -> str:
    found = re.match(r"run (\S+) · ", output)
    assert found is not None, output
    return found.group(1)


def test_text_in_brackets_is_printed_as_it_was_written(runs: Runs) -> None:
    said = "Filed it [card 42]; see [bold]notes[/bold] and [link=x]this[/link]."
    model = runs.script("brackets", [{"text": said}])
    out = printed(runs, "run", "heartbeat:daily", "--chat", "tg:chat:brackets", "--model", model)
    assert said in out
    assert said in printed(runs, "runs", "show", run_id(out))
    assert said in printed(runs, "messages", "--chat", "tg:chat:brackets")


@pytest.mark.parametrize("width", [40, 80, 100, 120, 160])
def test_runs_keeps_every_id_whole_at_any_width(runs: Runs, width: int) -> None:
    event_id = "a-rather-long-event-id-from-the-ticketing-system"
    model = runs.script("listed", [{"text": "Seen."}])
    printed(runs, "fire", "ticket.opened", "--payload", '{"ticket": "T-1"}',
            "--event-id", event_id, "--model", model)  # fmt: skip
    unkeyed = runs.script("unkeyed", [{"text": "Tonight: Whiplash"}])
    printed(runs, "run", "heartbeat:evening", "--model", unkeyed, code=3)
    out = printed(runs, "runs", width=width)
    listed = [r["id"] for r in runs.json("runs")["runs"]]
    assert f"hook-ticket-opened-{event_id}" in listed
    assert lines_over(out, width) == []
    header, *lines = out.splitlines()
    if width > len(f"hook-ticket-opened-{event_id}  failed"):
        assert all(i in lines[n] for n, i in enumerate(listed))  # whole, on its own line
    else:  # narrower than an id: it folds onto the next lines, every character kept
        column = header.index("status")
        assert "".join(line[:column].strip() for line in lines) == "".join(listed)
    if width >= 160:
        assert header.split() == ["id", "run", "status", "chat", "started", "error"]
        assert "…" in out  # the refusal, cut to its column


def test_messages_wrap_under_their_own_column(runs: Runs) -> None:
    model = runs.script("wrapping", [{"text": NOTICE}])
    printed(runs, "run", "heartbeat:daily", "--chat", "tg:chat:wrap", "--model", model)
    out = printed(runs, "messages", "--chat", "tg:chat:wrap", width=60)
    head, *body = out.rstrip("\n").splitlines()
    assert head.endswith(" · heartbeat:daily · reach topic")
    assert len(body) > 2
    assert all(line.startswith("  ") and line[2] != " " for line in body)
    assert " ".join(line.strip() for line in body) == NOTICE.strip()


def test_a_record_prints_each_step_on_one_line_and_a_long_reason_once(runs: Runs) -> None:
    model = runs.script("refused", [{"text": "Tonight: Whiplash"}])
    out = printed(runs, "run", "heartbeat:evening", "--model", model, code=3)
    assert lines_over(out, 80) == []
    assert out.count(REFUSAL_TAIL) == 1
    steps = [line for line in out.splitlines() if re.match(r"\d+ ", line)]
    assert [line.split()[1] for line in steps] == ["start", "prepare", "request", "send", "finish"]
    assert steps[3].rstrip().endswith("…")
    assert "refused: the message would lose its origin" in out


def test_a_waiting_record_prints_its_card_once_and_the_command_whole(runs: Runs) -> None:
    send = {"name": "send_message", "arguments": {"text": NOTICE}}
    model = runs.script("asks", [{"tool_calls": [send]}, {"text": ""}])
    out = printed(runs, "run", "heartbeat:guarded", "--model", model)
    record = runs.json("runs", "show", run_id(out))
    card = record["cards"][0]["id"]
    tail = "east door. Reply yes or no."  # the card's text ends so; its step is cut
    assert " ".join(out.split()).count(tail) == 1
    command = f"keel approve {runs.brain} --db {shlex.quote(runs.db)} {card} --yes"
    assert command in [line.strip() for line in out.splitlines()]
    assert [line for line in lines_over(out, 80) if "keel approve" not in line] == []
    denied = printed(runs, "approve", card, "--no", "--by", "ana", "--note", "[not] today")
    assert f"card {card} · denied by ana ([not] today)\n" in denied
    assert "keel approve" not in denied


def test_the_record_shows_where_the_run_speaks_with_its_thread(runs: Runs) -> None:
    model = runs.script("thread", [{"text": "On it."}])
    out = printed(runs, "fire", "ticket.opened", "--payload", '{"ticket": "T-2"}',
                  "--thread", "4483", "--model", model)  # fmt: skip
    where = out.splitlines()[1]
    assert where == "role desk · bot nova · chat tg:chat:desk · thread 4483"
    assert f"sent {run_id(out)}:4 to tg:chat:desk · thread 4483" in out


@pytest.mark.parametrize(
    ("event", "hint"),
    [
        pytest.param("ticket.opend", "did you mean 'ticket.opened'?", id="near"),
        pytest.param(
            "zzz", "expected one of: prospect.replied, ticket.closed, ticket.opened", id="far"
        ),
    ],
)
def test_an_event_no_hook_listens_to_is_a_usage_error(runs: Runs, event: str, hint: str) -> None:
    said = runs.invoke("fire", event)
    assert said.exit_code == 2
    assert f"no hook listens to '{event}' — {hint}" in " ".join(said.stderr.split())
    quiet = runs.invoke("fire", event, "--json")
    assert (quiet.exit_code, quiet.stdout) == (2, "")


@pytest.fixture
def worker_db(database_url: str) -> Iterator[str]:
    """A database of its own: no other process may take the run the worker takes over."""
    yield database_url
    if not database_url.startswith("sqlite"):
        drop_dbos_schema(database_url)


def test_a_worker_says_what_it_is_and_counts_only_the_runs_it_finished(
    tmp_path: Path, worker_db: str
) -> None:
    """A run whose process was killed is taken over and finished; a run another process
    finishes while the worker runs (recorded here as that process would) is not the
    worker's."""
    brain = write_files(tmp_path / "brain", RUNS_BRAIN)
    engine = Engine(brain, worker_db, watch=False)
    if not worker_db.startswith("sqlite"):
        engine.apply_state()
    slow = script(tmp_path, "slow", [{"sleep_s": 1.0, "text": "Late news."}])
    first = keel("run", str(brain), "heartbeat:daily", "--model", slow, "--db", worker_db)
    worker = None
    try:
        until(lambda: _steps(engine) >= 2, what="the run's preparation")
        kill(first)
        worker = keel("worker", str(brain), "--db", worker_db)
        until(lambda: _statuses(engine) == ["done"], what="the worker to finish the run")
        with engine.store.transaction() as tx:
            now = datetime.now(UTC)
            tx.record_run(RunRow(id="heartbeat-daily-elsewhere", kind="heartbeat",
                                 entity_id="daily", status="done", created_at=now,
                                 updated_at=now, executor="run-elsewhere-1"))  # fmt: skip
        worker.send_signal(signal.SIGTERM)
        status, out, err = finish(worker)
        assert status == 0, err
        names = ", ".join(schedules_of(engine.brain))
    finally:
        for process in (first, worker):
            if process is not None and process.poll() is None:
                kill(process)
        engine.close()
    lines = out.splitlines()
    executor = lines[0].split()[1]
    journal = system_database(worker_db)
    where = shown(journal.url) + (f" (schema {journal.schema})" if journal.schema else "")
    assert lines[0] == f"worker {executor} · journal {where} · 4 schedules: {names}"
    assert lines[1].startswith("took over run heartbeat-daily-")
    assert lines[-1] == f"worker {executor} stopped: 4 schedules, took over 1 run, finished 1 run"


def _steps(engine: Engine) -> int:
    with engine.store.transaction() as tx:
        found = tx.runs()
        return len(tx.steps(found[0].id)) if found else 0


def _statuses(engine: Engine) -> list[str]:
    with engine.store.transaction() as tx:
        return [r.status for r in tx.runs()]
