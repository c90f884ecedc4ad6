"""What a worker does with one call, run here in-process: load, call, make the answer plain."""

from __future__ import annotations

import enum
import re
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from keel.code.brain_api import CURRENT, CallLog, Ctx, PrintSink, Record, Signal, Turn
from keel.code.calls import Executor, Unplain, plain, takes_ctx
from tests.code.support import match_code, write_code

TURN = {
    "input": "T-481 is late",
    "role": "support",
    "surface": "chat",
    "subject_id": None,
    "run": None,
}


@pytest.fixture
def executor(tmp_path: Path) -> Executor:
    return Executor(tmp_path)


def _run(executor: Executor, kind: str, path: str, args: dict[str, Any]) -> dict[str, Any]:
    call = {"kind": kind, "path": path, "args": args}
    return executor.execute(call, signal=Signal(), log=CallLog())


def _match(executor: Executor, path: str, turn: dict[str, Any] = TURN) -> dict[str, Any]:
    return _run(executor, "match", path, {"context": "ticket", "turn": turn})


def test_a_match_answers_with_its_value_and_the_line_it_is_defined_at(executor: Executor) -> None:
    path = write_code(executor.root, match_code("return {'entity': turn.input[:5]}"))
    assert _match(executor, path) == {"line": 4, "value": {"entity": "T-481"}}


def test_the_turn_carries_its_run_and_reach(executor: Executor) -> None:
    path = write_code(
        executor.root,
        match_code(
            "return {'entity': f'{turn.run.feature}:{turn.run.reach[0].context}={turn.run.reach[0].entity}'}"
        ),
    )
    run = {"feature": "support", "reach": [{"context": "ticket", "entity": "T-1"}]}
    assert _match(executor, path, {**TURN, "run": run})["value"] == {"entity": "support:ticket=T-1"}


def test_facts_of_a_failure_come_back_for_keel_to_word(executor: Executor) -> None:
    raises = write_code(executor.root, match_code("return turn.run.feature"))
    assert _match(executor, raises)["raised"] == {
        "type": "AttributeError",
        "said": "'NoneType' object has no attribute 'feature'",
        "line": 5,
    }
    broken = write_code(executor.root, "x = (\n")
    load = _match(executor, broken)["load"]
    assert load["line"] == 1
    assert load["reason"].startswith("syntax error:")


def test_a_value_that_is_not_plain_is_named(executor: Executor) -> None:
    path = write_code(executor.root, match_code("return {'entity': object()}"))
    assert _match(executor, path) == {"line": 4, "unplain": "an object at ['entity']"}


def test_render_gate_engage_and_inspect(executor: Executor) -> None:
    context = write_code(
        executor.root,
        "from keel.code import define_context\n\n"
        "def render(entity, ctx):\n    return [{'key': 'k', 'text': f'{ctx.context}:{entity}:{ctx.entity}'}]\n\n"
        "context = define_context(render=render)\n",
    )
    rendered = _run(executor, "render", context, {"context": "ticket", "entity": "T-1"})
    assert rendered["value"] == [{"key": "k", "text": "ticket:T-1:T-1"}]
    assert _match(executor, context) == {"absent": True}
    hook = write_code(
        executor.root,
        "from keel.code import define_gate\n\nhook = define_gate(lambda event, ctx: {'entity': event.ticket.id, 'hook': ctx.hook, 'n': len(ctx.reach)})\n",
        suffix=".hook.py",
    )
    args = {"hook": "hook:x", "event": {"ticket": {"id": "T-2"}}, "reach": [{"context": "ticket"}]}
    assert _run(executor, "gate", hook, args)["value"] == {
        "entity": "T-2",
        "hook": "hook:x",
        "n": 1,
    }
    policy = write_code(
        executor.root,
        "from keel.code import define_engage\n\nengage = define_engage(lambda m, ctx: {'engage': ctx.bot == 'desk'})\n",
        suffix=".engage.py",
    )
    assert _run(executor, "engage", policy, {"bot": "desk", "message": {"text": "hi"}})[
        "value"
    ] == {"engage": True}
    looked = _run(executor, "inspect", hook, {"kind": "hook"})["value"]
    assert looked == {"functions": ["gate"], "async": [], "lines": {"gate": 3}}


def test_a_file_is_loaded_once_until_its_bytes_change(executor: Executor) -> None:
    write_code(executor.root, "loads = []\n", path="features/t/keel_test_counter.py")
    source = "import keel_test_counter as counter\ncounter.loads.append(1)\n" + match_code(
        "return {'entity': str(len(counter.loads))}"
    )
    path = write_code(executor.root, source, path="features/t/counted.context.py")
    try:
        assert [_match(executor, path)["value"] for _ in range(3)] == [{"entity": "1"}] * 3
        write_code(executor.root, source.replace("str(len", "str(  len"), path=path)
        assert _match(executor, path)["value"] == {"entity": "2"}
    finally:
        sys.modules.pop("keel_test_counter", None)


@pytest.mark.parametrize(
    ("path", "reason"),
    [
        pytest.param("/etc/passwd", "a code path must be inside the brain", id="absolute"),
        pytest.param(
            "features/../../x.context.py", "a code path must be inside the brain", id="dot-dot"
        ),
        pytest.param("features/none.context.py", "the code file is not there", id="missing"),
    ],
)
def test_paths_outside_the_brain_or_missing_do_not_load(
    executor: Executor, path: str, reason: str
) -> None:
    assert _match(executor, path)["load"]["reason"].startswith(reason)


class Colour(enum.Enum):
    RED = 1


class Size(enum.IntEnum):
    BIG = 3


@pytest.mark.parametrize(
    ("value", "made"),
    [
        pytest.param((1, "a", None, True, 2.5), [1, "a", None, True, 2.5], id="tuple"),
        pytest.param({"a": [{"b": Size.BIG}]}, {"a": [{"b": 3}]}, id="int-enum"),
    ],
)
def test_plain_values_pass(value: Any, made: Any) -> None:
    assert plain(value) == made


@pytest.mark.parametrize(
    ("value", "said"),
    [
        pytest.param({1, 2}, "a set", id="set"),
        pytest.param({"k": [Colour.RED]}, "a Colour at ['k'][0]", id="enum"),
        pytest.param({3: "x"}, "a dict with the key 3, not a string", id="int-key"),
        pytest.param(float("inf"), "a float (inf)", id="inf"),
    ],
)
def test_values_that_are_not_plain_are_named(value: Any, said: str) -> None:
    with pytest.raises(Unplain, match=f"^{re.escape(said)}$"):
        plain(value)


def test_deep_values_are_refused() -> None:
    value: Any = []
    for _ in range(100):
        value = [value]
    with pytest.raises(Unplain, match=r"^a value nested more than 64 deep"):
        plain(value)


def test_ctx_is_optional_in_every_function() -> None:
    def one(_turn: object) -> None:
        return None

    def two(_turn: object, _ctx: object) -> None:
        return None

    def many(*_args: object) -> None:
        return None

    assert (takes_ctx(one), takes_ctx(two), takes_ctx(many), takes_ctx(len)) == (
        False,
        True,
        True,
        False,
    )


def test_records_read_as_attributes_and_say_what_they_have() -> None:
    record = Record({"text": "hi", "from": {"id": 7}}, name="message")
    assert (record.text, record["from"].id, record.get("missing")) == ("hi", 7, None)
    with pytest.raises(
        AttributeError,
        match=r"message has no attribute 'txt' — did you mean 'text'\? \(it has text, from\)",
    ):
        _ = record.txt
    record.extra = 1
    assert record["extra"] == 1


def test_the_turn_names_its_attributes() -> None:
    turn = Turn.of(TURN)
    with pytest.raises(
        AttributeError, match=r"turn has no attribute 'imput' — did you mean 'input'\?"
    ):
        _ = turn.imput


def test_ctx_says_what_a_call_does_not_get() -> None:
    ctx = Ctx(owner="match", log=CallLog(), signal=Signal(), context="ticket")
    assert ctx.context == "ticket"
    with pytest.raises(
        AttributeError, match=r"ctx of match has no attribute 'reach' .* only a hook's gate"
    ):
        _ = ctx.reach


def test_a_signal_wakes_a_waiting_call() -> None:
    signal = Signal()
    assert not signal.wait(0.01)
    threading.Timer(0.05, signal.set).start()
    assert signal.wait(5)
    assert signal.aborted
    assert signal.is_set()
    with pytest.raises(TimeoutError, match=r"deadline has passed"):
        signal.raise_if_aborted()


def test_a_call_log_is_bounded() -> None:
    log = CallLog()
    sink = PrintSink()
    token = CURRENT.set(log)
    try:
        print("partial", end="", file=sink)
        print(" line", file=sink)
        log("x" * 5000)
        for index in range(200):
            log("line", index)
    finally:
        CURRENT.reset(token)
    lines = log.finish()
    assert lines[:3] == ["partial line", "x" * 2000 + " [...]", "line 0"]
    assert len(lines) == 101
    assert lines[-1] == "[102 more lines not kept]"
    sink.write("outside any call is dropped")
