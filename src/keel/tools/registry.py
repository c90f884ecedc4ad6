"""The tool registry: every agent tool, defined once, found by name.

A `Tool` is one object: what the model sees (name, description, JSON-schema parameters),
what calling it takes (the capability a role must hold, the risk class that decides
whether a person must approve), and the function that runs it. The registry is the only
place a tool is looked up:

- assembly shows a role the tools whose capability it holds (`Registry.for_role`);
- the agent loop checks each call here again (`Registry.check`): an unknown name, a role
  without the capability, arguments that were not JSON or do not match the schema are all
  refused with a reason the model can act on, and never run another tool's code.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from functools import lru_cache
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from keel.assemble.values import ToolCall, ToolSpec
from keel.brain.document import is_utf8
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.code.runner import CodeRunner
from keel.errors import Refused, UsageError
from keel.link.values import TurnRequest
from keel.store import Tx
from keel.store.store import Store

if TYPE_CHECKING:
    from jsonschema.protocols import Validator


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolContext:
    """What a tool runs against: the brain, the turn's request and role, a transaction."""

    brain: Brain
    tx: Tx
    request: TurnRequest
    role: RoleSpec
    # The brain's code runner, for a tool that runs brain code (context_open's render).
    code: CodeRunner | None = None
    # Each capability's risk classes in the registry that runs the tool (doctor_check's).
    risks: Mapping[str, frozenset[str]] = field(default_factory=dict)


# A tool's function: the validated arguments in, the text the model reads out; `Refused`
# (or any `KeelError`) is the model's error result.
Run = Callable[[ToolContext, Mapping[str, Any]], str]
# A tool's preview: what a call would do, as a person approving it reads it, checked as the
# call itself would be at execution (`Refused` when it would be refused) — before a card
# is posted, so a call that cannot run never asks anyone. Its transaction only reads.
Preview = Callable[[ToolContext, Mapping[str, Any]], str]


@dataclass(frozen=True, slots=True, kw_only=True)
class Tool(ToolSpec):
    """One agent tool: its spec (as assembly shows it) and the function that runs it."""

    run: Run
    preview: Preview | None = None


class Registry:
    """Tools by name; a name is registered once."""

    __slots__ = ("_tools", "_validators", "risks", "tools_for")

    def __init__(self, tools: Iterable[Tool]) -> None:
        self._validators: dict[str, Validator] = {}
        # `for_role`, worked out once per role: a role's tools are the same on every turn
        # (a role is a value of its brain snapshot; an edited one is another key).
        self.tools_for: Callable[[RoleSpec], tuple[ToolSpec, ...]] = lru_cache(maxsize=256)(
            self.for_role
        )
        self._tools: dict[str, Tool] = {}
        for tool in tools:
            if tool.name in self._tools:
                raise UsageError(f"two tools are named {tool.name!r} — give each its own name")
            self._tools[tool.name] = tool
        carried: dict[str, set[str]] = {}
        for tool in self._tools.values():
            if tool.capability:
                carried.setdefault(tool.capability, set()).add(tool.risk)
        # The risk classes of each capability's cards: those of the tools holding it.
        self.risks: Mapping[str, frozenset[str]] = MappingProxyType(
            {capability: frozenset(risks) for capability, risks in carried.items()}
        )

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __len__(self) -> int:
        return len(self._tools)

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def for_role(self, role: RoleSpec) -> tuple[ToolSpec, ...]:
        """The tools whose capability the role holds (a tool that needs none is open to all)."""
        return tuple(t for t in self._tools.values() if _allowed(role, t))

    def authorize(self, role: RoleSpec, name: str) -> Tool:
        """The tool a call names, if the role may call it; `Refused` otherwise."""
        tool = self._tools.get(name)
        if tool is None:
            allowed = ", ".join(t.name for t in self.for_role(role)) or "none"
            raise Refused(f"there is no tool '{name}' — the tools you can call: {allowed}")
        if not _allowed(role, tool):
            raise Refused(
                f"role '{role.id}' cannot call {name} — add {tool.capability} to its "
                "`capabilities:`"
            )
        return tool

    def check(self, role: RoleSpec, call: ToolCall) -> tuple[Tool, Mapping[str, Any]]:
        """The tool and its arguments, checked; `Refused` says how to call it instead."""
        tool = self.authorize(role, call.name)
        if call.problem is not None:
            raise Refused(f"{call.problem} — call it as {usage(tool)}")
        validator = self._validators.get(tool.name)
        if validator is None:
            validator = self._validators[tool.name] = _validator(tool.parameters)
        problems = argument_problems(validator, call.arguments)
        if problems:
            raise Refused(
                f"the arguments of {tool.name} do not fit its schema: {'; '.join(problems)} "
                f"— call it as {usage(tool)}"
            )
        return tool, call.arguments

    def preview(
        self, brain: Brain, store: Store, request: TurnRequest, role: RoleSpec, call: ToolCall
    ) -> str | None:
        """Check a call as `execute` would before it runs it, without running it; what it
        would do as its tool previews it (None: the tool has no preview). `Refused` when
        the call would be refused."""
        tool, arguments = self.check(role, call)
        if tool.preview is None:
            return None
        with store.reading() as tx:
            context = ToolContext(brain=brain, tx=tx, request=request, role=role)
            return tool.preview(context, arguments)

    def execute(
        self,
        brain: Brain,
        store: Store,
        request: TurnRequest,
        role: RoleSpec,
        call: ToolCall,
        *,
        code: CodeRunner | None = None,
    ) -> str:
        """Check a call and run it in a transaction of its own; `Refused` (or another
        `KeelError`) when it may not run or its tool refuses, and then nothing is written."""
        tool, arguments = self.check(role, call)
        with store.transaction() as tx:
            context = ToolContext(
                brain=brain, tx=tx, request=request, role=role, code=code, risks=self.risks
            )
            return tool.run(context, arguments)


def _allowed(role: RoleSpec, tool: ToolSpec) -> bool:
    return not tool.capability or role.can(tool.capability)


def argument_problems(validator: Validator, arguments: Mapping[str, Any]) -> list[str]:
    """What is wrong with a call's arguments against a tool's schema, in plain words.

    Text that is not valid UTF-8 (half of a surrogate pair, from a JSON `\\ud800`) is
    refused first: no store, log or wire could carry it, nor a message that quotes it.
    """
    broken = list(_not_text(arguments, ""))
    if broken:
        return [
            f"{where or 'arguments'}: not valid text (half of a surrogate pair)" for where in broken
        ]
    found = []
    for error in sorted(validator.iter_errors(dict(arguments)), key=str):
        where = ".".join(str(p) for p in error.absolute_path)
        found.append(f"{where}: {error.message}" if where else error.message)
    return found


def _not_text(value: Any, where: str) -> Iterator[str]:
    """Where in an argument value a string holds a lone surrogate (keys included)."""
    if isinstance(value, str):
        if not value.isascii() and not is_utf8(value):
            yield where
    elif isinstance(value, Mapping):
        for key, item in value.items():
            inner = f"{where}.{key}" if where else str(key)
            if isinstance(key, str) and not is_utf8(key):
                yield where or "arguments"
            else:
                yield from _not_text(item, inner)
    elif isinstance(value, list | tuple):
        for index, item in enumerate(value):
            yield from _not_text(item, f"{where}.{index}" if where else str(index))


def usage(tool: ToolSpec) -> str:
    """How to call a tool, in one line: `name({"a": string (required), "b": string})`."""
    properties: Mapping[str, Any] = tool.parameters.get("properties", {})
    required = set(tool.parameters.get("required", ()))
    fields = [
        f'"{name}": {spec.get("type", "value")}' + (" (required)" if name in required else "")
        for name, spec in properties.items()
    ]
    return f"{tool.name}({{{', '.join(fields)}}})"


def _validator(schema: Mapping[str, Any]) -> Validator:
    """The schema's validator; a tool takes no argument its schema does not name.

    That rule is the registry's, not each schema's: the model is not charged for
    `additionalProperties: false` in every tool it is shown.
    """
    # jsonschema is imported when a call is first checked, not when Keel is imported.
    from jsonschema import Draft202012Validator

    return Draft202012Validator({"additionalProperties": False, **schema})
