"""A render's `ctx.query` travels to Keel: run by the batch's caller, in its own thread,
within the call's time, and answered with rows or with Keel's refusal."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from keel.brain import Brain
from keel.code import CodeRunner, RenderCall
from keel.errors import Refused
from keel.state.queries import Queries
from keel.store import Store
from tests.code.support import SHORT_MS, guarded, write_code

ASKS = """\
import json

from keel.code import CallFailed, define_context


def render(entity, ctx):
    said = []
    for sql, params in STATEMENTS:
        try:
            said.append(ctx.query(sql, params))
        except CallFailed as refused:
            said.append(f"{refused.call} {refused.kind}: {refused}")
    return [{"key": "said", "text": json.dumps(said)}]


context = define_context(render=render)
"""


def _render(root: Path, statements: list[tuple[str, Any]]) -> tuple[str, RenderCall]:
    source = ASKS.replace("STATEMENTS", repr(statements))
    path = write_code(root, source)
    return path, RenderCall(context="ticket", path=path, entity="T-1", timeout_ms=10_000)


def _said(answer: Any) -> list[Any]:
    assert answer.failure is None, str(answer.failure)
    (section,) = answer.sections
    said: list[Any] = json.loads(section.text)
    return said


class Recorder:
    """A reader that answers from a table and records what it was asked, and where."""

    def __init__(self) -> None:
        self.asked: list[tuple[str, Any, float, int]] = []

    def __call__(
        self, sql: str, params: Mapping[str, Any] | Sequence[Any] | None, deadline: float
    ) -> list[dict[str, Any]]:
        self.asked.append((sql, params, deadline, threading.get_ident()))
        if "refuse" in sql:
            raise Refused("Keel will not run that")
        if "huge" in sql:
            return [{"x": "a" * (33 * 1024 * 1024)}]
        return [{"sql": sql, "params": params}]


def test_a_statement_runs_in_the_callers_thread_and_its_rows_come_back(
    runner: CodeRunner, code_root: Path
) -> None:
    _, call = _render(code_root, [("SELECT :x", {"x": 5}), ("SELECT ?", ["a", None])])
    reader = Recorder()
    started = time.monotonic()
    (answer,) = runner.render_all([call], reader=reader)
    assert _said(answer) == [
        [{"sql": "SELECT :x", "params": {"x": 5}}],
        [{"sql": "SELECT ?", "params": ["a", None]}],
    ]
    me = threading.get_ident()
    assert [(sql, thread) for sql, _, _, thread in reader.asked] == [
        ("SELECT :x", me),
        ("SELECT ?", me),
    ]
    # The statement may run until the call's own deadline, and no longer.
    assert all(started < deadline <= started + 10.5 for _, _, deadline, _ in reader.asked)


def test_what_keel_refuses_reaches_brain_code_as_call_failed(
    runner: CodeRunner, code_root: Path
) -> None:
    _, call = _render(code_root, [("refuse this", None), ("huge rows", None), ("SELECT 1", None)])
    (answer,) = runner.render_all([call], reader=Recorder())
    refused, huge, fine = _said(answer)
    assert refused == "query Refused: Keel will not run that"
    assert huge.startswith("query Refused: ctx.query's rows are too large")
    assert fine == [{"sql": "SELECT 1", "params": None}]


def test_a_render_that_queries_wrongly_is_told_at_once(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root,
        "import datetime\n\nfrom keel.code import define_context\n\n\n"
        "def render(entity, ctx):\n"
        "    ctx.query('SELECT :d', {'d': datetime.date(2025, 1, 2)})\n\n\n"
        "context = define_context(render=render)\n",
    )
    reader = Recorder()
    call = RenderCall(context="ticket", path=path, entity="T-1")
    (answer,) = runner.render_all([call], reader=reader)
    assert answer.failure is not None
    assert "ctx.query parameter 'd' is a date" in answer.failure.reason
    assert "pass value.isoformat()" in answer.failure.reason
    assert reader.asked == []


def test_a_statement_that_outlasts_its_call_times_the_call_out(
    runner: CodeRunner, code_root: Path
) -> None:
    path, _ = _render(code_root, [("SELECT slowly", None)])
    call = RenderCall(context="ticket", path=path, entity="T-1", timeout_ms=300)

    def slow(_sql: str, _params: Any, deadline: float) -> list[dict[str, Any]]:
        time.sleep(max(0.0, deadline - time.monotonic()) + 0.05)
        return []

    (answer,) = runner.render_all([call], reader=slow)
    assert answer.failure is not None
    assert answer.failure.kind == "timeout"
    assert runner.wait_ready(30)
    _, fine = _render(code_root, [("SELECT 1", None)])
    (again,) = runner.render_all([fine], reader=Recorder())
    assert _said(again) == [[{"sql": "SELECT 1", "params": None}]]


def test_a_caller_that_does_not_read_the_socket_still_runs_its_own_statements(
    code_root: Path, tmp_path: Path
) -> None:
    """Two turns on one worker: the first reads its socket, the second waits — and each
    statement still runs in the thread of the turn that asked it."""
    started = tmp_path / "started"
    first = write_code(
        code_root,
        "import os, time\n\nfrom keel.code import define_context\n\n\n"
        "def render(entity, ctx):\n"
        f"    open({str(started)!r}, 'w').close()\n"
        "    time.sleep(1)\n"
        "    return []\n\n\n"
        "context = define_context(render=render)\n",
    )
    _, second = _render(code_root, [("SELECT 2", None)])
    reader = Recorder()
    with CodeRunner(code_root, workers=1) as runner:
        sleeper = threading.Thread(
            target=runner.render_all,
            args=([RenderCall(context="ticket", path=first, entity="T-1", timeout_ms=10_000)],),
        )
        sleeper.start()
        while not started.exists():
            threading.Event().wait(0.01)
        (answer,) = runner.render_all([second], reader=reader)
        sleeper.join()
    assert _said(answer) == [[{"sql": "SELECT 2", "params": None}]]
    assert [thread for *_, thread in reader.asked] == [threading.get_ident()]


ENDLESS = """\
from keel.code import define_context


def render(entity, ctx):
    ctx.query(
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT COUNT(*) FROM n"
    )
    return []


context = define_context(render=render)
"""


def test_a_query_that_never_ends_is_stopped_at_the_code_timeout(
    reference_brain: Brain, reference_store: Store
) -> None:
    """`ctx.query` does not go through the views' reader: its bound is the call's own."""
    path = write_code(reference_brain.root, ENDLESS, path="features/support/who.context.py")
    call = RenderCall(context="ticket", path=path, entity="T-481", timeout_ms=SHORT_MS)
    with (
        guarded(),
        CodeRunner(reference_brain.root, workers=1) as runner,
        reference_store.transaction() as tx,
    ):
        (answer,) = runner.render_all([call], reader=Queries(tx.connection, None))
        assert tx.connection.exec_driver_sql("SELECT 1").scalar_one() == 1, "still usable"
    assert answer.failure is not None
    assert answer.failure.kind == "timeout", answer.failure
    assert f"render ran past its {SHORT_MS} ms timeout" in answer.failure.reason
    assert answer.sections == ()
