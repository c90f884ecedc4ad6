"""The MCP server: a brain's tools and contexts for one room, on the official MCP SDK.

`build_server(engine, room)` returns a low-level `mcp.server.Server` (the SDK's high-level
`MCPServer` derives schemas from type hints; Keel's tools bring their own). It serves:

- **tools**: exactly the engine registry's tools the room's role may call
  (`Registry.for_role`), each call authorized again and checked against its schema by the
  registry, since the SDK forwards any name to the handler. What Keel refuses — an unknown
  tool, a missing capability, arguments the schema rejects, a pin, a turn that does not
  fit — is a tool result with `isError` and the reason, which the agent can act on. A
  failure Keel did not expect is logged with its traceback and answered with a bare
  protocol error (-32603), never with its text, and the server goes on serving.
- **resources**: `keel://catalog` and `keel://context/<id>` (see `keel.mcp.resources`);
  a refused read is a protocol error (-32602) carrying the reason.

A tool whose schema takes `session` (`context_turn`) gets the connection's session when
the call names none: a new one for each connection over stdio (each agent process) or in
memory, and one for the whole server over HTTP — HTTP clients that share a server should
name their own.

Blocking work (the database, brain code) runs in a worker thread; an `Engine` is safe to
share between threads.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import AsyncIterator, Callable, Mapping
from contextlib import asynccontextmanager
from dataclasses import dataclass
from functools import partial
from typing import Any, TypeVar

import anyio
from mcp.server import Server, ServerRequestContext
from mcp.shared.exceptions import MCPError
from mcp.types import (
    INTERNAL_ERROR,
    INVALID_PARAMS,
    CallToolRequestParams,
    CallToolResult,
    ListResourcesResult,
    ListResourceTemplatesResult,
    ListToolsResult,
    PaginatedRequestParams,
    ReadResourceRequestParams,
    ReadResourceResult,
    Resource,
    ResourceTemplate,
    TextContent,
    TextResourceContents,
    Tool,
)

from keel import __version__
from keel.assemble.values import ToolSpec
from keel.errors import KeelError
from keel.mcp import resources
from keel.mcp.room import Room
from keel.runtime.engine import Engine

LOG = logging.getLogger("keel.mcp")
SESSION = "session"
T = TypeVar("T")


def build_server(engine: Engine, room: Room) -> Server[Any]:
    """A server for `room`, answering with `engine`'s brain, database and tools."""
    handlers = _Handlers(engine, room)
    return Server(
        "keel",
        version=__version__,
        lifespan=_connect,
        instructions=_instructions(room),
        get_tool_input_schema=handlers.input_schema,
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
        on_list_resources=handlers.list_resources,
        on_list_resource_templates=handlers.list_resource_templates,
        on_read_resource=handlers.read_resource,
    )


class _Handlers:
    """The server's answers, for one room; every one looks at the brain as it is now."""

    __slots__ = ("engine", "room")

    def __init__(self, engine: Engine, room: Room) -> None:
        self.engine = engine
        self.room = room

    def allowed(self) -> dict[str, ToolSpec]:
        """The tools the room's role may call now, by name."""
        role = self.engine.role_for(self.room.request())
        return {spec.name: spec for spec in self.engine.tools.for_role(role)}

    def input_schema(self, name: str) -> Mapping[str, Any] | None:
        try:
            spec = self.allowed().get(name)
        except KeelError:
            return None
        return None if spec is None else _schema(spec)

    async def list_tools(
        self, _ctx: ServerRequestContext[_Connection], _params: PaginatedRequestParams | None
    ) -> ListToolsResult:
        specs = _answering(self.allowed)
        return ListToolsResult(tools=[_tool(spec) for spec in specs.values()])

    async def call_tool(
        self, ctx: ServerRequestContext[_Connection], params: CallToolRequestParams
    ) -> CallToolResult:
        arguments = dict(params.arguments or {})
        tool = self.engine.tools.get(params.name)
        takes_session = tool is not None and SESSION in tool.parameters.get("properties", {})
        if takes_session and arguments.get(SESSION) is None:
            arguments[SESSION] = ctx.lifespan_context.session
        call = partial(self.engine.call, self.room.request(), params.name, arguments)
        try:
            text = await anyio.to_thread.run_sync(call)
        except KeelError as exc:
            return CallToolResult(
                content=[TextContent(text=_wire(f"refused: {exc}"))], is_error=True
            )
        except Exception:
            # A bug, not a refusal: its text is for the log, not for the client (a
            # handshake-era connection would otherwise put it on the wire).
            LOG.exception("tool %s failed in %s", params.name, self.room.where)
            raise MCPError(code=INTERNAL_ERROR, message="Internal error") from None
        return CallToolResult(content=[TextContent(text=_wire(text))])

    async def list_resources(
        self, _ctx: ServerRequestContext[_Connection], _params: PaginatedRequestParams | None
    ) -> ListResourcesResult:
        offered = _answering(partial(resources.offered, self.engine, self.room))
        if not offered:  # a role that may open nothing has nothing to read either
            return ListResourcesResult(resources=[])
        catalog = Resource(
            uri=resources.CATALOG_URI,
            name="catalog",
            description="The contexts this role may ask for, one line each.",
            mime_type="text/markdown",
        )
        return ListResourcesResult(resources=[catalog, *(_resource(o) for o in offered)])

    async def list_resource_templates(
        self, _ctx: ServerRequestContext[_Connection], _params: PaginatedRequestParams | None
    ) -> ListResourceTemplatesResult:
        offered = _answering(partial(resources.offered, self.engine, self.room))
        templates = [
            ResourceTemplate(
                uri_template=o.template,
                name=f"{o.context} by {o.entity}",
                description=o.description,
                mime_type="text/plain",
            )
            for o in offered
            if o.template is not None
        ]
        return ListResourceTemplatesResult(resource_templates=templates)

    async def read_resource(
        self, _ctx: ServerRequestContext[_Connection], params: ReadResourceRequestParams
    ) -> ReadResourceResult:
        read = partial(resources.read, self.engine, self.room, params.uri)
        try:
            text = await anyio.to_thread.run_sync(read)
        except KeelError as exc:
            raise MCPError(code=INVALID_PARAMS, message=_wire(f"refused: {exc}")) from None
        except Exception:
            LOG.exception("reading %s failed in %s", params.uri, self.room.where)
            raise MCPError(code=INTERNAL_ERROR, message="Internal error") from None
        mime = "text/markdown" if params.uri == resources.CATALOG_URI else "text/plain"
        return ReadResourceResult(
            contents=[TextResourceContents(uri=_wire(params.uri), mime_type=mime, text=_wire(text))]
        )


@dataclass(frozen=True, slots=True)
class _Connection:
    """What lives as long as one connection: the session its calls default to."""

    session: str


@asynccontextmanager
async def _connect(_server: Server[_Connection]) -> AsyncIterator[_Connection]:
    # The SDK enters the lifespan once per connection over stdio and in memory, and once
    # for the whole app over HTTP.
    yield _Connection(session=f"mcp-{uuid.uuid4().hex}")


def _answering(compute: Callable[[], T]) -> T:
    """Run a listing; a refusal (the role cannot be resolved) is a protocol error with why."""
    try:
        return compute()
    except KeelError as exc:
        raise MCPError(code=INVALID_PARAMS, message=_wire(f"refused: {exc}")) from None


def _wire(text: str) -> str:
    """Text the wire can carry: a lone surrogate (a client's `\\ud800`, echoed in a
    refusal) would fail the write of the answer, and the client would wait forever."""
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


def _schema(spec: ToolSpec) -> dict[str, Any]:
    # The registry takes no argument a schema does not name; say so to the client too.
    return {"additionalProperties": False, **spec.parameters}


def _tool(spec: ToolSpec) -> Tool:
    return Tool(name=spec.name, description=spec.description, input_schema=_schema(spec))


def _resource(offer: resources.Offered) -> Resource:
    described = offer.description or f"The {offer.context} context."
    if offer.entity is not None:
        described += f" Keyed by {offer.entity}: a room bound to one reads that one."
    return Resource(
        uri=offer.uri, name=offer.context, description=described, mime_type="text/plain"
    )


def _instructions(room: Room) -> str:
    return (
        f"Keel serves the feature contexts of {room.where}. Call context_turn with each new "
        "request from the person: it returns the contexts that request adds (in a session, "
        "only what changed). Follow each <context> block for its feature until it is "
        "withdrawn."
    )
