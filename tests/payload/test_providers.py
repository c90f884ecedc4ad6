"""Provider payloads: their layout, the cache-stable system block, and the SDKs' own checks.

Each body is validated against the SDK's request type with every TypedDict made to refuse
unknown keys and every iterable checked eagerly (pydantic's defaults ignore extra keys and
validate iterables lazily, which would let a misspelt field through), and is sent through
the real SDK client to a scripted transport that records what went over the wire.
"""

from __future__ import annotations

import copy
import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import TypeAdapter, ValidationError
from pydantic_core import SchemaValidator

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
from keel.payload.providers import (
    EMPTY_RESULT,
    OPENER,
    anthropic_messages,
    openai_chat,
    openai_responses,
)
from keel.testing import ScriptedModel

Build = Callable[..., dict[str, Any]]

LIMITS = ModelLimits(
    name="any-model", window=200_000, output_reserve=8000, input_allocation=150_000
)
LOOKUP = ToolSpec(
    name="ticket_lookup",
    description="Read one support ticket.",
    parameters={
        "type": "object",
        "properties": {"ticket": {"type": "string"}},
        "required": ("ticket",),
    },
)
OPEN = ToolSpec(name="context_open", description="Open a feature context.", parameters={})
CONTEXT_BLOCK = '<context name="ticket" entity="T-7">'


def turn(
    *,
    time: str = "Now: 2025-03-01 09:00 UTC",
    state: str = "Queue: 3 open tickets.",
    tail: str = "What is the status of T-7?",
    history: tuple[Message, ...] = (
        Message(role="user", text="Hi, I wrote about a refund."),
        Message(role="assistant", text="Yes, I have it."),
    ),
    tools: tuple[ToolSpec, ...] = (LOOKUP, OPEN),
    system: tuple[str, ...] = ("You are Nova, the support desk.", "Never promise refunds."),
) -> Assembly:
    """An assembled turn of the support role; only the named parts vary."""
    sections = [
        Section(id="sys.time", place="state", text=time, used_tokens=8),
        *(
            Section(id=f"system.{i}", place="system", text=t, used_tokens=8)
            for i, t in enumerate(system)
        ),
        *(
            Section(id=f"tool.{t.name}", place="tool", text=t.description, used_tokens=9, tool=t)
            for t in tools
        ),
        Section(id="render.queue", place="state", text=state, used_tokens=6),
        Section(id="history", place="history", text="", used_tokens=20, messages=history),
        Section(
            id="context.ticket@T-7",
            place="tail",
            text=f"{CONTEXT_BLOCK}\nOpen since Monday.\n</context>",
            used_tokens=20,
        ),
        Section(id="current", place="tail", text=tail, used_tokens=9),
    ]
    fit = Fit(
        ok=True,
        estimate=100,
        window=LIMITS.window,
        output_reserve=LIMITS.output_reserve,
        input_allocation=LIMITS.input_allocation,
    )
    return Assembly(sections=tuple(sections), limits=LIMITS, fit=fit, counter="estimate")


CALL = ToolCall(
    id="call_1", name="ticket_lookup", arguments={"ticket": "T-7", "fields": ("status",)}
)
WORK = Transcript(
    items=(
        ModelStep(text="Let me look.", calls=(CALL,)),
        ToolResult(call_id="call_1", name="ticket_lookup", content="status: open"),
    )
)

PAYLOAD_BUILDERS = [
    pytest.param(openai_chat, id="openai_chat"),
    pytest.param(openai_responses, id="openai_responses"),
    pytest.param(anthropic_messages, id="anthropic_messages"),
]
BUILDERS = [
    pytest.param(openai_chat, CompletionCreateParamsNonStreaming, id="openai_chat"),
    pytest.param(openai_responses, ResponseCreateParamsNonStreaming, id="openai_responses"),
    pytest.param(anthropic_messages, MessageCreateParamsNonStreaming, id="anthropic_messages"),
]


def build(builder: Build, assembly: Assembly, transcript: Transcript = WORK) -> dict[str, Any]:
    return builder(assembly, transcript, model="any-model", max_output=4000)


@functools.cache
def strict_validator(request_type: Any) -> SchemaValidator:
    """The SDK type's validator, with unknown keys refused and iterables checked eagerly."""
    schema = copy.deepcopy(TypeAdapter(request_type).core_schema)

    def tighten(node: object) -> None:
        if isinstance(node, dict):
            if node.get("type") == "typed-dict":
                node["extra_behavior"] = "forbid"
            elif node.get("type") == "generator":
                node["type"] = "list"
            for value in node.values():
                tighten(value)
        elif isinstance(node, list):
            for value in node:
                tighten(value)

    tighten(schema)
    return SchemaValidator(schema)


def texts(node: object) -> Iterator[str]:
    """Every string in a body, keys excepted."""
    if isinstance(node, str):
        yield node
    elif isinstance(node, dict):
        for value in node.values():
            yield from texts(value)
    elif isinstance(node, list):
        for value in node:
            yield from texts(value)


def system_parts(payload: dict[str, Any]) -> list[Any]:
    """Whatever a provider treats as system: fields and system/developer messages."""
    parts: list[Any] = [payload.get("system"), payload.get("instructions")]
    items = payload.get("messages", []) + payload.get("input", [])
    return parts + [i for i in items if i.get("role") in {"system", "developer"}]


@pytest.mark.parametrize(("builder", "request_type"), BUILDERS)
def test_each_payload_is_a_valid_sdk_request(builder: Build, request_type: object) -> None:
    payload = build(builder, turn())
    assert strict_validator(request_type).validate_python(payload, strict=True) == payload


@pytest.mark.parametrize(
    ("builder", "request_type", "break_it", "error"),
    [
        pytest.param(
            openai_chat,
            CompletionCreateParamsNonStreaming,
            lambda p: p.update(max_tokens_to_sample=5),
            "max_tokens_to_sample",
            id="chat-unknown-field",
        ),
        pytest.param(
            openai_chat,
            CompletionCreateParamsNonStreaming,
            lambda p: p["messages"][-1].pop("tool_call_id"),
            "tool_call_id",
            id="chat-tool-result-without-call-id",
        ),
        pytest.param(
            openai_chat,
            CompletionCreateParamsNonStreaming,
            lambda p: p["tools"][0].update(name="flat"),
            "name",
            id="chat-tool-not-nested-in-function",
        ),
        pytest.param(
            openai_responses,
            ResponseCreateParamsNonStreaming,
            lambda p: p["input"][-1].update(result=p["input"][-1].pop("output")),
            "output",
            id="responses-output-misnamed",
        ),
        pytest.param(
            openai_responses,
            ResponseCreateParamsNonStreaming,
            lambda p: p["tools"][0].pop("strict"),
            "strict",
            id="responses-tool-without-strict",
        ),
        pytest.param(
            anthropic_messages,
            MessageCreateParamsNonStreaming,
            lambda p: p["tools"][0].update(parameters=p["tools"][0].pop("input_schema")),
            "input_schema",
            id="anthropic-parameters-for-input-schema",
        ),
        pytest.param(
            anthropic_messages,
            MessageCreateParamsNonStreaming,
            lambda p: p["system"][0].update(cache_control={"type": "forever"}),
            "ephemeral",
            id="anthropic-bad-cache-control",
        ),
        pytest.param(
            anthropic_messages,
            MessageCreateParamsNonStreaming,
            lambda p: p["messages"][-1].update(role="tool"),
            "role",
            id="anthropic-tool-role",
        ),
    ],
)
def test_a_wrong_field_or_shape_fails_validation(
    builder: Build, request_type: object, break_it: Callable[[dict[str, Any]], object], error: str
) -> None:
    payload = build(builder, turn())
    break_it(payload)
    with pytest.raises(ValidationError, match=error):
        strict_validator(request_type).validate_python(payload, strict=True)


def test_the_sdk_types_alone_would_let_a_misspelt_field_through() -> None:
    payload = build(openai_chat, turn()) | {"max_completion_token": 5}
    TypeAdapter(CompletionCreateParamsNonStreaming).validate_python(payload)
    with pytest.raises(ValidationError, match="max_completion_token"):
        strict_validator(CompletionCreateParamsNonStreaming).validate_python(payload, strict=True)


@pytest.mark.parametrize(
    ("builder", "send", "path"),
    [
        pytest.param(
            openai_chat,
            lambda s, p: s.openai_client().chat.completions.create(**p),
            "/v1/chat/completions",
            id="openai_chat",
        ),
        pytest.param(
            openai_responses,
            lambda s, p: s.openai_client().responses.create(**p),
            "/v1/responses",
            id="openai_responses",
        ),
        pytest.param(
            anthropic_messages,
            lambda s, p: s.anthropic_client().messages.create(**p),
            "/v1/messages",
            id="anthropic_messages",
        ),
    ],
)
def test_the_sdk_sends_the_payload_unchanged(
    builder: Build, send: Callable[[ScriptedModel, dict[str, Any]], object], path: str
) -> None:
    scripted = ScriptedModel([ModelStep(text="It is open.")])
    payload = build(builder, turn())
    send(scripted, payload)
    (request,) = scripted.requests
    assert request.path == path
    assert request.body == payload


@pytest.mark.parametrize("builder", PAYLOAD_BUILDERS)
def test_same_input_gives_byte_identical_json(builder: Build) -> None:
    first = json.dumps(build(builder, turn()), ensure_ascii=False)
    again = json.dumps(build(builder, turn()), ensure_ascii=False)
    assert first.encode() == again.encode()


@pytest.mark.parametrize("builder", PAYLOAD_BUILDERS)
def test_feature_contexts_never_reach_a_system_field(builder: Build) -> None:
    payload = build(builder, turn())
    assert not any(CONTEXT_BLOCK in text for text in texts(system_parts(payload)))
    assert sum(CONTEXT_BLOCK in text for text in texts(payload)) == 1


def test_the_stable_system_block_survives_a_new_turn() -> None:
    monday = turn()
    tuesday = turn(
        time="Now: 2025-03-02 14:30 UTC", state="Queue: 5 open tickets.", tail="And T-9?"
    )

    chat = [build(openai_chat, a, Transcript()) for a in (monday, tuesday)]
    assert (
        chat[0]["messages"][0]
        == chat[1]["messages"][0]
        == {"role": "system", "content": monday.system_text}
    )
    assert chat[0]["messages"][1] != chat[1]["messages"][1]
    assert chat[0]["tools"] == chat[1]["tools"]

    responses = [build(openai_responses, a, Transcript()) for a in (monday, tuesday)]
    assert responses[0]["instructions"] == responses[1]["instructions"] == monday.system_text
    assert responses[0]["tools"] == responses[1]["tools"]

    anthropic = [build(anthropic_messages, a, Transcript()) for a in (monday, tuesday)]
    stable = [json.dumps(p["system"][0]) for p in anthropic]
    assert stable[0] == stable[1]
    assert anthropic[0]["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert anthropic[0]["system"][1] != anthropic[1]["system"][1]
    assert json.dumps(anthropic[0]["tools"]) == json.dumps(anthropic[1]["tools"])


def test_openai_chat_layout() -> None:
    payload = build(openai_chat, turn(tools=(OPEN,)))
    assembly = turn()
    assert payload == {
        "model": "any-model",
        "messages": [
            {
                "role": "system",
                "content": "You are Nova, the support desk.\n\nNever promise refunds.",
            },
            {"role": "system", "content": "Now: 2025-03-01 09:00 UTC\n\nQueue: 3 open tickets."},
            {"role": "user", "content": "Hi, I wrote about a refund."},
            {"role": "assistant", "content": "Yes, I have it."},
            {"role": "user", "content": assembly.tail_text},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_1",
                        "type": "function",
                        "function": {
                            "name": "ticket_lookup",
                            "arguments": '{"ticket":"T-7","fields":["status"]}',
                        },
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call_1", "content": "status: open"},
        ],
        "tools": [
            {
                "type": "function",
                "function": {
                    "name": "context_open",
                    "description": "Open a feature context.",
                    "parameters": {"type": "object", "properties": {}},
                },
            }
        ],
        "max_completion_tokens": 4000,
    }


def test_openai_responses_layout() -> None:
    payload = build(openai_responses, turn(tools=(LOOKUP,)))
    assert payload["instructions"] == "You are Nova, the support desk.\n\nNever promise refunds."
    assert payload["input"] == [
        {
            "type": "message",
            "role": "developer",
            "content": "Now: 2025-03-01 09:00 UTC\n\nQueue: 3 open tickets.",
        },
        {"type": "message", "role": "user", "content": "Hi, I wrote about a refund."},
        {"type": "message", "role": "assistant", "content": "Yes, I have it."},
        {"type": "message", "role": "user", "content": turn().tail_text},
        {"type": "message", "role": "assistant", "content": "Let me look."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "ticket_lookup",
            "arguments": '{"ticket":"T-7","fields":["status"]}',
        },
        {"type": "function_call_output", "call_id": "call_1", "output": "status: open"},
    ]
    assert payload["tools"] == [
        {
            "type": "function",
            "name": "ticket_lookup",
            "description": "Read one support ticket.",
            "parameters": {
                "type": "object",
                "properties": {"ticket": {"type": "string"}},
                "required": ["ticket"],
            },
            "strict": False,
        }
    ]
    assert payload["max_output_tokens"] == 4000


def test_anthropic_messages_alternate_and_open_with_the_user() -> None:
    history = (
        Message(role="assistant", text="Reminder: your invoice is due."),
        Message(role="assistant", text=""),
        Message(role="user", text="Paid it."),
        Message(role="user", text="Yesterday."),
    )
    work = WORK.then(ModelStep(), ModelStep(text="", calls=()))
    payload = build(anthropic_messages, turn(history=history), work)
    roles = [m["role"] for m in payload["messages"]]
    assert roles == ["user", "assistant", "user", "assistant", "user"]
    assert payload["messages"][0]["content"] == [{"type": "text", "text": OPENER}]
    assert [b["text"] for b in payload["messages"][2]["content"]] == [
        "Paid it.",
        "Yesterday.",
        turn().tail_text,
    ]
    assert payload["messages"][3]["content"][1] == {
        "type": "tool_use",
        "id": "call_1",
        "name": "ticket_lookup",
        "input": {"ticket": "T-7", "fields": ["status"]},
    }
    assert payload["messages"][4]["content"] == [
        {"type": "tool_result", "tool_use_id": "call_1", "content": "status: open"}
    ]
    assert all(m["content"] for m in payload["messages"])
    assert all(text for text in texts(payload))


def test_anthropic_cache_breakpoints_close_the_tools_and_the_stable_system() -> None:
    payload = build(anthropic_messages, turn())
    assert [("cache_control" in b) for b in payload["system"]] == [True, False]
    assert [("cache_control" in t) for t in payload["tools"]] == [False, True]
    assert payload["tools"][1]["input_schema"] == {"type": "object", "properties": {}}
    assert payload["max_tokens"] == 4000


@pytest.mark.parametrize(("builder", "request_type"), BUILDERS)
def test_empty_parts_are_left_out(builder: Build, request_type: object) -> None:
    bare = turn(time="", state="", history=(Message(role="user", text=""),), tools=())
    payload = build(builder, bare, Transcript())
    assert "tools" not in payload
    assert all(text for text in texts(payload))
    assert len([p for p in system_parts(payload) if p]) == 1
    strict_validator(request_type).validate_python(payload, strict=True)


def test_tool_results_are_never_empty_and_say_when_they_failed() -> None:
    work = Transcript(
        items=(
            ModelStep(calls=(CALL,)),
            ToolResult(call_id="call_1", name="ticket_lookup", content=""),
            ModelStep(calls=(ToolCall(id="call_2", name="context_open", arguments={}),)),
            ToolResult(
                call_id="call_2",
                name="context_open",
                content="refused: no such context",
                is_error=True,
            ),
        )
    )
    chat = build(openai_chat, turn(), work)["messages"]
    assert [m["content"] for m in chat if m["role"] == "tool"] == [
        EMPTY_RESULT,
        "Error: refused: no such context",
    ]
    assert "content" not in chat[-2]
    assert chat[-2]["tool_calls"][0]["function"]["arguments"] == "{}"
    responses = build(openai_responses, turn(), work)["input"]
    assert [i["output"] for i in responses if i["type"] == "function_call_output"] == [
        EMPTY_RESULT,
        "Error: refused: no such context",
    ]
    anthropic = build(anthropic_messages, turn(), work)["messages"]
    assert anthropic[-1]["content"] == [
        {
            "type": "tool_result",
            "tool_use_id": "call_2",
            "content": "refused: no such context",
            "is_error": True,
        }
    ]
    assert anthropic[-3]["content"][0]["content"] == EMPTY_RESULT
