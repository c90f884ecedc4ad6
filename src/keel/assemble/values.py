"""The model input as named sections, and the assembled turn that payloads are built from.

Every part of the input is a `Section` with an id, its text, its budget and its measured
size, so a turn that grew can be traced to the part that grew. Where a section goes in a
provider's request is its `place`:

- `system`: the stable system prompt (identity, rules, role prompt, skills, catalog) — the
  same on every turn of a role, so it sits before the prompt-cache breakpoint;
- `state`: system text that changes per turn (the time, the room's tenancy, the role's own
  state renders) — after the breakpoint;
- `tool`: a tool's description (sent as the provider's tool definitions);
- `history`: earlier messages of the conversation;
- `tail`: the attached feature contexts and the current request — the last user message,
  never the system prompt.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from keel.brain.knobs import ModelLimits
from keel.brain.specs import RiskClass

Place = Literal["system", "state", "tool", "history", "tail"]
Speaker = Literal["user", "assistant"]


@dataclass(frozen=True, slots=True, kw_only=True)
class Message:
    """One message of the conversation's history."""

    role: Speaker
    text: str


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolSpec:
    """A tool as the model sees it: name, description, JSON-schema parameters; and what it
    takes to call it: the capability a role needs, and its risk class (`safe`, `moderate`,
    `dangerous`), which decides whether a call waits for a person's approval."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=dict)
    capability: str = ""
    risk: RiskClass = "safe"


@dataclass(slots=True, kw_only=True)
class Section:
    """One named part of the model input, with its budget and measured size in tokens.

    Not frozen, unlike the other values: a turn builds dozens, and a frozen dataclass
    pays a guarded attribute write per field; nothing changes a section once built.
    """

    id: str
    place: Place
    text: str
    used_tokens: int
    budget_tokens: int | None = None
    clipped: bool = False
    warnings: tuple[str, ...] = ()
    tool: ToolSpec | None = None
    messages: tuple[Message, ...] = ()

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "text": self.text,
            "budget_tokens": self.budget_tokens,
            "used_tokens": self.used_tokens,
            "clipped": self.clipped,
            "warnings": list(self.warnings),
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Fit:
    """The fit check's verdict for one request."""

    ok: bool
    estimate: int
    window: int
    output_reserve: int
    input_allocation: int

    def to_json(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "estimate": self.estimate,
            "window": self.window,
            "output_reserve": self.output_reserve,
            "input_allocation": self.input_allocation,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class Assembly:
    """One turn's model input: its sections in order, the model's limits and the fit."""

    sections: tuple[Section, ...]
    limits: ModelLimits
    fit: Fit
    counter: str
    # What a provider request is made of, joined once from the sections when the assembly
    # is made (each payload reads them; none recomputes them):
    # the stable system prompt, the part a prompt cache keeps across turns;
    system_text: str = field(init=False, repr=False, compare=False)
    # system text that changes from turn to turn (time, tenancy, state renders);
    state_text: str = field(init=False, repr=False, compare=False)
    tools: tuple[ToolSpec, ...] = field(init=False, repr=False, compare=False)
    history: tuple[Message, ...] = field(init=False, repr=False, compare=False)
    # the last user message: attached contexts, then the current request.
    tail_text: str = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        by_place: dict[str, list[Section]] = {}
        for section in self.sections:
            by_place.setdefault(section.place, []).append(section)

        def text(place: Place) -> str:
            return "\n\n".join(s.text for s in by_place.get(place, ()) if s.text)

        tools = tuple(s.tool for s in by_place.get("tool", ()) if s.tool is not None)
        history = tuple(m for s in by_place.get("history", ()) for m in s.messages)
        for name, value in (
            ("system_text", text("system")),
            ("state_text", text("state")),
            ("tools", tools),
            ("history", history),
            ("tail_text", text("tail")),
        ):
            object.__setattr__(self, name, value)

    def place(self, place: Place) -> tuple[Section, ...]:
        return tuple(s for s in self.sections if s.place == place)


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolCall:
    """A tool call the model made in the current turn.

    `problem` says why the arguments could not be read (not JSON, not an object); the call
    then comes back to the model as an error result instead of running.
    """

    id: str
    name: str
    arguments: Mapping[str, Any] = field(default_factory=dict)
    problem: str | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Usage:
    """What the provider reported a request cost: input (cached part included), output."""

    input_tokens: int = 0
    cached_tokens: int = 0
    output_tokens: int = 0

    def to_json(self) -> dict[str, int]:
        return {
            "input_tokens": self.input_tokens,
            "cached_tokens": self.cached_tokens,
            "output_tokens": self.output_tokens,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelStep:
    """One model answer within the turn: its text, the tool calls it asked for, and what
    the provider reported the request cost (None where it reported nothing)."""

    text: str = ""
    calls: tuple[ToolCall, ...] = ()
    usage: Usage | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolResult:
    """The result of one tool call, as the model will read it."""

    call_id: str
    name: str
    content: str
    is_error: bool = False


TranscriptItem = ModelStep | ToolResult


@dataclass(frozen=True, slots=True, kw_only=True)
class Transcript:
    """The work inside the current turn (model steps, tool results), kept apart from history."""

    items: tuple[TranscriptItem, ...] = ()

    def then(self, *items: TranscriptItem) -> Transcript:
        return Transcript(items=(*self.items, *items))
