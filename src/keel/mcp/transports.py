"""Serving a `Server` to a coding agent: over stdio, or streamable HTTP on loopback.

stdio is what hosts such as Claude Code and Cursor start: one process per agent, one
connection, until stdin closes. Its stdout is the protocol, so nothing else may reach it:
the SDK points file descriptor 1 at stderr while it serves, and Python's own `sys.stdout`
is pointed at stderr too — otherwise a stray `print` would sit in its buffer and be written
onto the protocol stream when the process exits. Logs go to stderr.

HTTP (`--http PORT`) serves `http://127.0.0.1:PORT/mcp`, stateless, bound to loopback only;
the SDK then also rejects a request whose Host header is not a loopback name (a DNS
rebinding page in a browser). There is no authentication: anything on this machine that
can reach the port is this room's agent. The port is bound (`listen`) before anything says
it is served, and that very socket is what uvicorn serves: a busy port is a plain error the
caller words, never uvicorn's own message and exit status.
"""

from __future__ import annotations

import contextlib
import json
import socket
import sys
from collections.abc import AsyncIterable
from typing import TYPE_CHECKING, Any, Protocol

import anyio
from anyio.streams.memory import MemoryObjectSendStream
from mcp.server import Server
from mcp.server.stdio import stdio_server
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, ErrorData, JSONRPCError
from pydantic import ValidationError

if TYPE_CHECKING:
    import uvicorn
    from starlette.applications import Starlette

LOOPBACK = "127.0.0.1"
HTTP_PATH = "/mcp"


async def serve_stdio(server: Server[Any]) -> None:
    """Serve one connection on stdin/stdout until stdin closes."""
    async with stdio_server() as (read_stream, write_stream):
        # Inside, not before: stdio_server finds the protocol's descriptor through sys.stdout.
        with contextlib.redirect_stdout(sys.stderr):
            send, receive = anyio.create_memory_object_stream[SessionMessage | Exception](0)
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(_answer_unreadable, read_stream, send, write_stream)
                await server.run(receive, write_stream, server.create_initialization_options())


async def _answer_unreadable(
    lines: AsyncIterable[SessionMessage | Exception],
    onward: MemoryObjectSendStream[SessionMessage | Exception],
    answers: _Sender,
) -> None:
    """Pass each message on; answer a request the SDK could not read with an error.

    The SDK reads a line with a strict JSON parser and drops what it refuses without a
    word, so a client whose request holds half of a surrogate pair (`"\\ud800"`) would
    wait for an answer forever. Python's own parser reads such a line, which gives the id
    to answer.
    """
    async with onward:
        async for item in lines:
            answer = _refusal(item) if isinstance(item, Exception) else None
            if answer is None:
                await onward.send(item)
            else:
                await answers.send(answer)


class _Sender(Protocol):
    async def send(self, item: SessionMessage, /) -> None: ...


def _refusal(problem: Exception) -> SessionMessage | None:
    errors = problem.errors() if isinstance(problem, ValidationError) else []
    line = errors[0].get("input") if errors and errors[0]["type"] == "json_invalid" else None
    if not isinstance(line, str):
        return None
    try:
        request = json.loads(line)
    except ValueError:
        return None
    ident = request.get("id") if isinstance(request, dict) else None
    if not isinstance(ident, int | str) or isinstance(ident, bool):
        return None
    why = errors[0].get("ctx", {}).get("error", "not valid JSON")
    error = ErrorData(
        code=INVALID_PARAMS,
        message=f"the request cannot be read ({why}) — send text as UTF-8, with no half "
        "surrogate pairs",
    )
    return SessionMessage(JSONRPCError(jsonrpc="2.0", id=ident, error=error))


def http_app(server: Server[Any]) -> Starlette:
    """The ASGI app serving `server` at `/mcp`, stateless, for loopback Host names only."""
    return server.streamable_http_app(
        streamable_http_path=HTTP_PATH, host=LOOPBACK, stateless_http=True
    )


def http_server(server: Server[Any], port: int) -> uvicorn.Server:
    """A uvicorn server for `http_app(server)` on 127.0.0.1:`port` (0: any free port)."""
    import uvicorn

    config = uvicorn.Config(
        http_app(server),
        host=LOOPBACK,
        port=port,
        log_level="warning",
        access_log=False,  # uvicorn's access log goes to stdout
        lifespan="on",
    )
    return uvicorn.Server(config)


def listen(port: int) -> socket.socket:
    """A socket bound to 127.0.0.1:`port`, for `serve_http`; `OSError` when the port cannot
    be had (`errno.EADDRINUSE`: something already listens there)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    try:
        # As uvicorn binds: a port whose last connections linger in TIME_WAIT is free.
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((LOOPBACK, port))
    except OSError:
        sock.close()
        raise
    return sock


async def serve_http(server: Server[Any], sock: socket.socket) -> None:
    """Serve on the socket `listen` bound until interrupted (SIGINT or SIGTERM)."""
    port: int = sock.getsockname()[1]
    await http_server(server, port).serve(sockets=[sock])
