"""A run's journaled values as JSON-native data, and back.

A durable step's result is written to the workflow's journal and read back on a replay,
possibly by a newer Keel: so it is kept as plain JSON (dicts, lists, strings, numbers),
never as a pickled class. These are the values a turn's steps produce: the assembled model
input a preparation ends with, a model's step, a tool call's result.
"""

from __future__ import annotations

from typing import Any, TypeVar, get_args

from keel.assemble.values import (
    Assembly,
    Fit,
    Message,
    ModelStep,
    Place,
    Section,
    Speaker,
    ToolCall,
    ToolResult,
    ToolSpec,
    Usage,
)
from keel.brain.knobs import ModelLimits
from keel.brain.specs import RISK_CLASSES
from keel.errors import StoreError

Json = dict[str, Any]
W = TypeVar("W", bound=str)
_PLACES: tuple[Place, ...] = get_args(Place)
_SPEAKERS: tuple[Speaker, ...] = get_args(Speaker)


def assembly_json(assembly: Assembly) -> Json:
    """An assembled turn as JSON."""
    limits = assembly.limits
    return {
        "sections": [_section_json(s) for s in assembly.sections],
        "limits": {
            "name": limits.name,
            "window": limits.window,
            "output_reserve": limits.output_reserve,
            "input_allocation": limits.input_allocation,
        },
        "fit": assembly.fit.to_json(),
        "counter": assembly.counter,
    }


def assembly_of(data: Json) -> Assembly:
    """An assembled turn from its JSON."""
    return Assembly(
        sections=tuple(_section(s) for s in data["sections"]),
        limits=ModelLimits(**data["limits"]),
        fit=Fit(**data["fit"]),
        counter=data["counter"],
    )


def _section_json(section: Section) -> Json:
    tool = section.tool
    return {
        "id": section.id,
        "place": section.place,
        "text": section.text,
        "used_tokens": section.used_tokens,
        "budget_tokens": section.budget_tokens,
        "clipped": section.clipped,
        "warnings": list(section.warnings),
        "tool": None if tool is None else _tool_json(tool),
        "messages": [{"role": m.role, "text": m.text} for m in section.messages],
    }


def _section(data: Json) -> Section:
    return Section(
        id=data["id"],
        place=_word(data["place"], _PLACES, "a section's place"),
        text=data["text"],
        used_tokens=data["used_tokens"],
        budget_tokens=data["budget_tokens"],
        clipped=data["clipped"],
        warnings=tuple(data["warnings"]),
        tool=None if data["tool"] is None else _tool(data["tool"]),
        messages=tuple(
            Message(role=_word(m["role"], _SPEAKERS, "a message's speaker"), text=m["text"])
            for m in data["messages"]
        ),
    )


def _tool_json(tool: ToolSpec) -> Json:
    return {
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
        "capability": tool.capability,
        "risk": tool.risk,
    }


def _tool(data: Json) -> ToolSpec:
    return ToolSpec(
        name=data["name"],
        description=data["description"],
        parameters=data["parameters"],
        capability=data["capability"],
        risk=_word(data["risk"], RISK_CLASSES, "a tool's risk"),
    )


def step_json(step: ModelStep) -> Json:
    """A model's answer as JSON."""
    return {
        "text": step.text,
        "calls": [call_json(c) for c in step.calls],
        "usage": None if step.usage is None else step.usage.to_json(),
    }


def step_of(data: Json) -> ModelStep:
    """A model's answer from its JSON."""
    usage = data["usage"]
    return ModelStep(
        text=data["text"],
        calls=tuple(call_of(c) for c in data["calls"]),
        usage=None if usage is None else Usage(**usage),
    )


def call_json(call: ToolCall) -> Json:
    return {
        "id": call.id,
        "name": call.name,
        "arguments": dict(call.arguments),
        "problem": call.problem,
    }


def call_of(data: Json) -> ToolCall:
    return ToolCall(
        id=data["id"], name=data["name"], arguments=data["arguments"], problem=data["problem"]
    )


def result_json(result: ToolResult) -> Json:
    """A tool call's result as JSON."""
    return {
        "call_id": result.call_id,
        "name": result.name,
        "content": result.content,
        "is_error": result.is_error,
    }


def result_of(data: Json) -> ToolResult:
    """A tool call's result from its JSON."""
    return ToolResult(
        call_id=data["call_id"],
        name=data["name"],
        content=data["content"],
        is_error=data["is_error"],
    )


def _word(value: str, words: tuple[W, ...], what: str) -> W:
    for word in words:
        if value == word:
            return word
    raise StoreError(
        f"a run's journal holds {what} {value!r}, which this Keel does not know "
        f"({', '.join(words)}) — finish the run with the Keel that started it"
    )
