"""The tool registry: one object per tool, found by name, checked before it runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from keel.assemble.values import ToolCall
from keel.brain.specs import RoleSpec
from keel.errors import Refused, UsageError
from keel.tools import CONTEXT_BIND, CONTEXT_OPEN, CONTEXT_UNBIND, TOOLS, Registry, Tool, usage
from keel.tools.registry import ToolContext

READER = RoleSpec(id="reader", feature="f", path="p", persona="", capabilities=("context:read",))
BINDER = RoleSpec(id="binder", feature="f", path="p", persona="", capabilities=("context:bind",))
EVERYTHING = RoleSpec(id="all", feature="f", path="p", persona="", capabilities=("*",))
NOBODY = RoleSpec(id="none", feature="f", path="p", persona="")


def _echo(_ctx: ToolContext, args: Mapping[str, Any]) -> str:
    return repr(dict(args))


PING = Tool(name="ping", description="Answers pong.", parameters={"type": "object"}, run=_echo)


def test_keels_tools_carry_their_capability_and_risk() -> None:
    assert [(t.name, t.capability, t.risk) for t in TOOLS] == [
        ("context_open", "context:read", "safe"),
        ("context_bind", "context:bind", "moderate"),
        ("context_unbind", "context:bind", "moderate"),
        ("send_message", "message:send", "moderate"),
        ("notification_send", "message:notify", "moderate"),
        ("topic_open", "chat:topic", "moderate"),
        ("file_send", "message:file", "moderate"),
        ("voice_send", "message:file", "moderate"),
        ("heartbeat_update", "brain:edit", "moderate"),
        ("hook_update", "brain:edit", "moderate"),
        ("scenario_update", "brain:edit", "moderate"),
        ("access_update", "brain:edit", "moderate"),
        ("access_widen", "access:widen", "dangerous"),
        ("agent_context", "ledger:read", "safe"),
        ("access_explain", "access:read", "safe"),
        ("doctor_check", "doctor:read", "safe"),
    ]
    assert TOOLS.get("context_open") is CONTEXT_OPEN


@pytest.mark.parametrize(
    ("role", "names"),
    [
        pytest.param(READER, ["context_open", "ping"], id="read"),
        pytest.param(BINDER, ["context_bind", "context_unbind", "ping"], id="bind"),
        pytest.param(
            EVERYTHING, ["context_open", "context_bind", "context_unbind", "ping"], id="*"
        ),
        pytest.param(NOBODY, ["ping"], id="none"),
    ],
)
def test_a_role_sees_only_the_tools_its_capabilities_allow(
    role: RoleSpec, names: list[str]
) -> None:
    registry = Registry([CONTEXT_OPEN, CONTEXT_BIND, CONTEXT_UNBIND, PING])
    assert [t.name for t in registry.for_role(role)] == names
    # What a turn asks (`tools_for`) is the same answer, worked out once per role.
    assert registry.tools_for(role) == registry.for_role(role)
    assert registry.tools_for(role) is registry.tools_for(role)


def test_a_name_is_registered_once() -> None:
    with pytest.raises(UsageError, match="two tools are named 'ping'"):
        Registry([PING, PING])


def test_an_unknown_name_is_refused_with_the_tools_the_role_can_call() -> None:
    unknown = r"there is no tool 'context_close' — the tools you can call: context_open$"
    with pytest.raises(Refused, match=unknown):
        TOOLS.check(READER, ToolCall(id="1", name="context_close"))
    with pytest.raises(Refused, match=r"the tools you can call: none$"):
        TOOLS.check(NOBODY, ToolCall(id="1", name="context_close"))


def test_a_tool_the_role_lacks_the_capability_for_is_refused() -> None:
    with pytest.raises(Refused, match="role 'reader' cannot call context_bind — add context:bind"):
        TOOLS.check(READER, ToolCall(id="1", name="context_bind", arguments={"context": "x"}))


@pytest.mark.parametrize(
    ("arguments", "problem"),
    [
        pytest.param({}, "'context' is a required property", id="missing"),
        pytest.param({"context": 3}, "context: 3 is not of type 'string'", id="type"),
        pytest.param({"context": "x", "room": "y"}, r"\('room' was unexpected\)", id="extra"),
    ],
)
def test_arguments_are_checked_against_the_schema(arguments: dict[str, Any], problem: str) -> None:
    call = ToolCall(id="1", name="context_bind", arguments=arguments)
    with pytest.raises(Refused, match=problem) as caught:
        TOOLS.check(BINDER, call)
    assert str(caught.value).endswith(f"— call it as {usage(CONTEXT_BIND)}")


def test_unreadable_arguments_are_refused_before_the_schema() -> None:
    call = ToolCall(id="1", name="context_open", problem="the arguments are not JSON")
    with pytest.raises(Refused, match=r"^the arguments are not JSON — call it as context_open\("):
        TOOLS.check(READER, call)


@pytest.mark.parametrize(
    ("arguments", "where"),
    [
        pytest.param({"name": "\ud800"}, "name", id="value"),
        pytest.param({"name": "x", "entity": "a\udfffb"}, "entity", id="second"),
        pytest.param({"name": ["ok", {"\ud800": 1}]}, "name.1", id="nested-key"),
    ],
)
def test_half_a_surrogate_pair_is_refused_and_never_echoed(
    arguments: dict[str, Any], where: str
) -> None:
    call = ToolCall(id="1", name="context_open", arguments=arguments)
    with pytest.raises(
        Refused, match=rf"^the arguments of context_open do not fit .*{where}: not valid text"
    ) as caught:
        TOOLS.check(READER, call)
    str(caught.value).encode("utf-8")  # the refusal itself can be written anywhere


def test_valid_arguments_pass_as_given() -> None:
    call = ToolCall(id="1", name="context_open", arguments={"name": "policy", "entity": "T-1"})
    tool, arguments = TOOLS.check(READER, call)
    assert tool is CONTEXT_OPEN
    assert arguments == {"name": "policy", "entity": "T-1"}


def test_usage_names_each_argument_and_what_is_required() -> None:
    assert usage(CONTEXT_OPEN) == 'context_open({"name": string (required), "entity": string})'
    assert usage(PING) == "ping({})"
