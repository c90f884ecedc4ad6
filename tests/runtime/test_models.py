"""Model adapters: a scripted two-step exchange through each real SDK client, no network."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import anthropic
import httpx2
import openai
import pytest

from keel.assemble.values import (
    Assembly,
    Fit,
    Message,
    ModelStep,
    Section,
    ToolCall,
    ToolResult,
    ToolSpec,
    Transcript,
)
from keel.brain.knobs import ModelLimits
from keel.errors import UsageError
from keel.payload.providers import anthropic_messages, openai_chat, openai_responses
from keel.runtime.models import AnthropicModel, ModelClient, OpenAIChatModel, OpenAIResponsesModel
from keel.testing import ScriptedModel, chat_completion

LIMITS = ModelLimits(
    name="support-model", window=100_000, output_reserve=2000, input_allocation=80_000
)
LOOKUP = ToolSpec(
    name="ticket_lookup",
    description="Read one support ticket.",
    parameters={"type": "object", "properties": {"ticket": {"type": "string"}}},
)
CALL = ToolCall(
    id="call_1", name="ticket_lookup", arguments={"ticket": "T-7", "fields": ["status"]}
)
SCRIPT = (ModelStep(text="Let me look.", calls=(CALL,)), ModelStep(text="T-7 is open."))

Adapter = Callable[[ScriptedModel], ModelClient]
Build = Callable[..., dict[str, Any]]

ADAPTERS = [
    pytest.param(
        lambda s: OpenAIChatModel(client=s.openai_client()), openai_chat, id="openai_chat"
    ),
    pytest.param(
        lambda s: OpenAIResponsesModel(client=s.openai_client()),
        openai_responses,
        id="openai_responses",
    ),
    pytest.param(
        lambda s: AnthropicModel(client=s.anthropic_client()), anthropic_messages, id="anthropic"
    ),
]


def turn() -> Assembly:
    sections = (
        Section(
            id="identity", place="system", text="You are Nova, the support desk.", used_tokens=8
        ),
        Section(id="sys.time", place="state", text="Now: 2025-03-01 09:00 UTC", used_tokens=8),
        Section(id="tool.ticket_lookup", place="tool", text="", used_tokens=9, tool=LOOKUP),
        Section(
            id="history",
            place="history",
            text="",
            used_tokens=9,
            messages=(Message(role="user", text="Hello"), Message(role="assistant", text="Hi!")),
        ),
        Section(id="current", place="tail", text="Is T-7 still open?", used_tokens=6),
    )
    fit = Fit(
        ok=True,
        estimate=50,
        window=LIMITS.window,
        output_reserve=LIMITS.output_reserve,
        input_allocation=LIMITS.input_allocation,
    )
    return Assembly(sections=sections, limits=LIMITS, fit=fit, counter="estimate")


@pytest.mark.parametrize(("adapter", "build"), ADAPTERS)
def test_a_tool_call_then_a_final_answer(adapter: Adapter, build: Build) -> None:
    scripted = ScriptedModel(SCRIPT)
    model = adapter(scripted)
    assembly = turn()

    first = model.complete(assembly, Transcript())
    assert (first.text, first.calls) == (SCRIPT[0].text, SCRIPT[0].calls)
    assert first.usage is not None
    assert first.usage.input_tokens > 0
    work = Transcript().then(
        first, ToolResult(call_id="call_1", name="ticket_lookup", content="status: open")
    )
    second = model.complete(assembly, work)
    assert (second.text, second.calls) == (SCRIPT[1].text, SCRIPT[1].calls)
    assert second.usage is not None
    assert second.usage.input_tokens > first.usage.input_tokens, "the work done grows it"

    assert scripted.remaining == 0
    sent = [r.body for r in scripted.requests]
    assert sent == [
        build(assembly, Transcript(), model="support-model", max_output=2000),
        build(assembly, work, model="support-model", max_output=2000),
    ]
    assert "status: open" not in json.dumps(sent[0])
    assert "status: open" in json.dumps(sent[1])


@pytest.mark.parametrize(
    ("adapter", "error"),
    [
        pytest.param(ADAPTERS[0].values[0], openai.BadRequestError, id="openai_chat"),
        pytest.param(ADAPTERS[1].values[0], openai.BadRequestError, id="openai_responses"),
        pytest.param(ADAPTERS[2].values[0], anthropic.BadRequestError, id="anthropic"),
    ],
)
def test_asking_past_the_script_fails_loudly(adapter: Adapter, error: type[Exception]) -> None:
    scripted = ScriptedModel(SCRIPT[1:])
    model = adapter(scripted)
    model.complete(turn(), Transcript())
    with pytest.raises(error, match="request 2 asked for a model step, but only 1 was scripted"):
        model.complete(turn(), Transcript())
    assert len(scripted.requests) == 2


def test_model_and_output_cap_come_from_the_chain_unless_given() -> None:
    scripted = ScriptedModel([ModelStep(text="a"), ModelStep(text="b")])
    client = scripted.openai_client()
    OpenAIChatModel(client=client).complete(turn(), Transcript())
    OpenAIChatModel(client=client, model="other", max_output=500).complete(turn(), Transcript())
    sent = [(r.body["model"], r.body["max_completion_tokens"]) for r in scripted.requests]
    assert sent == [("support-model", 2000), ("other", 500)]


def test_an_output_cap_over_the_reserve_is_refused_before_any_call() -> None:
    scripted = ScriptedModel([ModelStep(text="a")])
    model = AnthropicModel(client=scripted.anthropic_client(), max_output=4000)
    with pytest.raises(UsageError, match="max_output 4000 is over the output reserve of 2000"):
        model.complete(turn(), Transcript())
    assert scripted.requests == []


@pytest.mark.parametrize(
    ("raw", "error"),
    [
        pytest.param('{"ticket": ', "not JSON", id="broken"),
        pytest.param('["T-7"]', "not a JSON object", id="not-an-object"),
    ],
)
def test_tool_arguments_that_are_not_a_json_object_become_the_calls_problem(
    raw: str, error: str
) -> None:
    def answer(_request: httpx2.Request) -> httpx2.Response:
        body = chat_completion(ModelStep(calls=(CALL,)), 1, "support-model")
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = raw
        return httpx2.Response(200, json=body)

    client = openai.OpenAI(
        base_url="http://scripted.invalid/v1",
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    step = OpenAIChatModel(client=client).complete(turn(), Transcript())
    (call,) = step.calls
    assert call.name == "ticket_lookup"
    assert call.arguments == {}
    assert call.problem is not None
    assert call.problem.startswith(f"the arguments are {error}")


def test_empty_arguments_mean_none() -> None:
    def answer(_request: httpx2.Request) -> httpx2.Response:
        body = chat_completion(ModelStep(calls=(CALL,)), 1, "support-model")
        body["choices"][0]["message"]["tool_calls"][0]["function"]["arguments"] = ""
        return httpx2.Response(200, json=body)

    client = openai.OpenAI(
        base_url="http://scripted.invalid/v1",
        api_key="test",
        max_retries=0,
        http_client=httpx2.Client(transport=httpx2.MockTransport(answer)),
    )
    step = OpenAIChatModel(client=client).complete(turn(), Transcript())
    assert step.calls == (ToolCall(id="call_1", name="ticket_lookup", arguments={}),)


def test_keel_never_imports_an_sdk_on_its_own() -> None:
    code = (
        "import sys, keel, keel.testing, keel.runtime.models, keel.payload.providers\n"
        "loaded = {m.split('.')[0] for m in sys.modules} & {'openai', 'anthropic', 'httpx2'}\n"
        "assert not loaded, loaded\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)
