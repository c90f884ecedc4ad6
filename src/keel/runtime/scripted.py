"""A scripted model: a fixed list of model steps, served in order, for tests and dry runs.

`ScriptedModel` is a model client itself (`complete`, and `acomplete` for an asyncio bot):
each request is recorded as the Chat Completions body an OpenAI client would have sent, and
answered with the next step — no SDK needed. `keel.models.scripted(steps)` makes one.

It can also sit behind an `httpx2.MockTransport`, so a test drives the real SDK client and
the real adapter end to end, with no network:

    scripted = ScriptedModel([ModelStep(calls=(call,)), ModelStep(text="done")])
    model = OpenAIChatModel(client=scripted.openai_client())
    ...
    assert scripted.requests[1].body["messages"][-1]["role"] == "tool"

The wire format follows the path asked for: `/chat/completions` gets a Chat Completions
answer, `/responses` a Responses answer, `/messages` an Anthropic Messages answer. Every
request body is recorded. A request past the end of the script is recorded too and answered
with a provider error (HTTP 400, never retried) saying how many steps were scripted, so the
SDK raises it in the test instead of the test hanging on or passing by luck.

A step's tool call may be a `RawToolCall`, whose arguments are sent as the exact text given
(say, broken JSON), to show what a model's malformed call does; Anthropic's API carries
arguments as an object, so there the text must be a JSON object.

The SDKs and httpx2 are imported inside the functions that need them: importing this module
does not need the `providers` extra.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from keel.assemble.values import Assembly, ModelStep, ToolCall, Transcript
from keel.errors import UsageError
from keel.payload.providers import openai_chat
from keel.runtime.models import parse_call

if TYPE_CHECKING:
    import httpx2
    from anthropic import Anthropic
    from openai import OpenAI

__all__ = ["RawToolCall", "ScriptedModel", "ScriptedRequest", "ScriptedStep"]

BASE_URL = "http://scripted.invalid"
Body = dict[str, Any]


@dataclass(frozen=True, slots=True, kw_only=True)
class RawToolCall:
    """A tool call whose arguments go on the wire as this exact text."""

    id: str
    name: str
    arguments: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedStep:
    """A scripted model step that may hold `RawToolCall`s, answered after `sleep_s`."""

    text: str = ""
    calls: tuple[ToolCall | RawToolCall, ...] = ()
    sleep_s: float = 0.0


Step = ModelStep | ScriptedStep


def _arguments(call: ToolCall | RawToolCall) -> str:
    if isinstance(call, RawToolCall):
        return call.arguments
    return json.dumps(dict(call.arguments))


def _input(call: ToolCall | RawToolCall) -> Any:
    return json.loads(call.arguments) if isinstance(call, RawToolCall) else dict(call.arguments)


@dataclass(frozen=True, slots=True, kw_only=True)
class ScriptedRequest:
    """One request the scripted model received: its path and its decoded JSON body."""

    path: str
    body: Mapping[str, Any]


class ScriptedModel:
    """A deterministic model: serves its steps in order, records what it was sent."""

    __slots__ = ("requests", "steps")

    def __init__(self, steps: Iterable[Step]) -> None:
        self.steps = tuple(steps)
        self.requests: list[ScriptedRequest] = []

    @property
    def remaining(self) -> int:
        """Steps not served yet."""
        return max(len(self.steps) - len(self.requests), 0)

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        """The next step, for the request a Chat Completions client would have sent."""
        limits = assembly.limits
        body = openai_chat(
            assembly, transcript, model=limits.name, max_output=limits.output_reserve
        )
        self.requests.append(ScriptedRequest(path="/v1/chat/completions", body=body))
        number = len(self.requests)
        if number > len(self.steps):
            raise UsageError(_past_the_end(number, len(self.steps)))
        step = self.steps[number - 1]
        if isinstance(step, ModelStep):
            return step
        if step.sleep_s > 0:
            time.sleep(step.sleep_s)
        return ModelStep(text=step.text, calls=tuple(_parsed(call) for call in step.calls))

    async def acomplete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        """`complete`, for the async loop (a scripted step's sleep blocks, as in a test)."""
        return self.complete(assembly, transcript)

    def handle(self, request: httpx2.Request) -> httpx2.Response:
        """Answer one HTTP request in the wire format its path names."""
        import httpx2

        body = json.loads(request.content or b"{}")
        path = request.url.path
        self.requests.append(ScriptedRequest(path=path, body=body))
        number = len(self.requests)
        anthropic = path.endswith("/messages")
        if number > len(self.steps):
            problem = _past_the_end(number, len(self.steps))
            return httpx2.Response(400, json=_error(problem, anthropic=anthropic))
        step = self.steps[number - 1]
        if isinstance(step, ScriptedStep) and step.sleep_s > 0:
            time.sleep(step.sleep_s)  # a slow model: what a crash in mid-request meets
        model = str(body.get("model", "scripted"))
        # A stand-in for the provider's count: about four bytes of request a token.
        read = max(1, len(request.content) // 4)
        if path.endswith("/chat/completions"):
            return httpx2.Response(200, json=chat_completion(step, number, model, read))
        if path.endswith("/responses"):
            return httpx2.Response(200, json=response(step, number, model, read))
        if anthropic:
            return httpx2.Response(200, json=anthropic_message(step, number, model, read))
        problem = f"ScriptedModel: no provider API answers at {path!r}"
        return httpx2.Response(404, json=_error(problem, anthropic=False))

    def transport(self) -> httpx2.MockTransport:
        """An httpx2 transport that answers every request from the script."""
        import httpx2

        return httpx2.MockTransport(self.handle)

    def openai_client(self) -> OpenAI:
        """An `openai.OpenAI` client wired to this script (no retries)."""
        import httpx2
        import openai

        return openai.OpenAI(
            base_url=f"{BASE_URL}/v1",
            api_key="test",
            max_retries=0,
            http_client=httpx2.Client(transport=self.transport()),
        )

    def anthropic_client(self) -> Anthropic:
        """An `anthropic.Anthropic` client wired to this script (no retries)."""
        import anthropic
        import httpx2

        return anthropic.Anthropic(
            base_url=BASE_URL,
            api_key="test",
            max_retries=0,
            http_client=httpx2.Client(transport=self.transport()),
        )


def _past_the_end(number: int, scripted: int) -> str:
    return (
        f"ScriptedModel: request {number} asked for a model step, but only "
        f"{scripted} {'was' if scripted == 1 else 'were'} scripted"
    )


def _parsed(call: ToolCall | RawToolCall) -> ToolCall:
    """A call as an adapter would read it off the wire (broken arguments become its problem)."""
    if isinstance(call, ToolCall):
        return call
    return parse_call(call.id, call.name, call.arguments)


def _written(step: Step) -> int:
    return len(step.text) // 4 + 10 * len(step.calls)


def chat_completion(step: Step, number: int, model: str, read: int = 0) -> Body:
    """A step as an OpenAI Chat Completions answer."""
    message: Body = {"role": "assistant", "content": step.text or None, "refusal": None}
    if step.calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": _arguments(call)},
            }
            for call in step.calls
        ]
    return {
        "id": f"chatcmpl-scripted-{number}",
        "object": "chat.completion",
        "created": 0,
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": "tool_calls" if step.calls else "stop",
                "logprobs": None,
            }
        ],
        "usage": {
            "prompt_tokens": read,
            "completion_tokens": _written(step),
            "total_tokens": read + _written(step),
        },
    }


def response(step: Step, number: int, model: str, read: int = 0) -> Body:
    """A step as an OpenAI Responses answer."""
    output: list[Body] = []
    if step.text:
        text = {"type": "output_text", "text": step.text, "annotations": []}
        output.append(
            {
                "type": "message",
                "id": f"msg_scripted_{number}",
                "role": "assistant",
                "status": "completed",
                "content": [text],
            }
        )
    output += [
        {
            "type": "function_call",
            "id": f"fc_scripted_{number}_{index}",
            "call_id": call.id,
            "name": call.name,
            "arguments": _arguments(call),
            "status": "completed",
        }
        for index, call in enumerate(step.calls)
    ]
    return {
        "id": f"resp_scripted_{number}",
        "object": "response",
        "created_at": 0,
        "model": model,
        "status": "completed",
        "output": output,
        "error": None,
        "incomplete_details": None,
        "instructions": None,
        "metadata": {},
        "parallel_tool_calls": True,
        "temperature": None,
        "tool_choice": "auto",
        "tools": [],
        "top_p": None,
        "usage": {
            "input_tokens": read,
            "input_tokens_details": {"cached_tokens": 0},
            "output_tokens": _written(step),
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": read + _written(step),
        },
    }


def anthropic_message(step: Step, number: int, model: str, read: int = 0) -> Body:
    """A step as an Anthropic Messages answer."""
    content: list[Body] = [{"type": "text", "text": step.text}] if step.text else []
    content += [
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)}
        for call in step.calls
    ]
    return {
        "id": f"msg_scripted_{number}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if step.calls else "end_turn",
        "stop_sequence": None,
        "usage": {"input_tokens": read, "output_tokens": _written(step)},
    }


def _error(message: str, *, anthropic: bool) -> Body:
    if anthropic:
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {
        "error": {"message": message, "type": "invalid_request_error", "param": None, "code": None}
    }
