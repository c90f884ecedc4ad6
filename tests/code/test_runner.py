"""The runner: brain code that raises, hangs, exits, crashes or prints costs only its call."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import time
from pathlib import Path

import pytest

import keel.errors
from keel.code import CodeRunner, RenderCall
from keel.code.values import Job
from keel.errors import UsageError
from tests.code.support import (
    SHORT_MS,
    a_match,
    children,
    match_code,
    open_fds,
    threads,
    write_code,
)


def test_a_match_links_with_the_entity_it_names(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root,
        match_code(
            "found = re.search(r'\\bT-\\d+\\b', turn.input)\nreturn {'entity': found.group(0)} if found else None",
            imports="import re\n",
        ),
    )
    linked, unlinked = runner.match_all([a_match(path), a_match(path, text="hello")])
    assert (linked.linked, linked.entity, linked.failure) == (True, "T-481", None)
    assert (unlinked.linked, unlinked.failure) == (False, None)


def test_match_may_leave_out_ctx_and_sees_the_whole_turn(
    runner: CodeRunner, code_root: Path
) -> None:
    source = (
        "from keel.code import define_context\n\n"
        "def match(turn):\n"
        "    return {'entity': f'{turn.role}|{turn.surface}|{turn.subject_id}|{turn.run}'}\n\n"
        "context = define_context(match=match)\n"
    )
    (answer,) = runner.match_all([a_match(write_code(code_root, source))])
    assert answer.entity == "support|chat|tg:chat:1|None"


def test_what_code_logs_and_prints_comes_back_with_its_answer(
    runner: CodeRunner,
    code_root: Path,
    capfd: pytest.CaptureFixture[str],
    caplog: pytest.LogCaptureFixture,
) -> None:
    path = write_code(
        code_root,
        match_code(
            "print('looking at', turn.input)\n"
            "print('to stderr', file=sys.stderr)\n"
            "os.write(1, b'straight to fd 1\\n')\n"
            "ctx.log('checked', ctx.context)\n"
            "return None",
            imports="import os\nimport sys\n",
        ),
    )
    with caplog.at_level("INFO", logger="keel.code"):
        (answer,) = runner.match_all([a_match(path)])
    assert answer.failure is None
    assert answer.log == ("looking at T-481 is late", "to stderr", "checked ticket")
    assert f"{path}: checked ticket" in caplog.messages
    out, err = capfd.readouterr()
    assert out == ""
    assert "straight to fd 1" not in err


FAILURES = [
    pytest.param(
        "raise KeyError('ticket_id')",
        "raise",
        r"match raised KeyError: 'ticket_id' — fix the code; until then it links nothing",
        7,
        id="raises",
    ),
    pytest.param(
        "return turn.text",
        "raise",
        r"raised AttributeError: turn has no attribute 'text' \(it has input, role, surface, subject_id, run, message, envelope, lines\)",
        7,
        id="no-such-attribute",
    ),
    pytest.param("sys.exit(2)", "raise", r"match raised SystemExit: 2", 7, id="sys-exit"),
    pytest.param("return 'T-481'", "shape", r"match returned a str \('T-481'\)", 6, id="string"),
    pytest.param("return ['T-481']", "shape", r"match returned a list of 1 item", 6, id="list"),
    pytest.param(
        "return {'entity': 'x' * 201}",
        "shape",
        r"an entity key of 201 characters",
        6,
        id="over-long-key",
    ),
    pytest.param(
        "return {'entity': ''}", "shape", r"an entity key of 0 characters", 6, id="empty-key"
    ),
    pytest.param(
        "return {1, 2}", "shape", r"match returned a set, which is not plain data", 6, id="a-set"
    ),
    pytest.param(
        "return {'entity': float('nan')}", "shape", r"a float \(nan\) at \['entity'\]", 6, id="nan"
    ),
]


@pytest.mark.parametrize(("body", "kind", "pattern", "line"), FAILURES)
def test_a_call_that_fails_links_nothing_and_says_why(
    runner: CodeRunner, code_root: Path, body: str, kind: str, pattern: str, line: int
) -> None:
    path = write_code(code_root, match_code(body, imports="import os\nimport sys\n"))
    (answer,) = runner.match_all([a_match(path)])
    assert not answer.linked
    assert answer.failure is not None
    assert (answer.failure.kind, answer.failure.file, answer.failure.line) == (kind, path, line)
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


def test_an_entity_on_a_context_that_names_none_links_nothing(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(code_root, match_code("return {'entity': 'T-1'}"))
    (answer,) = runner.match_all([a_match(path, keyed=False)])
    assert answer.failure is not None
    assert "context 'ticket' names no entity" in answer.failure.reason


LOAD_FAILURES = [
    pytest.param(
        "import no_such_module_here\n",
        1,
        r"raised ModuleNotFoundError while loading: No module named 'no_such_module_here'",
        id="import-error",
    ),
    pytest.param(
        "def match(turn)\n    return None\n", 1, r"syntax error: expected ':'", id="syntax-error"
    ),
    pytest.param(
        "x = 1\n", None, r"exports no 'context', so it links and renders nothing", id="no-export"
    ),
]


@pytest.mark.parametrize(("source", "line", "pattern"), LOAD_FAILURES)
def test_a_module_that_does_not_load_links_nothing(
    runner: CodeRunner, code_root: Path, source: str, line: int | None, pattern: str
) -> None:
    path = write_code(code_root, source)
    (answer,) = runner.match_all([a_match(path)])
    assert answer.failure is not None
    assert (answer.failure.kind, answer.failure.line) == ("load", line)
    assert re.search(pattern, answer.failure.reason), answer.failure.reason


def test_a_missing_file_is_a_load_failure(runner: CodeRunner) -> None:
    (answer,) = runner.match_all([a_match("features/t/gone.context.py")])
    assert answer.failure is not None
    assert answer.failure.reason == "the code file is not there — it was moved or deleted"


@pytest.mark.parametrize(
    ("body", "lines"),
    [
        pytest.param("while True:\n    pass", (6, 7), id="busy-loop"),
        pytest.param("time.sleep(100)", (6,), id="sleep"),
    ],
)
def test_a_call_that_never_returns_costs_its_timeout(
    runner: CodeRunner, code_root: Path, body: str, lines: tuple[int, ...]
) -> None:
    hang = write_code(code_root, match_code(body, imports="import time\n"))
    quick = write_code(code_root, match_code("return {}"))
    started = time.monotonic()
    stuck, fine = runner.match_all([a_match(hang, timeout_ms=SHORT_MS), a_match(quick)])
    elapsed = time.monotonic() - started
    assert SHORT_MS / 1000 <= elapsed < 2.0
    assert fine.linked
    assert fine.failure is None
    assert stuck.failure is not None
    assert stuck.failure.kind == "timeout"
    assert stuck.failure.reason.startswith(f"match ran past its {SHORT_MS} ms timeout")
    # The worker names the line the call had reached, when it can get a word in.
    assert stuck.failure.line in (*lines, None)


def test_calls_hanging_side_by_side_each_name_their_line(
    runner: CodeRunner, code_root: Path
) -> None:
    # Six busy loops hog the worker's interpreter; its word on each still comes in time
    # (on a machine busy with other work it may not, so a few tries are allowed).
    paths = [write_code(code_root, match_code("while True:\n    pass")) for _ in range(6)]
    for _ in range(5):
        answers = runner.match_all([a_match(p, timeout_ms=SHORT_MS) for p in paths])
        assert all(a.failure is not None and a.failure.kind == "timeout" for a in answers)
        lines = [a.failure.line for a in answers if a.failure is not None]
        if set(lines) <= {5, 6}:
            break
        assert runner.wait_ready(30)
    named = set(lines) - {None}
    assert named, "no try named the line of any of the six calls"
    assert named <= {5, 6}, lines


@pytest.mark.parametrize(
    ("source", "line"),
    [
        pytest.param("import time\ntime.sleep(100)\n", 2, id="module-level"),
        pytest.param(
            "import time\n\ndef _warm():\n    time.sleep(100)\n\n_warm()\n", 4, id="called-there"
        ),
    ],
)
def test_a_module_that_hangs_while_loading_says_loading_ran_past(
    runner: CodeRunner, code_root: Path, source: str, line: int
) -> None:
    path = write_code(code_root, source + match_code("return {}"))
    for _ in range(3):  # the worker names the line when it gets a word in before the grace
        (answer,) = runner.match_all([a_match(path, timeout_ms=SHORT_MS)])
        assert answer.failure is not None
        if answer.failure.line is not None:
            break
        assert runner.wait_ready(30)
    failure = answer.failure
    assert failure is not None
    assert (failure.kind, failure.line) == ("timeout", line)
    assert failure.reason.startswith(
        f"loading the module ran past its {SHORT_MS} ms timeout (it was at this line) — keep "
        "module level quick: move slow work"
    )
    assert "check ctx.signal in loops" not in failure.reason
    assert failure.reason.endswith("until then it links nothing")


def test_os_exit_fails_only_its_own_call(runner: CodeRunner, code_root: Path) -> None:
    exits = write_code(code_root, match_code("os._exit(3)", imports="import os\n"))
    quick = write_code(code_root, match_code("return {}"))
    before = set(runner.pids())
    answer, beside = runner.match_all([a_match(exits), a_match(quick)])
    assert answer.failure is not None
    assert (answer.failure.kind, answer.failure.line) == ("raise", 6)
    assert answer.failure.reason.startswith(
        "match raised ProcessExit: os._exit(3) was called — brain code must not end its worker process"
    )
    assert beside.linked
    assert set(runner.pids()) == before


def test_a_call_that_crashes_the_interpreter_names_its_line(
    runner: CodeRunner, code_root: Path
) -> None:
    crashes = write_code(code_root, match_code("ctypes.string_at(0)", imports="import ctypes\n"))
    quick = write_code(code_root, match_code("return {}"))
    before = set(runner.pids())
    answer, *beside = runner.match_all([a_match(crashes), a_match(quick), a_match(quick)])
    assert answer.failure is not None
    assert answer.failure.kind == "crash"
    assert "the worker process running match was killed by SIGSEGV" in answer.failure.reason
    assert answer.failure.line == 6
    # The calls that died beside it ran again on another worker, in their own time.
    assert [b.linked for b in beside] == [True, True]
    assert runner.wait_ready(30)
    assert len(set(runner.pids()) - before) == 1


def test_a_process_killed_outright_fails_what_ran_there(
    runner: CodeRunner, code_root: Path
) -> None:
    kills = write_code(
        code_root,
        match_code("os.kill(os.getpid(), signal.SIGKILL)", imports="import os\nimport signal\n"),
    )
    slow = write_code(code_root, match_code("time.sleep(0.5)\nreturn {}", imports="import time\n"))
    answer, beside = runner.match_all([a_match(kills), a_match(slow)])
    # Nothing says which call did it: both ran again together, and died together again.
    for failed in (answer, beside):
        assert failed.failure is not None
        assert failed.failure.kind == "crash"
        assert "was killed by SIGKILL" in failed.failure.reason
        assert (
            "1 other call was running in that process, and any of them may have done it"
            in failed.failure.reason
        )


def test_changing_directory_stays_in_the_worker(runner: CodeRunner, code_root: Path) -> None:
    here = os.getcwd()
    moves = write_code(code_root, match_code("os.chdir('/')\nreturn None", imports="import os\n"))
    looks = write_code(
        code_root, match_code("return {'entity': os.getcwd()}", imports="import os\n")
    )
    runner.match_all([a_match(moves)])
    (seen,) = runner.match_all([a_match(looks)])
    assert os.getcwd() == here
    assert seen.entity == str(code_root.resolve())


def test_replacing_modules_stays_in_the_worker(runner: CodeRunner, code_root: Path) -> None:
    json_module, content_error = sys.modules["json"], keel.errors.ContentError
    meddles = write_code(
        code_root,
        match_code(
            "sys.modules['json'] = None\n"
            "sys.modules.pop('keel.code.define', None)\n"
            "import keel.errors\n"
            "keel.errors.ContentError = None\n"
            "return {}",
            imports="import sys\n",
        ),
    )
    (answer,) = runner.match_all([a_match(meddles)])
    assert answer.failure is None
    assert sys.modules["json"] is json_module
    assert keel.errors.ContentError is content_error
    # The worker put its own modules back, so the next file still loads and answers.
    later = write_code(code_root, match_code("import json\nreturn {'entity': json.dumps(1)}"))
    assert runner.match_all([a_match(later)])[0].entity == "1"


def test_an_edit_is_used_by_the_next_call(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(code_root, match_code("return {'entity': 'T-1'}"))
    assert [a.entity for a in runner.match_all([a_match(path)] * 4)] == ["T-1"] * 4
    # Same size, same second: only the bytes tell the two versions apart.
    write_code(code_root, match_code("return {'entity': 'T-2'}"), path=path)
    assert [a.entity for a in runner.match_all([a_match(path)] * 4)] == ["T-2"] * 4
    assert not list(code_root.rglob("__pycache__"))


def test_a_sibling_module_can_be_imported(runner: CodeRunner, code_root: Path) -> None:
    write_code(code_root, "PREFIX = 'T-'\n", path="features/sib/ticket_ids.py")
    source = match_code("return {'entity': ticket_ids.PREFIX + '7'}", imports="import ticket_ids\n")
    path = write_code(code_root, source, path="features/sib/ticket.context.py")
    assert runner.match_all([a_match(path)])[0].entity == "T-7"


def test_match_calls_run_at_once(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(code_root, match_code("time.sleep(0.2)\nreturn {}", imports="import time\n"))
    started = time.monotonic()
    answers = runner.match_all([a_match(path)] * 10)
    assert time.monotonic() - started < 1.0
    assert all(a.linked for a in answers)


def test_renders_return_sections_and_may_be_async(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root,
        "import asyncio\nfrom keel.code import define_context\n\n"
        "async def render(entity, ctx):\n"
        "    await asyncio.sleep(0)\n"
        "    return [{'key': 'sla', 'text': f'{ctx.context} {entity} due at noon'}, {'key': 'long', 'text': 'x' * 100000}]\n\n"
        "def plain(entity):\n"
        "    return [{'key': 'note', 'text': entity}]\n\n"
        "context = define_context(render=render)\n",
    )
    (answer,) = runner.render_all([RenderCall(context="ticket", path=path, entity="T-481")])
    assert answer.failure is None
    assert [s.key for s in answer.sections] == ["sla", "long"]
    assert answer.sections[0].text == "ticket T-481 due at noon"
    assert len(answer.sections[1].text) == 100000
    # A context with render only is not asked to match: nothing links, nothing fails.
    (matched,) = runner.match_all([a_match(path)])
    assert (matched.linked, matched.failure) == (False, None)


def test_a_render_that_raises_renders_nothing(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root,
        "from keel.code import define_context\n\n"
        "def render(entity, ctx):\n"
        "    return ctx.query('SELECT 1')\n\n"
        "context = define_context(render=render)\n",
    )
    (answer,) = runner.render_all([RenderCall(context="ticket", path=path, entity=None)])
    assert answer.sections == ()
    assert answer.failure is not None
    assert answer.failure.kind == "raise"
    assert answer.failure.line == 4
    assert (
        "ctx.query cannot read the database: this render was called without one"
        in answer.failure.reason
    )


def test_a_match_has_no_database(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(code_root, match_code("return ctx.query('SELECT 1')"))
    (answer,) = runner.match_all([a_match(path)])
    assert answer.failure is not None
    assert "has no attribute 'query'" in answer.failure.reason
    assert "only render(entity, ctx) reads the database" in answer.failure.reason


@pytest.mark.usefixtures("runner")  # the module's own runner is ready and idle
def test_a_hundred_hanging_calls_leave_nothing_behind(code_root: Path) -> None:
    hang = write_code(code_root, match_code("while True:\n    pass"))
    sleep = write_code(code_root, match_code("time.sleep(100)", imports="import time\n"))
    before = set(children())
    with CodeRunner(code_root, workers=2) as mine:
        assert mine.wait_ready(30)
        fds, count = open_fds(), threads()
        assert set(children()) == before | set(mine.pids())
        for _ in range(4):
            batch = [a_match(hang if i % 2 else sleep, timeout_ms=SHORT_MS) for i in range(25)]
            answers = mine.match_all(batch)
            assert {a.failure.kind for a in answers if a.failure} == {"timeout"}
        assert mine.wait_ready(30)
        assert mine.started_workers >= 6
        now = children()
        assert set(now) == before | set(mine.pids())
        assert len(mine.pids()) == 2
        assert "Z" not in now.values()
        assert (open_fds(), threads()) == (fds, count)
    assert set(children()) == before
    assert open_fds() < fds


def test_a_runner_must_be_started_and_needs_a_worker(code_root: Path) -> None:
    with pytest.raises(UsageError, match=r"at least one worker, not 0"):
        CodeRunner(code_root, workers=0)
    with pytest.raises(UsageError, match=r"the code runner is not started"):
        CodeRunner(code_root).run([Job(kind="match", path="x.context.py", args={})])


def test_a_closed_runner_runs_nothing(code_root: Path) -> None:
    path = write_code(code_root, match_code("return {}"))
    runner = CodeRunner(code_root, workers=1)
    with runner:
        assert runner.match_all([a_match(path)])[0].linked
    (answer,) = runner.match_all([a_match(path)])
    assert answer.failure is not None
    assert "the code runner is closed" in answer.failure.reason
    assert runner.pids() == ()


def test_a_worker_that_cannot_be_started_fails_the_calls_saying_why(
    code_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*_args: object, **_kwargs: object) -> None:
        raise OSError(24, "Too many open files")

    monkeypatch.setattr(subprocess, "Popen", refuse)
    path = write_code(code_root, match_code("return {}"))
    with CodeRunner(code_root, workers=1) as runner:
        assert not runner.wait_ready(5)
        (answer,) = runner.match_all([a_match(path)])
    assert answer.failure is not None
    assert answer.failure.reason == (
        "match could not be run: no worker process could be started: [Errno 24] Too many "
        "open files; until then it links nothing"
    )


def test_a_worker_that_dies_while_starting_is_not_started_again_at_once(code_root: Path) -> None:
    path = write_code(code_root, match_code("return {}"))
    runner = CodeRunner(code_root, workers=1)
    runner._workers.hello = {"op": "hello"}  # no Keel to name: the worker cannot start
    with runner:
        assert not runner.wait_ready(30)
        (answer,) = runner.match_all([a_match(path)])
        assert runner.started_workers <= 3
    assert answer.failure is not None
    assert answer.failure.reason.startswith(
        "match could not be run: a worker process exited with code 1 while starting: KeyError: 'keel'"
    )
