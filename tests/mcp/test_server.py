"""The MCP server in process, through the official client, in both protocol eras.

`mode="legacy"` is the JSON-RPC path with the `initialize` handshake that today's hosts
speak over stdio (2025-11-25); `mode="auto"` negotiates the 2026-07-28 era.
"""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

import pytest
from mcp import Client, MCPError
from mcp.types import INTERNAL_ERROR, INVALID_PARAMS, CallToolResult, TextContent

from keel.link.values import Conversation
from keel.mcp.room import Room
from keel.mcp.server import build_server
from keel.runtime.engine import Engine
from keel.tools.context_turn import NOTHING_NEW
from tests.mcp.brains import STYLE, TICKET, WITHDRAWN_T1
from tests.mcp.conftest import ACME, DEV

pytestmark = pytest.mark.anyio

MODES = [pytest.param("legacy", id="legacy"), pytest.param("auto", id="2026-07-28")]
VIEWER = Room(conversation=Conversation(bot="review", chat="cli"))
AUDITOR = Room(conversation=Conversation(bot="cli", chat="cli"), role="auditor")
READ_TOOLS = ["context_open", "context_turn"]


@pytest.fixture(params=MODES)
def mode(request: pytest.FixtureRequest) -> str:
    value: str = request.param
    return value


@asynccontextmanager
async def connect(engine: Engine, room: Room, mode: str) -> AsyncIterator[Client]:
    async with Client(build_server(engine, room), mode=mode) as client:
        yield client


def text(result: CallToolResult) -> str:
    (content,) = result.content
    assert isinstance(content, TextContent)
    return content.text


async def names(client: Client) -> list[str]:
    return [tool.name for tool in (await client.list_tools()).tools]


@pytest.mark.parametrize(
    ("room", "listed"),
    [
        pytest.param(
            DEV,
            [
                "context_open",
                "context_bind",
                "context_unbind",
                "context_turn",
                "agent_context",
                "access_explain",
                "doctor_check",
            ],
            id="dev-reads-binds-checks",
        ),
        pytest.param(VIEWER, READ_TOOLS, id="viewer-reads"),
        pytest.param(AUDITOR, ["doctor_check"], id="auditor-checks"),
    ],
)
async def test_the_listed_tools_follow_the_roles_capabilities(
    dev_engine: Engine, mode: str, room: Room, listed: list[str]
) -> None:
    async with connect(dev_engine, room, mode) as client:
        assert await names(client) == listed
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
    if "context_turn" in tools:
        schema = tools["context_turn"].input_schema
        assert schema["required"] == ["input"]
        assert schema["additionalProperties"] is False


async def test_the_acme_room_lists_read_tools_and_its_pin_refuses_globex(
    reference_engine: Engine, mode: str
) -> None:
    async with connect(reference_engine, ACME, mode) as client:
        assert await names(client) == READ_TOOLS
        globex = await client.call_tool("context_open", {"name": "client", "entity": "globex"})
        acme = await client.call_tool("context_open", {"name": "client"})
    assert globex.is_error
    assert text(globex).startswith("refused: this chat is bound to client 'acme'; 'globex'")
    assert not acme.is_error
    assert 'name="client" entity="acme"' in text(acme)
    assert "Acme Corporation" in text(acme)
    assert "Globex" not in text(acme)


async def test_a_role_without_bind_gets_an_error_result_calling_it_anyway(
    dev_engine: Engine, mode: str
) -> None:
    async with connect(dev_engine, VIEWER, mode) as client:
        assert "context_bind" not in await names(client)
        result = await client.call_tool("context_bind", {"context": "ticket", "entity": "T-1"})
    assert result.is_error
    assert text(result) == (
        "refused: role 'viewer' cannot call context_bind — add context:bind to its `capabilities:`"
    )
    with dev_engine.store.transaction() as tx:
        assert tx.bindings("cli") == ()


async def test_a_session_gets_instructions_once_then_a_withdrawal(
    dev_engine: Engine, mode: str
) -> None:
    async with connect(dev_engine, DEV, mode) as client:
        first = text(await client.call_tool("context_turn", {"input": "Fix checkout"}))
        await client.call_tool("context_bind", {"context": "ticket", "entity": "T-1"})
        second = text(await client.call_tool("context_turn", {"input": "Now the colour"}))
        await client.call_tool("context_unbind", {"context": "ticket"})
        third = text(await client.call_tool("context_turn", {"input": "Done"}))
    assert STYLE in first
    assert STYLE not in second, "the style stands as it was sent: not sent again"
    assert TICKET in second
    assert third.startswith(WITHDRAWN_T1)
    assert STYLE not in third
    assert sum(t.count(STYLE) for t in (first, second, third)) == 1
    async with connect(dev_engine, DEV, mode) as client:
        fresh = text(await client.call_tool("context_turn", {"input": "New connection"}))
    assert STYLE in fresh, "a new connection is a new session"


async def test_a_named_session_and_a_compaction(dev_engine: Engine, mode: str) -> None:
    turn = {"input": "hi", "session": "agent-7"}
    async with connect(dev_engine, DEV, mode) as client:
        await client.call_tool("context_turn", turn)
    async with connect(dev_engine, DEV, mode) as client:
        again = text(await client.call_tool("context_turn", turn))
        compacted = text(await client.call_tool("context_turn", {**turn, "compacted": True}))
    assert again == NOTHING_NEW
    assert STYLE in compacted


@pytest.mark.parametrize(
    ("name", "arguments", "said"),
    [
        pytest.param(
            "context_sing",
            {},
            "refused: there is no tool 'context_sing' — the tools you can call: context_open,",
            id="unknown-tool",
        ),
        pytest.param(
            "context_turn",
            {"input": 5},
            "refused: the arguments of context_turn do not fit its schema: input: 5 is not of "
            "type 'string'",
            id="wrong-type",
        ),
        pytest.param(
            "context_turn",
            {},
            "refused: the arguments of context_turn do not fit its schema: 'input' is a "
            "required property",
            id="missing-argument",
        ),
        pytest.param(
            "access_explain",
            {"chat": "tg:chat:-1002000000102"},
            "refused: the arguments of access_explain do not fit its schema: Additional "
            "properties are not allowed ('chat' was unexpected)",
            id="unknown-argument",
        ),
        pytest.param(
            "context_turn",
            {"input": "hi", "compacted": "yes"},
            "refused: the arguments of context_turn do not fit its schema: compacted: 'yes' is "
            "not of type 'boolean'",
            id="wrong-flag",
        ),
    ],
)
async def test_a_malformed_call_is_an_error_result_and_the_server_goes_on(
    dev_engine: Engine, mode: str, name: str, arguments: dict[str, object], said: str
) -> None:
    async with connect(dev_engine, DEV, mode) as client:
        result = await client.call_tool(name, arguments)
        after = await client.call_tool("access_explain", {})
    assert result.is_error
    assert text(result).startswith(said)
    assert not after.is_error


async def test_resources_are_the_catalog_and_the_contexts_the_role_may_open(
    reference_engine: Engine, mode: str
) -> None:
    async with connect(reference_engine, ACME, mode) as client:
        listed = [r.uri for r in (await client.list_resources()).resources]
        templates = (await client.list_resource_templates()).resource_templates
        catalog = (await client.read_resource("keel://catalog")).contents
        card = (await client.read_resource("keel://context/client")).contents
        with pytest.raises(MCPError, match="bound to client 'acme'") as refused:
            await client.read_resource("keel://context/client/globex")
        with pytest.raises(MCPError, match="no resource 'keel://contexts'") as unknown:
            await client.read_resource("keel://contexts")
    assert listed == ["keel://catalog", "keel://context/client"]
    assert [t.uri_template for t in templates] == ["keel://context/client/{entity}"]
    assert getattr(catalog[0], "text", "") == (
        "Contexts to open:\n"
        "- client: This client's account — contacts, retainer, current campaigns, open requests."
    )
    assert 'entity="acme"' in getattr(card[0], "text", "")
    assert refused.value.error.code == unknown.value.error.code == INVALID_PARAMS


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("keel://context/nope", id="no-such-context"),
        pytest.param("keel://context/cashflow", id="another-feature-s"),
        pytest.param("keel://context/cashflow/2026-11", id="another-feature-s-keyed"),
    ],
)
async def test_a_context_the_room_may_not_open_is_refused_naming_only_its_own(
    reference_engine: Engine, mode: str, uri: str
) -> None:
    name = uri.removeprefix("keel://context/").partition("/")[0]
    async with connect(reference_engine, ACME, mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource(uri)
    assert refused.value.error.code == INVALID_PARAMS
    assert str(refused.value) == (
        f"refused: no context '{name}' that role 'client-desk' may open here — expected one "
        "of: client"
    )


async def test_a_role_that_may_open_nothing_names_nothing(dev_engine: Engine, mode: str) -> None:
    async with connect(dev_engine, AUDITOR, mode) as client:
        with pytest.raises(MCPError) as refused:
            await client.read_resource("keel://context/style")
    assert str(refused.value) == (
        "refused: no context 'style' to read here — role 'auditor' may open none"
    )


async def test_a_keyed_resource_reads_one_entity(dev_engine: Engine, mode: str) -> None:
    async with connect(dev_engine, DEV, mode) as client:
        contents = (await client.read_resource("keel://context/ticket/T-2")).contents
    assert "T-2 | Refund email bounces | open" in getattr(contents[0], "text", "")


async def test_a_role_that_may_open_nothing_is_offered_nothing(
    dev_engine: Engine, mode: str
) -> None:
    async with connect(dev_engine, AUDITOR, mode) as client:
        assert (await client.list_resources()).resources == []
        assert (await client.list_resource_templates()).resource_templates == []


async def test_a_room_without_a_role_refuses_the_listing_with_why(
    dev_engine: Engine, mode: str
) -> None:
    nobody = Room(conversation=Conversation(bot="nobody", chat="cli"))
    async with connect(dev_engine, nobody, mode) as client:
        with pytest.raises(MCPError, match=r"no role given and access\.yaml has no rule"):
            await client.list_tools()
        result = await client.call_tool("access_explain", {})
    assert result.is_error


async def test_the_server_says_who_it_is(dev_engine: Engine, mode: str) -> None:
    async with connect(dev_engine, DEV, mode) as client:
        assert client.server_info is not None
        assert client.server_info.name == "keel"
        assert "bot cli in cli" in (client.instructions or "")
        assert client.server_capabilities.tools is not None
        assert client.server_capabilities.resources is not None


async def test_an_unexpected_failure_is_a_bare_internal_error(
    dev_engine: Engine, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("secret detail")

    async with connect(dev_engine, DEV, mode) as client:
        monkeypatch.setattr(dev_engine, "call", broken)
        with pytest.raises(MCPError) as failed:
            await client.call_tool("context_turn", {"input": "hi"})
        monkeypatch.undo()
        after = await client.call_tool("access_explain", {})
    assert failed.value.error.code == INTERNAL_ERROR
    assert "secret" not in str(failed.value)
    assert not after.is_error


def test_the_schema_the_http_path_checks_is_the_listed_one(dev_engine: Engine) -> None:
    schema_of = build_server(dev_engine, VIEWER).get_tool_input_schema
    assert schema_of is not None
    turn = schema_of("context_turn")
    assert turn is not None
    assert turn["additionalProperties"] is False
    assert schema_of("context_bind") is None, "not the viewer's"
    nobody = build_server(dev_engine, Room(conversation=Conversation(bot="nobody", chat="x")))
    assert nobody.get_tool_input_schema is not None
    assert nobody.get_tool_input_schema("context_turn") is None


@pytest.mark.parametrize(
    "uri",
    [
        pytest.param("keel://context/", id="no-id"),
        pytest.param("keel://context/ticket/T-1/more", id="too-deep"),
        pytest.param("keel://context/ticket/", id="empty-key"),
    ],
)
async def test_a_uri_that_names_no_resource_is_refused(
    dev_engine: Engine, mode: str, uri: str
) -> None:
    async with connect(dev_engine, DEV, mode) as client:
        with pytest.raises(MCPError, match="no resource") as refused:
            await client.read_resource(uri)
    assert refused.value.error.code == INVALID_PARAMS


async def test_an_unexpected_failure_reading_a_resource_is_a_bare_internal_error(
    dev_engine: Engine, mode: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def broken(*_args: object, **_kwargs: object) -> str:
        raise RuntimeError("secret detail")

    async with connect(dev_engine, DEV, mode) as client:
        monkeypatch.setattr(dev_engine, "open", broken)
        with pytest.raises(MCPError) as failed:
            await client.read_resource("keel://context/style")
    assert failed.value.error.code == INTERNAL_ERROR
    assert "secret" not in str(failed.value)
