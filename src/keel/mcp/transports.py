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
import socket
import sys
from typing import TYPE_CHECKING, Any

from mcp.server import Server
from mcp.server.stdio import stdio_server

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
            await server.run(read_stream, write_stream, server.create_initialization_options())


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
