"""A run whose process is killed with SIGKILL — after its preparation, during a model
request, after a send — is finished by the next process: every step that had finished is
never done again, each message is recorded once, the ledger holds no duplicate."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from keel.runtime.engine import Engine
from keel.store.run_values import StepRow
from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import drop_dbos_schema, script, write_files
from tests.runs.processes import finish, keel, kill, until

SLEEP_S = 2.0


@pytest.fixture
def crash_db(database_url: str) -> Iterator[str]:
    yield database_url
    if not database_url.startswith("sqlite"):
        drop_dbos_schema(database_url)


def steps(engine: Engine, run_id: str) -> list[StepRow]:
    with engine.store.transaction() as tx:
        return list(tx.steps(run_id))


def done(engine: Engine, run_id: str, *names: str) -> bool:
    finished = [s.name for s in steps(engine, run_id) if s.status == "done"]
    return finished[: len(names)] == list(names) and len(finished) == len(names)


def test_a_run_killed_twice_is_finished_with_nothing_done_twice(
    tmp_path: Path, crash_db: str
) -> None:
    brain = write_files(tmp_path / "brain", RUNS_BRAIN)
    post = {"name": "send_message", "arguments": {"text": "Flood warning."}}
    model = script(
        tmp_path,
        "slow",
        [{"sleep_s": SLEEP_S, "tool_calls": [post]}, {"sleep_s": SLEEP_S, "text": "Sent."}],
    )
    engine = Engine(brain, crash_db, watch=False)
    if not crash_db.startswith("sqlite"):
        engine.apply_state()
    run_id = "heartbeat-daily-crash"
    try:
        with engine.store.transaction() as tx:
            assert tx.runs() == ()
        first = keel("run", str(brain), "heartbeat:daily", "--model", model, "--db", crash_db,
                     "--json")  # fmt: skip
        until(lambda: _one_run(engine) is not None, what="the run to start")
        run_id = _one_run(engine) or run_id
        # After its preparation, during its first model request (the model sleeps).
        until(lambda: done(engine, run_id, "start", "prepare"), what="the preparation")
        kill(first)
        assert done(engine, run_id, "start", "prepare")
        second = keel("worker", str(brain), "--until-idle", "--db", crash_db)
        # After the send, during the second model request.
        until(lambda: done(engine, run_id, "start", "prepare", "request", "tool"), what="the send")
        kill(second)
        third = keel("worker", str(brain), "--until-idle", "--db", crash_db, "--json")
        status, out, err = finish(third)
        assert status == 0, err
        assert run_id in json.loads(out)["recovered"]
        with engine.store.transaction() as tx:
            run = tx.run(run_id)
            sent = tx.sent_messages(run_id=run_id)
            ledger = tx.ledger(role="news")
            usage = tx.usage(run_id=run_id)
        assert run is not None
        assert run.status == "done"
        assert [s.name for s in steps(engine, run_id)] == [
            "start", "prepare", "request", "tool", "request", "finish",
        ]  # fmt: skip
        assert [m.text for m in sent] == ["Flood warning."]
        assert len(ledger) == len({(e.chat, e.turn, e.context) for e in ledger}) == 1
        assert len(usage) == 2
        calls = (brain / "code-calls.log").read_text(encoding="utf-8").splitlines()
        assert calls == ["topic.render"]  # brain code ran once, in the one preparation
    finally:
        engine.close()


def _one_run(engine: Engine) -> str | None:
    with engine.store.transaction() as tx:
        found = tx.runs()
    return found[0].id if found else None
