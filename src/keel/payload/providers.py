"""Provider request bodies, built from an assembled turn and the turn's transcript.

Each function maps an `Assembly` (the turn's sections) and a `Transcript` (the model steps
and tool results of this turn so far) to the JSON body one provider API takes, as plain
dicts and lists. No SDK is imported here: the bodies can be checked, journaled and compared
byte for byte, and the adapters in `keel.runtime.models` hand them to an SDK client as is.

Rules every provider shares:

- The stable system text (sections placed `system`) goes first and alone, so its bytes are
  the same on every turn of a role and a provider's prompt cache keeps it. System text that
  changes per turn (place `state`: the time, tenancy, state renders) comes after it.
- Attached feature contexts and the current request (place `tail`) form the last user
  message before the transcript — never part of a system field.
- No empty message, empty text block or empty tool result is sent.
- The same input gives the same body: keys and items are in a fixed order.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal

from keel.assemble.values import Assembly, ToolCall, ToolResult, ToolSpec, Transcript

Payload = dict[str, Any]
Part = dict[str, Any]  # one JSON object inside a body (a message, a content block)

EMPTY_RESULT = "(the tool returned no output)"
"""Sent in place of an empty tool result: every call needs an answer, and none may be empty."""

OPENER = "(the conversation so far)"
"""Opens an Anthropic request whose history starts with the assistant (say, a bot's
proactive message): that API wants the user to speak first."""

_EMPTY_SCHEMA: Mapping[str, Any] = {"type": "object", "properties": {}}
_CACHE_POINT: Mapping[str, str] = {"type": "ephemeral"}


def openai_chat(
    assembly: Assembly, transcript: Transcript, *, model: str, max_output: int
) -> Payload:
    """An OpenAI Chat Completions request (`POST /chat/completions`)."""
    messages: list[Part] = [
        {"role": "system", "content": text}
        for text in (assembly.system_text, assembly.state_text)
        if text
    ]
    messages += [{"role": m.role, "content": m.text} for m in assembly.history if m.text]
    if assembly.tail_text:
        messages.append({"role": "user", "content": assembly.tail_text})
    for item in transcript.items:
        if isinstance(item, ToolResult):
            messages.append(
                {"role": "tool", "tool_call_id": item.call_id, "content": _result_text(item)}
            )
            continue
        step: Part = {"role": "assistant"}
        if item.text:
            step["content"] = item.text
        if item.calls:
            step["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": _arguments_json(call)},
                }
                for call in item.calls
            ]
        if len(step) > 1:
            messages.append(step)
    payload: Payload = {"model": model, "messages": messages}
    if assembly.tools:
        payload["tools"] = [
            {"type": "function", "function": _function(tool)} for tool in assembly.tools
        ]
    payload["max_completion_tokens"] = max_output
    return payload


def openai_responses(
    assembly: Assembly, transcript: Transcript, *, model: str, max_output: int
) -> Payload:
    """An OpenAI Responses request (`POST /responses`); the stable text is `instructions`."""
    items: list[Part] = []
    if assembly.state_text:
        items.append(_response_message("developer", assembly.state_text))
    items += [_response_message(m.role, m.text) for m in assembly.history if m.text]
    if assembly.tail_text:
        items.append(_response_message("user", assembly.tail_text))
    for item in transcript.items:
        if isinstance(item, ToolResult):
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": item.call_id,
                    "output": _result_text(item),
                }
            )
            continue
        if item.text:
            items.append(_response_message("assistant", item.text))
        items += [
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": _arguments_json(call),
            }
            for call in item.calls
        ]
    payload: Payload = {"model": model}
    if assembly.system_text:
        payload["instructions"] = assembly.system_text
    payload["input"] = items
    if assembly.tools:
        payload["tools"] = [
            {"type": "function", **_function(tool), "strict": False} for tool in assembly.tools
        ]
    payload["max_output_tokens"] = max_output
    return payload


def anthropic_messages(
    assembly: Assembly, transcript: Transcript, *, model: str, max_output: int
) -> Payload:
    """An Anthropic Messages request (`POST /v1/messages`), with two cache breakpoints.

    One breakpoint closes the tool definitions, one the stable system block: the provider
    caches tools, then system, then messages, so both prefixes are reused on the next turn
    of the role while the per-turn system block after them is read fresh.
    """
    turns = _Turns()
    for message in assembly.history:
        turns.add(message.role, _text_blocks(message.text))
    turns.add("user", _text_blocks(assembly.tail_text))
    for item in transcript.items:
        if isinstance(item, ToolResult):
            result: Part = {
                "type": "tool_result",
                "tool_use_id": item.call_id,
                "content": _result_text(item, prefix_error=False),
            }
            if item.is_error:
                result["is_error"] = True
            turns.add("user", [result])
            continue
        uses = [
            {"type": "tool_use", "id": c.id, "name": c.name, "input": _plain(c.arguments)}
            for c in item.calls
        ]
        turns.add("assistant", [*_text_blocks(item.text), *uses])

    payload: Payload = {"model": model, "max_tokens": max_output}
    system: list[Part] = []
    if assembly.system_text:
        system.append(
            {"type": "text", "text": assembly.system_text, "cache_control": dict(_CACHE_POINT)}
        )
    system += _text_blocks(assembly.state_text)
    if system:
        payload["system"] = system
    payload["messages"] = turns.messages()
    if assembly.tools:
        tools = [_anthropic_tool(tool) for tool in assembly.tools]
        tools[-1]["cache_control"] = dict(_CACHE_POINT)
        payload["tools"] = tools
    return payload


class _Turns:
    """Anthropic messages being built: roles alternate, the user speaks first."""

    __slots__ = ("_turns",)

    def __init__(self) -> None:
        self._turns: list[tuple[str, list[Part]]] = []

    def add(self, role: str, blocks: Sequence[Part]) -> None:
        if not blocks:
            return
        if self._turns and self._turns[-1][0] == role:
            self._turns[-1][1].extend(blocks)
        else:
            self._turns.append((role, list(blocks)))

    def messages(self) -> list[Part]:
        turns = self._turns
        if turns and turns[0][0] == "assistant":
            turns = [("user", _text_blocks(OPENER)), *turns]
        return [{"role": role, "content": blocks} for role, blocks in turns]


def _text_blocks(text: str) -> list[Part]:
    return [{"type": "text", "text": text}] if text else []


def _response_message(role: str, text: str) -> Part:
    return {"type": "message", "role": role, "content": text}


def _function(tool: ToolSpec) -> Part:
    function: Part = {"name": tool.name}
    if tool.description:
        function["description"] = tool.description
    function["parameters"] = _schema(tool)
    return function


def _anthropic_tool(tool: ToolSpec) -> Part:
    definition: Part = {"name": tool.name}
    if tool.description:
        definition["description"] = tool.description
    definition["input_schema"] = _schema(tool)
    return definition


def _schema(tool: ToolSpec) -> dict[str, Any]:
    return _plain(tool.parameters or _EMPTY_SCHEMA)


def _result_text(result: ToolResult, *, prefix_error: bool = True) -> str:
    # Chat and Responses have no error flag on a tool result; the text has to say it.
    text = result.content or EMPTY_RESULT
    return f"Error: {text}" if result.is_error and prefix_error else text


def _arguments_json(call: ToolCall) -> str:
    return json.dumps(_plain(call.arguments), ensure_ascii=False, separators=(",", ":"))


def _plain(mapping: Mapping[str, Any]) -> dict[str, Any]:
    """A JSON-ready copy: nested mappings become dicts and tuples lists, so the body equals
    its own JSON round trip and never shares mutable state with the frozen specs."""
    return {str(key): _plain_value(value) for key, value in mapping.items()}


def _plain_value(value: Any) -> Any:
    if isinstance(value, Mapping):
        return _plain(value)
    if isinstance(value, list | tuple):
        return [_plain_value(v) for v in value]
    return value


PayloadFormat = Literal["openai", "responses", "anthropic"]
Build = Callable[..., Payload]
PAYLOADS: Mapping[PayloadFormat, Build] = {
    "openai": openai_chat,
    "responses": openai_responses,
    "anthropic": anthropic_messages,
}


def first_request(assembly: Assembly, fmt: PayloadFormat) -> Payload:
    """The provider request a turn opens with, as `keel turn --format` prints it."""
    return PAYLOADS[fmt](
        assembly,
        Transcript(),
        model=assembly.limits.name,
        max_output=assembly.limits.output_reserve,
    )
