"""Pipelines: `async def run(ctx, vars)` in a worker, each ctx call carried out by the caller."""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest

from keel.code import CodeRunner, CtxCall, PipelineAnswer, PipelineCall, TerminalError
from keel.code.values import Job
from keel.errors import LinkError, Refused, UsageError
from tests.code.support import SHORT_MS, a_match, match_code, write_code

STARTED = datetime(2026, 5, 1, 9, 30, tzinfo=UTC)


def pipeline_code(body: str, *, imports: str = "") -> str:
    """A pipeline file whose `run(ctx, vars)` runs `body`; its first line is line 5."""
    lines = "\n".join(f"    {line}" for line in body.splitlines())
    return (
        f"{imports}from keel.code import CallFailed, TerminalError, define_pipeline\n\n\n"
        f"async def run(ctx, vars):\n{lines}\n\n\npipeline = define_pipeline(run)\n"
    )


def a_pipeline(
    path: str, *, vars: Mapping[str, Any] | None = None, timeout_ms: int = 5000
) -> PipelineCall:
    return PipelineCall(
        scenario="outreach",
        path=path,
        vars={"prospect": "p_912", "chat": "tg:chat:7"} if vars is None else vars,
        run_id="run-1",
        started_at=STARTED,
        timeout_ms=timeout_ms,
    )


class Parent:
    """A plain on_call: records each call and answers from `answers` (by call name)."""

    def __init__(self, answers: Mapping[str, Any] | None = None) -> None:
        self.answers: dict[str, Any] = {
            "run_agent": {"text": "Hello p_912"},
            "request_approval": "card-1",
            "await_approval": True,
            **(answers or {}),
        }
        self.calls: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, args: Mapping[str, Any]) -> Any:
        self.calls.append((name, dict(args)))
        answer = self.answers.get(name)
        if isinstance(answer, BaseException):
            raise answer
        if callable(answer):
            return answer(args)
        return answer


EVERY_CALL = """\
draft = await ctx.run_agent(agent='sdr', prompt='First touch', entity=vars.prospect)
cheap = await ctx.run_agent(agent='sdr', prompt='Summarise', reach=[{'context': 'offer'}])
bound = await ctx.bind_context(context='prospect', entity=vars['prospect'], chat=vars.chat)
sent = await ctx.send(chat=vars.chat, text=draft['text'], about={'entity': vars.prospect})
card = await ctx.request_approval(chat=vars.chat, text='Send the offer?')
approved = await ctx.await_approval(card)
await ctx.unbind_context(context='prospect', chat=vars.chat, thread='t1', bot='nova')
print('approved' if approved else 'denied', card)
return {'draft': draft, 'cheap': cheap, 'bound': bound, 'sent': sent, 'approved': approved}"""


def test_every_ctx_call_is_carried_out_by_the_caller_in_order(
    runner: CodeRunner, code_root: Path, capfd: pytest.CaptureFixture[str]
) -> None:
    path = write_code(code_root, pipeline_code(EVERY_CALL), suffix=".pipeline.py")
    parent = Parent({"bind_context": None, "send": {"message_id": "m1"}})
    answer = runner.run_pipeline(a_pipeline(path), parent)
    assert answer.failure is None, answer.failure
    expected = [
        (
            "run_agent",
            {"agent": "sdr", "prompt": "First touch", "entity": "p_912", "reach": None},
        ),
        (
            "run_agent",
            {
                "agent": "sdr",
                "prompt": "Summarise",
                "entity": None,
                "reach": [{"context": "offer", "entity": None}],
            },
        ),
        (
            "bind_context",
            {
                "context": "prospect",
                "entity": "p_912",
                "chat": "tg:chat:7",
                "thread": None,
                "bot": None,
            },
        ),
        ("send", {"chat": "tg:chat:7", "text": "Hello p_912", "about": {"entity": "p_912"}}),
        ("request_approval", {"chat": "tg:chat:7", "text": "Send the offer?", "about": None}),
        ("await_approval", {"card": "card-1"}),
        (
            "unbind_context",
            {"context": "prospect", "chat": "tg:chat:7", "thread": "t1", "bot": "nova"},
        ),
    ]
    assert parent.calls == expected
    assert [(c.name, dict(c.args)) for c in answer.calls] == expected
    assert [c.result for c in answer.calls] == [
        {"text": "Hello p_912"},
        {"text": "Hello p_912"},
        None,
        {"message_id": "m1"},
        "card-1",
        True,
        None,
    ]
    assert answer.value == {
        "draft": {"text": "Hello p_912"},
        "cheap": {"text": "Hello p_912"},
        "bound": None,
        "sent": {"message_id": "m1"},
        "approved": True,
    }
    # What the pipeline printed is its log, and never reaches this process's output.
    assert answer.log == ("approved card-1",)
    assert capfd.readouterr().out == ""


def test_a_refused_call_is_an_exception_the_pipeline_can_catch(
    runner: CodeRunner, code_root: Path
) -> None:
    body = (
        "try:\n"
        "    await ctx.send(chat='tg:chat:7', text='hi')\n"
        "except CallFailed as exc:\n"
        "    return {'said': str(exc), 'call': exc.call, 'kind': exc.kind}\n"
        "return 'sent'"
    )
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    refusal = Refused("the reach's 'film' context is keyed and the send names no key")
    answer = runner.run_pipeline(a_pipeline(path), Parent({"send": refusal}))
    assert answer.failure is None
    assert answer.value == {"said": str(refusal), "call": "send", "kind": "Refused"}
    assert answer.calls == (
        CtxCall(
            name="send",
            args={"chat": "tg:chat:7", "text": "hi", "about": None},
            error=str(refusal),
            error_type="Refused",
        ),
    )


def test_an_uncaught_refusal_fails_the_pipeline_at_its_line(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(
        code_root,
        pipeline_code("await ctx.bind_context(context='nope', entity='x')"),
        suffix=".pipeline.py",
    )
    error = LinkError("unknown context 'nope'")
    answer = runner.run_pipeline(a_pipeline(path), Parent({"bind_context": error}))
    assert answer.failure is not None
    assert (answer.failure.kind, answer.failure.line) == ("raise", 5)
    assert answer.failure.reason == (
        "the pipeline raised CallFailed: unknown context 'nope' — fix the code; until then "
        "its scenario's runs fail"
    )
    assert not answer.terminal


FAILURES = [
    pytest.param(
        "raise TerminalError('outreach needs vars.prospect')",
        "terminal",
        "outreach needs vars.prospect",
        5,
        id="terminal-error",
    ),
    pytest.param(
        "class Gone(TerminalError):\n    pass\nraise Gone('the prospect was deleted')",
        "terminal",
        "the prospect was deleted",
        7,
        id="terminal-subclass",
    ),
    pytest.param(
        "return vars['missing']",
        "raise",
        r"the pipeline raised KeyError: 'missing' — fix the code; until then its scenario's runs fail",
        5,
        id="raises",
    ),
    pytest.param(
        "await ctx.run_agent(agent=3, prompt='x')",
        "raise",
        r"TypeError: ctx.run_agent: agent must be a non-empty string, got int",
        5,
        id="bad-argument",
    ),
    pytest.param(
        "await ctx.send(chat='c', text='t', about={'who': 'x'})",
        "raise",
        r"ctx.send: about must be \{'entity': key\} and/or \{'context': id\}",
        5,
        id="bad-about",
    ),
    pytest.param(
        "return ctx.now()",
        "raise",
        r"ctx of the pipeline has no attribute 'now'.* — a pipeline must not read the clock: use ctx.started_at",
        5,
        id="no-clock",
    ),
    pytest.param(
        "return {1, 2}",
        "shape",
        r"the pipeline returned a set, which is not plain data",
        4,
        id="set",
    ),
    pytest.param(
        "os._exit(3)",
        "raise",
        r"the pipeline raised ProcessExit: os._exit\(3\) was called",
        5,
        id="os-exit",
    ),
]


@pytest.mark.parametrize(("body", "kind", "pattern", "line"), FAILURES)
def test_a_pipeline_that_fails_says_why_and_where(
    runner: CodeRunner, code_root: Path, body: str, kind: str, pattern: str, line: int
) -> None:
    path = write_code(code_root, pipeline_code(body, imports="import os\n"), suffix=".pipeline.py")
    answer = runner.run_pipeline(a_pipeline(path), Parent())
    assert answer.value is None
    assert answer.failure is not None
    # One line more: the `import os` above the file's first line.
    assert (answer.failure.kind, answer.failure.line) == (kind, line + 1)
    assert re.search(pattern, answer.failure.reason), answer.failure.reason
    assert answer.terminal == (kind == "terminal")


def test_terminal_error_reads_as_its_message(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(
        code_root, pipeline_code("raise TerminalError('no such prospect')"), suffix=".pipeline.py"
    )
    answer = runner.run_pipeline(a_pipeline(path), Parent())
    assert str(answer.failure) == f"{path}:5: no such prospect"


def test_a_terminal_error_from_the_caller_reaches_the_pipeline(
    runner: CodeRunner, code_root: Path
) -> None:
    body = (
        "try:\n"
        "    await ctx.run_agent(agent='sdr', prompt='x')\n"
        "except TerminalError as exc:\n"
        "    print('caught', exc)\n"
        "await ctx.run_agent(agent='sdr', prompt='again')"
    )
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    stop = TerminalError("the scenario has no feature: run_agent cannot take a reach")
    answer = runner.run_pipeline(a_pipeline(path), Parent({"run_agent": stop}))
    assert answer.log == (f"caught {stop}",)
    assert answer.failure is not None
    assert (answer.failure.kind, answer.failure.reason, answer.failure.line) == (
        "terminal",
        str(stop),
        9,
    )
    assert [c.error_type for c in answer.calls] == ["TerminalError", "TerminalError"]


def test_a_pipeline_that_is_not_async_says_so(runner: CodeRunner, code_root: Path) -> None:
    source = "from keel.code import define_pipeline\n\n\n@define_pipeline\ndef pipeline(ctx, vars):\n    return 1\n"
    path = write_code(code_root, source, suffix=".pipeline.py")
    answer = runner.run_pipeline(a_pipeline(path), Parent())
    assert answer.failure is not None
    assert "a pipeline is `async def run(ctx, vars)`" in answer.failure.reason


def test_a_broken_caller_stops_the_pipeline_and_its_error_goes_on(
    runner: CodeRunner, code_root: Path
) -> None:
    marker = code_root / "stopped.txt"
    body = (
        "try:\n"
        "    await ctx.send(chat='c', text='t')\n"
        "finally:\n"
        f"    open({str(marker)!r}, 'w').write('stopped')"
    )
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    with pytest.raises(RuntimeError, match=r"the parent broke"):
        runner.run_pipeline(a_pipeline(path), Parent({"send": RuntimeError("the parent broke")}))
    # The pipeline was told to stop, and did (its `finally` ran), rather than wait for ever.
    until = time.monotonic() + 10
    while not marker.exists() and time.monotonic() < until:
        time.sleep(0.01)
    assert marker.read_text() == "stopped"


@pytest.mark.parametrize(
    ("answers", "pattern"),
    [
        pytest.param(
            {"run_agent": lambda _: {datetime.now(UTC)}},
            r"on_call answered run_agent with a value that is not JSON",
            id="not-json",
        ),
        pytest.param(
            {"await_approval": "yes"},
            r"on_call answered await_approval with str; it must return True \(approved\) or False",
            id="approval-not-bool",
        ),
        pytest.param(
            {"request_approval": 7},
            r"on_call answered request_approval with int; it must return the card's id",
            id="card-not-str",
        ),
    ],
)
def test_a_caller_answering_the_wrong_shape_is_a_usage_error(
    runner: CodeRunner, code_root: Path, answers: dict[str, Any], pattern: str
) -> None:
    body = "await ctx.run_agent(agent='a', prompt='p')\nawait ctx.await_approval(await ctx.request_approval(chat='c', text='t'))"
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    with pytest.raises(UsageError, match=pattern):
        runner.run_pipeline(a_pipeline(path), Parent(answers))


def test_a_slow_answer_does_not_count_against_the_timeout(
    runner: CodeRunner, code_root: Path
) -> None:
    body = "card = await ctx.request_approval(chat='c', text='ok?')\nreturn await ctx.await_approval(card)"
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    timeout_ms = 1000  # room for a cold worker to import what a pipeline needs, on a busy box
    person = threading.Event()

    def slow_approval(_args: Mapping[str, Any]) -> bool:
        person.wait(1.2 * timeout_ms / 1000)  # a person takes longer than the whole timeout
        return False

    started = time.monotonic()
    answer = runner.run_pipeline(
        a_pipeline(path, timeout_ms=timeout_ms), Parent({"await_approval": slow_approval})
    )
    assert time.monotonic() - started >= 1.2 * timeout_ms / 1000
    assert answer.failure is None
    assert answer.value is False


@pytest.mark.parametrize(
    ("body", "imports"),
    [
        pytest.param("while True:\n    pass", "", id="busy-loop"),
        pytest.param(
            "await ctx.send(chat='c', text='t')\ntime.sleep(100)",
            "import time\n",
            id="after-a-call",
        ),
        pytest.param("await asyncio.sleep(100)", "import asyncio\n", id="async-sleep"),
    ],
)
def test_a_pipeline_that_never_returns_costs_its_timeout(
    runner: CodeRunner, code_root: Path, body: str, imports: str
) -> None:
    path = write_code(code_root, pipeline_code(body, imports=imports), suffix=".pipeline.py")
    started = time.monotonic()
    answer = runner.run_pipeline(a_pipeline(path, timeout_ms=SHORT_MS), Parent())
    assert time.monotonic() - started < 5
    assert answer.failure is not None
    assert answer.failure.kind == "timeout"
    assert answer.failure.reason.startswith(
        f"the pipeline computed past its {SHORT_MS} ms timeout (the time its ctx calls took "
        "does not count)"
    )
    # The pool goes on: the hung worker is replaced, and the next call is answered.
    assert runner.wait_ready(30)
    quick = write_code(code_root, match_code("return {}"))
    assert runner.match_all([a_match(quick)])[0].linked


def test_a_pipeline_that_kills_its_process_fails_alone(runner: CodeRunner, code_root: Path) -> None:
    body = "await ctx.send(chat='c', text='t')\nos.kill(os.getpid(), signal.SIGKILL)"
    path = write_code(
        code_root, pipeline_code(body, imports="import os\nimport signal\n"), suffix=".pipeline.py"
    )
    parent = Parent()
    answer = runner.run_pipeline(a_pipeline(path), parent)
    assert answer.failure is not None
    assert answer.failure.kind == "crash"
    assert "the worker process running the pipeline was killed by SIGKILL" in answer.failure.reason
    assert len(parent.calls) == 1
    assert runner.wait_ready(30)


def test_two_pipelines_run_at_once(runner: CodeRunner, code_root: Path) -> None:
    body = "got = await ctx.run_agent(agent='sdr', prompt=vars.prospect)\nreturn got"
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    # Each one's call waits until the other's has come in too: only two pipelines running
    # at the same time get past it.
    both = threading.Barrier(2, timeout=20)

    def meet(args: Mapping[str, Any]) -> str:
        both.wait()
        return f"drafted for {args['prompt']}"

    answers: dict[str, PipelineAnswer] = {}

    def one(prospect: str) -> None:
        call = a_pipeline(path, vars={"prospect": prospect})
        answers[prospect] = runner.run_pipeline(call, Parent({"run_agent": meet}))

    threads = [threading.Thread(target=one, args=(p,)) for p in ("p_1", "p_2")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(30)
    assert {p: a.value for p, a in answers.items()} == {
        "p_1": "drafted for p_1",
        "p_2": "drafted for p_2",
    }


REPLAYED = """\
offer = vars.get('offer') or ctx.random.choice(['a', 'b', 'c', 'd'])
draft = await ctx.run_agent(agent='sdr', prompt=f'offer {offer} at {ctx.started_at:%H:%M}')
card = await ctx.request_approval(chat='c', text=draft)
if await ctx.await_approval(card):
    await ctx.send(chat='c', text=draft)
return offer"""


def test_a_replay_makes_the_same_calls_given_the_same_answers(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(code_root, pipeline_code(REPLAYED), suffix=".pipeline.py")
    first = runner.run_pipeline(a_pipeline(path, vars={}), Parent({"run_agent": "draft 1"}))
    assert first.failure is None
    assert [c.name for c in first.calls] == [
        "run_agent",
        "request_approval",
        "await_approval",
        "send",
    ]
    assert "at 09:30" in first.calls[0].args["prompt"]

    # The parent answers from its journal, as a durable run's replay does.
    journal = iter(first.calls)

    def from_journal(name: str, args: Mapping[str, Any]) -> Any:
        entry = next(journal)
        assert (entry.name, dict(entry.args)) == (name, dict(args))
        return entry.result

    again = runner.run_pipeline(a_pipeline(path, vars={}), from_journal)
    assert again == first

    # Answered from the record alone, on_call is never asked.
    def never(name: str, args: Mapping[str, Any]) -> Any:
        raise AssertionError(f"on_call was asked {name} {args}")

    replayed = runner.run_pipeline(a_pipeline(path, vars={}), never, replay=first.calls)
    assert replayed == first


def test_a_pipeline_that_changes_its_calls_on_replay_fails(
    runner: CodeRunner, code_root: Path
) -> None:
    path = write_code(code_root, pipeline_code(REPLAYED), suffix=".pipeline.py")
    first = runner.run_pipeline(a_pipeline(path, vars={"offer": "a"}), Parent())
    answer = runner.run_pipeline(
        a_pipeline(path, vars={"offer": "b"}), Parent(), replay=first.calls
    )
    assert answer.failure is not None
    assert answer.failure.reason.startswith(
        "the pipeline is not deterministic: its ctx call #1 was run_agent("
    )
    assert "use ctx.started_at and ctx.random" in answer.failure.reason


@pytest.mark.parametrize(
    ("beside", "imports"),
    [
        pytest.param("while True:\n    pass", "", id="a-hang-retires-it"),
        pytest.param("ctypes.string_at(0)", "import ctypes\n", id="a-crash-kills-it"),
    ],
)
def test_a_pipeline_waiting_on_a_lost_worker_runs_again_elsewhere(
    code_root: Path, beside: str, imports: str
) -> None:
    """Its worker is lost to another call while the pipeline waits for an answer: the
    pipeline runs again on a fresh worker, its calls answered from the record."""
    other = write_code(code_root, match_code(beside, imports=imports))
    body = (
        "got = await ctx.run_agent(agent='sdr', prompt='x')\n"
        "await ctx.send(chat='c', text=got)\n"
        "return {'got': got, 'pid': os.getpid()}"
    )
    path = write_code(code_root, pipeline_code(body, imports="import os\n"), suffix=".pipeline.py")
    with CodeRunner(code_root, workers=1) as mine:
        (first,) = mine.pids()

        def lose_the_worker(_args: Mapping[str, Any]) -> str:
            (lost,) = mine.match_all([a_match(other, timeout_ms=SHORT_MS)])
            assert lost.failure is not None
            until = time.monotonic() + 20
            while first in mine.pids() and time.monotonic() < until:
                time.sleep(0.01)
            assert first not in mine.pids()
            return "drafted"

        parent = Parent({"run_agent": lose_the_worker})
        answer = mine.run_pipeline(a_pipeline(path), parent)
    assert answer.failure is None
    assert answer.value is not None
    assert answer.value["got"] == "drafted"
    assert answer.value["pid"] != first
    # Each call was carried out once: the second run was answered from the record.
    assert [name for name, _ in parent.calls] == ["run_agent", "send"]


def test_a_pipeline_whose_worker_crashed_beside_it_runs_again(code_root: Path) -> None:
    crash = write_code(code_root, match_code("ctypes.string_at(0)", imports="import ctypes\n"))
    computing, go = code_root / "computing.txt", code_root / "go.txt"
    body = (
        "await ctx.send(chat='c', text='t')\n"
        f"open({str(computing)!r}, 'a').write('x')\n"
        f"while not os.path.exists({str(go)!r}):\n"
        "    time.sleep(0.01)\n"
        "return os.getpid()"
    )
    imports = "import os\nimport time\n"
    path = write_code(code_root, pipeline_code(body, imports=imports), suffix=".pipeline.py")
    with CodeRunner(code_root, workers=1) as mine:
        (first,) = mine.pids()

        def crash_it_meanwhile() -> None:
            until = time.monotonic() + 20
            while not computing.exists() and time.monotonic() < until:
                time.sleep(0.01)
            mine.match_all([a_match(crash)])
            go.write_text("go")

        thread = threading.Thread(target=crash_it_meanwhile)
        thread.start()
        parent = Parent()
        answer = mine.run_pipeline(a_pipeline(path), parent)
        thread.join(20)
    assert answer.failure is None
    assert answer.value != first
    # It ran twice (it was computing when its worker died), its one call carried out once.
    assert computing.read_text() == "xx"
    assert [name for name, _ in parent.calls] == ["send"]


def test_the_run_facts_are_the_same_on_every_run(runner: CodeRunner, code_root: Path) -> None:
    body = "return [ctx.scenario, ctx.run_id, ctx.started_at.isoformat(), ctx.random.random()]"
    path = write_code(code_root, pipeline_code(body), suffix=".pipeline.py")
    one, two = (runner.run_pipeline(a_pipeline(path), Parent()).value for _ in range(2))
    assert one == two
    assert one[:3] == ["outreach", "run-1", "2026-05-01T09:30:00+00:00"]


def test_an_answer_reads_back_from_json(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(code_root, pipeline_code(EVERY_CALL), suffix=".pipeline.py")
    answer = runner.run_pipeline(a_pipeline(path), Parent({"send": Refused("no")}))
    assert answer.failure is not None
    assert PipelineAnswer.from_json(answer.to_json()) == answer


def test_a_runner_must_be_started_and_open(code_root: Path) -> None:
    path = write_code(code_root, pipeline_code("return 1"), suffix=".pipeline.py")
    runner = CodeRunner(code_root, workers=1)
    with pytest.raises(UsageError, match=r"the code runner is not started"):
        runner.run_pipeline(a_pipeline(path), Parent())
    with runner:
        assert runner.run_pipeline(a_pipeline(path), Parent()).value == 1
    answer = runner.run_pipeline(a_pipeline(path), Parent())
    assert answer.failure is not None
    assert answer.failure.reason == (
        "the pipeline could not be run: the code runner is closed; until then its scenario's "
        "runs fail"
    )


def test_the_run_start_must_be_in_utc(runner: CodeRunner, code_root: Path) -> None:
    path = write_code(code_root, pipeline_code("return 1"), suffix=".pipeline.py")
    call = PipelineCall(
        scenario="outreach", path=path, vars={}, run_id="r", started_at=datetime(2026, 5, 1)
    )
    with pytest.raises(UsageError, match=r"has a naive started_at \(2026-05-01T00:00:00\)"):
        runner.run_pipeline(call, Parent())


def test_a_pipeline_whose_caller_has_gone_is_stopped_at_its_next_call(
    runner: CodeRunner, code_root: Path
) -> None:
    go = code_root / "go-on.txt"
    body = (
        f"while not os.path.exists({str(go)!r}):\n"
        "    time.sleep(0.01)\n"
        "await ctx.send(chat='c', text='t')\n"
        "return 'not reached'"
    )
    imports = "import os\nimport time\n"
    path = write_code(code_root, pipeline_code(body, imports=imports), suffix=".pipeline.py")
    job = Job(
        kind="pipeline",
        path=path,
        args={"scenario": "s", "vars": {}, "run_id": "r", "started_at": STARTED.isoformat()},
        timeout_ms=5000,
    )
    pending = runner.launch(job)
    runner.abandon(pending)
    go.write_text("go")
    assert runner.next_ask(pending) is None
    assert pending.reply is not None
    assert pending.reply.failure is not None
    assert "the pipeline raised Cancelled: its run is no longer waiting for it" in (
        pending.reply.failure.reason
    )
