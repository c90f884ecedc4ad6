"""Model clients: one request to a provider, from an assembled turn to the model's step.

`ModelClient` is what the agent loop calls: `complete(assembly, transcript)` sends the
turn's input plus the work done so far this turn, and returns the model's next step — its
text and the tool calls it asks for, arguments parsed from JSON.

The three adapters build the body with `keel.payload.providers` and send it through the
official SDK client they are given, so retries, auth and errors stay the SDK's. Keel never
imports an SDK itself: the types below are for the type checker only, and a caller who
builds an adapter has already imported the SDK to make its client. `import keel` works
without the `providers` extra installed.

Each adapter has an async twin (`AsyncOpenAIChatModel`, `AsyncAnthropicModel`) over the
SDK's async client, whose `acomplete` awaits the request: an asyncio bot's turn
(`Engine.aturn`) waits on the model without holding a thread. Both read the answer the same
way. `keel.models` picks the right one for the client it is given.

The model name defaults to the chain's declared name and the output cap to its output
reserve: the fit check kept exactly that room for the answer, so asking for more could
overrun the window it checked.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Protocol, runtime_checkable

from keel.assemble.values import Assembly, ModelStep, ToolCall, Transcript, Usage
from keel.errors import UsageError
from keel.payload.providers import anthropic_messages, openai_chat, openai_responses

if TYPE_CHECKING:
    from anthropic import Anthropic, AsyncAnthropic
    from anthropic.types import Message
    from openai import AsyncOpenAI, OpenAI
    from openai.types.chat import ChatCompletion
    from openai.types.responses import Response

Build = Callable[..., dict[str, Any]]


class ModelClient(Protocol):
    """Anything that answers one request of a turn with the model's next step."""

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep: ...


@runtime_checkable
class AsyncModelClient(Protocol):
    """A model client whose request is awaited: what an asyncio bot's turn calls."""

    async def acomplete(self, assembly: Assembly, transcript: Transcript) -> ModelStep: ...


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIChatModel:
    """OpenAI Chat Completions (or any server that speaks it) through `openai.OpenAI`."""

    client: OpenAI
    model: str | None = None
    max_output: int | None = None

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        payload = _payload(openai_chat, assembly, transcript, self.model, self.max_output)
        completion: ChatCompletion = self.client.chat.completions.create(**payload)
        return _chat_step(completion)


@dataclass(frozen=True, slots=True, kw_only=True)
class AsyncOpenAIChatModel:
    """`OpenAIChatModel` through `openai.AsyncOpenAI`: the request is awaited."""

    client: AsyncOpenAI
    model: str | None = None
    max_output: int | None = None

    async def acomplete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        payload = _payload(openai_chat, assembly, transcript, self.model, self.max_output)
        completion: ChatCompletion = await self.client.chat.completions.create(**payload)
        return _chat_step(completion)


def _chat_step(completion: ChatCompletion) -> ModelStep:
    message = completion.choices[0].message
    calls = tuple(
        parse_call(call.id, call.function.name, call.function.arguments)
        for call in message.tool_calls or ()
        if call.type == "function"
    )
    usage = completion.usage
    return ModelStep(
        text=message.content or message.refusal or "",
        calls=calls,
        usage=None
        if usage is None
        else Usage(
            input_tokens=usage.prompt_tokens,
            cached_tokens=_cached(usage.prompt_tokens_details),
            output_tokens=usage.completion_tokens,
        ),
    )


@dataclass(frozen=True, slots=True, kw_only=True)
class OpenAIResponsesModel:
    """OpenAI Responses through `openai.OpenAI`; stateless (no `previous_response_id`)."""

    client: OpenAI
    model: str | None = None
    max_output: int | None = None

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        payload = _payload(openai_responses, assembly, transcript, self.model, self.max_output)
        response: Response = self.client.responses.create(**payload)
        texts: list[str] = []
        calls: list[ToolCall] = []
        for item in response.output:
            if item.type == "message":
                texts += (p.text if p.type == "output_text" else p.refusal for p in item.content)
            elif item.type == "function_call":
                calls.append(parse_call(item.call_id, item.name, item.arguments))
        usage = response.usage
        return ModelStep(
            text="".join(texts),
            calls=tuple(calls),
            usage=None
            if usage is None
            else Usage(
                input_tokens=usage.input_tokens,
                cached_tokens=_cached(usage.input_tokens_details),
                output_tokens=usage.output_tokens,
            ),
        )


@dataclass(frozen=True, slots=True, kw_only=True)
class AnthropicModel:
    """Anthropic Messages through `anthropic.Anthropic`.

    The SDK refuses a non-streaming request whose `max_tokens` could take over ten minutes
    unless the client was given its own timeout; give the client one for large reserves.
    """

    client: Anthropic
    model: str | None = None
    max_output: int | None = None

    def complete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        payload = _payload(anthropic_messages, assembly, transcript, self.model, self.max_output)
        message: Message = self.client.messages.create(**payload)
        return _anthropic_step(message)


@dataclass(frozen=True, slots=True, kw_only=True)
class AsyncAnthropicModel:
    """`AnthropicModel` through `anthropic.AsyncAnthropic`: the request is awaited."""

    client: AsyncAnthropic
    model: str | None = None
    max_output: int | None = None

    async def acomplete(self, assembly: Assembly, transcript: Transcript) -> ModelStep:
        payload = _payload(anthropic_messages, assembly, transcript, self.model, self.max_output)
        message: Message = await self.client.messages.create(**payload)
        return _anthropic_step(message)


def _anthropic_step(message: Message) -> ModelStep:
    texts: list[str] = []
    calls: list[ToolCall] = []
    for block in message.content:
        if block.type == "text":
            texts.append(block.text)
        elif block.type == "tool_use":
            calls.append(ToolCall(id=block.id, name=block.name, arguments=dict(block.input)))
    usage = message.usage
    read = usage.cache_read_input_tokens or 0
    written = usage.cache_creation_input_tokens or 0
    return ModelStep(
        text="".join(texts),
        calls=tuple(calls),
        # Anthropic counts cached and freshly cached input apart from `input_tokens`.
        usage=Usage(
            input_tokens=usage.input_tokens + read + written,
            cached_tokens=read,
            output_tokens=usage.output_tokens,
        ),
    )


def _payload(
    build: Build,
    assembly: Assembly,
    transcript: Transcript,
    model: str | None,
    max_output: int | None,
) -> dict[str, Any]:
    limits = assembly.limits
    if max_output is not None and max_output > limits.output_reserve:
        raise UsageError(
            f"max_output {max_output} is over the output reserve of {limits.output_reserve} "
            f"the fit check kept for model {limits.name!r} — lower max_output or raise "
            "model.output_reserve in the role's frontmatter or MANIFEST"
        )
    return build(
        assembly,
        transcript,
        model=model or limits.name,
        max_output=max_output if max_output is not None else limits.output_reserve,
    )


def _cached(details: Any) -> int:
    """The cached part of the input, where the provider's usage details report it."""
    return int(getattr(details, "cached_tokens", 0) or 0)


def parse_call(call_id: str, name: str, raw: str) -> ToolCall:
    """A tool call from its JSON arguments; arguments that cannot be read become its
    `problem`, answered as an error result, so a malformed call never aborts the turn."""
    if not raw.strip():
        return ToolCall(id=call_id, name=name)
    try:
        parsed = json.loads(raw)
    except json.JSONDecodeError as err:
        problem = f"the arguments are not JSON ({err.msg} at char {err.pos}): {raw[:200]!r}"
        return ToolCall(id=call_id, name=name, problem=problem)
    if not isinstance(parsed, dict):
        problem = f"the arguments are not a JSON object: {raw[:200]!r}"
        return ToolCall(id=call_id, name=name, problem=problem)
    return ToolCall(id=call_id, name=name, arguments=parsed)
