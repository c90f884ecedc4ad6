"""A pipeline's `ctx`, in-process: what each call sends, and the arguments it refuses."""

from __future__ import annotations

import asyncio
import contextlib
import re
from collections.abc import Callable, Coroutine
from datetime import UTC, datetime
from typing import Any

import pytest

from keel.code.brain_api import CallLog, Signal
from keel.code.define import CallFailed, TerminalError
from keel.code.pipeline_ctx import Bridge, Cancelled, PipelineCtx

ARGS = {"scenario": "outreach", "run_id": "run-7", "started_at": "2026-05-01T09:30:00+00:00"}


class Keel:
    """Answers each ask at once with `answer` (a value, or a whole answer message)."""

    def __init__(self, answer: dict[str, Any] | None = None) -> None:
        self.asks: list[dict[str, Any]] = []
        self.answer = answer or {"value": "ok"}
        self.bridge = Bridge(1, send=self.send, pause=lambda: 42.0)

    def send(self, message: dict[str, Any]) -> None:
        self.asks.append(message)
        self.bridge.deliver({"seq": message["seq"], **self.answer})


def run(keel: Keel, step: Callable[[PipelineCtx], Coroutine[Any, Any, Any]]) -> Any:
    ctx = PipelineCtx(bridge=keel.bridge, log=CallLog(), signal=Signal(), args=ARGS)
    return asyncio.run(step(ctx))


def test_a_call_sends_its_name_and_arguments_and_returns_the_answer() -> None:
    keel = Keel({"value": {"message_id": "m1"}})
    result = run(keel, lambda ctx: ctx.send(chat="tg:1", text="hi", about={"entity": "p_1"}))
    assert result == {"message_id": "m1"}
    assert keel.asks == [
        {
            "op": "ask",
            "id": 1,
            "seq": 1,
            "name": "send",
            "args": {"chat": "tg:1", "text": "hi", "about": {"entity": "p_1"}},
            "at": 42.0,
        }
    ]


def test_calls_are_numbered_in_order() -> None:
    keel = Keel()

    async def three(ctx: PipelineCtx) -> None:
        await asyncio.gather(
            ctx.request_approval(chat="c", text="a"),
            ctx.await_approval("card-1"),
            ctx.unbind_context(context="prospect"),
        )

    run(keel, three)
    assert [(a["seq"], a["name"]) for a in keel.asks] == [
        (1, "request_approval"),
        (2, "await_approval"),
        (3, "unbind_context"),
    ]


@pytest.mark.parametrize(
    ("answer", "error", "pattern"),
    [
        pytest.param(
            {"error": {"type": "Refused", "said": "not here", "terminal": False}},
            CallFailed,
            r"^not here$",
            id="refused",
        ),
        pytest.param(
            {"error": {"type": "TerminalError", "said": "no feature", "terminal": True}},
            TerminalError,
            r"^no feature$",
            id="terminal",
        ),
        pytest.param({"cancel": "gone"}, Cancelled, r"^gone$", id="stopped"),
    ],
)
def test_an_error_answer_is_raised_in_the_pipeline(
    answer: dict[str, Any], error: type[BaseException], pattern: str
) -> None:
    keel = Keel(answer)
    with pytest.raises(error, match=pattern):
        run(keel, lambda ctx: ctx.run_agent(agent="sdr", prompt="x"))


def test_a_refusal_names_the_call_and_its_kind() -> None:
    keel = Keel({"error": {"type": "LinkError", "said": "no such context", "terminal": False}})
    with pytest.raises(CallFailed, match="no such context") as caught:
        run(keel, lambda ctx: ctx.bind_context(context="nope"))
    assert (caught.value.call, caught.value.kind) == ("bind_context", "LinkError")


def test_after_a_stop_no_call_leaves_the_worker() -> None:
    keel = Keel({"cancel": "gone"})

    async def twice(ctx: PipelineCtx) -> None:
        with contextlib.suppress(Cancelled):
            await ctx.send(chat="c", text="a")
        await ctx.send(chat="c", text="b")

    with pytest.raises(Cancelled, match="gone"):
        run(keel, twice)
    assert len(keel.asks) == 1


def test_a_call_when_time_is_up_is_not_sent() -> None:
    def up() -> float:
        raise TimeoutError("the pipeline's time was up before this ctx call")

    keel = Keel()
    keel.bridge = Bridge(1, send=keel.send, pause=up)
    with pytest.raises(TimeoutError, match="time was up"):
        run(keel, lambda ctx: ctx.send(chat="c", text="a"))
    assert keel.asks == []


BAD = [
    pytest.param(
        lambda ctx: ctx.run_agent(agent="", prompt="x"),
        r"ctx.run_agent: agent must be a non-empty string, got ''",
        id="empty-agent",
    ),
    pytest.param(
        lambda ctx: ctx.run_agent(agent="a", prompt="x", entity=5),
        r"ctx.run_agent: entity must be a non-empty string, got int",
        id="entity-not-str",
    ),
    pytest.param(
        lambda ctx: ctx.run_agent(agent="a", prompt="x", reach="prospect"),
        r"ctx.run_agent: reach must be a list of \{'context': ..., 'entity': ...\}, got str",
        id="reach-not-list",
    ),
    pytest.param(
        lambda ctx: ctx.run_agent(agent="a", prompt="x", reach=[{"ctx": "prospect"}]),
        r"ctx.run_agent: reach\[0\] must be \{'context': ..., 'entity': ...\}, got \{'ctx': 'prospect'\}",
        id="reach-entry-key",
    ),
    pytest.param(
        lambda ctx: ctx.run_agent(agent="a", prompt="x", reach=[{"entity": "p"}]),
        r"ctx.run_agent: reach\[0\].context must be a non-empty string, got NoneType",
        id="reach-entry-no-context",
    ),
    pytest.param(
        lambda ctx: ctx.bind_context(context="c", chat=7),
        r"ctx.bind_context: chat must be a non-empty string, got int",
        id="chat-not-str",
    ),
    pytest.param(
        lambda ctx: ctx.send(chat="c", text="t", about={}),
        r"ctx.send: about must be \{'entity': key\} and/or \{'context': id\}, got \{\}",
        id="about-empty",
    ),
    pytest.param(
        lambda ctx: ctx.send(chat="c", text="t", about={"entity": ""}),
        r"ctx.send: about.entity must be a non-empty string, got ''",
        id="about-empty-key",
    ),
    pytest.param(
        lambda ctx: ctx.await_approval(None),
        r"ctx.await_approval: card must be a non-empty string, got NoneType",
        id="no-card",
    ),
]


@pytest.mark.parametrize(("step", "pattern"), BAD)
def test_wrong_arguments_are_refused_before_anything_is_sent(
    step: Callable[[PipelineCtx], Coroutine[Any, Any, Any]], pattern: str
) -> None:
    keel = Keel()
    with pytest.raises(TypeError, match=pattern):
        run(keel, step)
    assert keel.asks == []


def test_a_reach_and_an_about_are_sent_whole() -> None:
    keel = Keel()

    async def both(ctx: PipelineCtx) -> None:
        await ctx.run_agent(
            agent="a",
            prompt="",
            reach=({"context": "prospect", "entity": "p_1"}, {"context": "offer"}),
        )
        await ctx.send(chat="c", text="t", about={"context": "film", "entity": "f_9"})

    run(keel, both)
    assert keel.asks[0]["args"]["reach"] == [
        {"context": "prospect", "entity": "p_1"},
        {"context": "offer", "entity": None},
    ]
    assert keel.asks[1]["args"]["about"] == {"context": "film", "entity": "f_9"}


def test_the_run_facts_and_a_seeded_random() -> None:
    ctx = PipelineCtx(bridge=Keel().bridge, log=CallLog(), signal=Signal(), args=ARGS)
    assert (ctx.scenario, ctx.run_id) == ("outreach", "run-7")
    assert ctx.started_at == datetime(2026, 5, 1, 9, 30, tzinfo=UTC)
    again = PipelineCtx(bridge=Keel().bridge, log=CallLog(), signal=Signal(), args=ARGS)
    assert [ctx.random.random() for _ in range(3)] == [again.random.random() for _ in range(3)]


@pytest.mark.parametrize(
    ("name", "pattern"),
    [
        pytest.param("now", r"has no attribute 'now'.* use ctx\.started_at", id="now"),
        pytest.param("sned", r"has no attribute 'sned' — did you mean 'send'\?", id="typo"),
    ],
)
def test_a_missing_attribute_says_what_there_is(name: str, pattern: str) -> None:
    ctx = PipelineCtx(bridge=Keel().bridge, log=CallLog(), signal=Signal(), args=ARGS)
    with pytest.raises(AttributeError, match=pattern) as caught:
        getattr(ctx, name)
    assert re.search(r"\(it has scenario, run_id, started_at, random", str(caught.value))


def test_a_send_or_a_card_without_a_chat_leaves_it_to_the_run() -> None:
    keel = Keel()

    async def both(ctx: PipelineCtx) -> None:
        await ctx.send(text="hello")
        await ctx.request_approval(text="ok?")

    run(keel, both)
    assert [a["args"] for a in keel.asks] == [
        {"chat": None, "text": "hello", "about": None},
        {"chat": None, "text": "ok?", "about": None},
    ]
