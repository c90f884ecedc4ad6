"""`keel mcp`: serve a brain to a coding agent over the Model Context Protocol.

The MCP SDK is imported when the command runs, not when `keel` starts: it takes about a
second. Errors before serving go to stderr — over stdio, stdout is the protocol. With
`--http`, the port is bound before the line that says where it serves: a busy port is a
usage error (exit 2), and nothing claims to serve.
"""

from __future__ import annotations

import errno
import logging
import socket
import sys
import uuid
from typing import Annotated

import typer

from keel.cli.options import (
    BotOpt,
    BrainArg,
    ChatOpt,
    DbOpt,
    DmOpt,
    FromOpt,
    RoleOpt,
    ThreadOpt,
)
from keel.cli.root import app, fail
from keel.cli.status import EXIT_FAILED, EXIT_REFUSED, EXIT_USAGE
from keel.errors import KeelError, Refused, UsageError
from keel.link.values import Conversation
from keel.mcp.room import Room
from keel.runtime.engine import Engine
from keel.tools import CODING_TOOLS

LOG = logging.getLogger("keel.mcp")


@app.command("mcp")
def mcp_server(
    brain: BrainArg,
    bot: BotOpt = "cli",
    chat: ChatOpt = "cli",
    thread: ThreadOpt = None,
    dm: DmOpt = False,
    role: RoleOpt = None,
    sender: FromOpt = None,
    db: DbOpt = None,
    http: Annotated[
        int | None,
        typer.Option(
            "--http",
            min=1,
            max=65535,
            help="Serve streamable HTTP on http://127.0.0.1:PORT/mcp instead of stdio.",
            show_default=False,
        ),
    ] = None,
) -> None:
    """Serve the brain to a coding agent over MCP: its tools and contexts, for one room."""
    logging.basicConfig(
        stream=sys.stderr, level=logging.WARNING, format="keel mcp: %(levelname)s %(message)s"
    )
    _require_sdk()
    room = Room(
        conversation=Conversation(bot=bot, chat=chat, thread=thread),
        role=role,
        dm=dm,
        sender=sender,
    )
    if http is None:  # over stdio, one server process serves one agent session
        room = room.in_session(uuid.uuid4().hex)
    try:
        engine = Engine(brain, db, tools=CODING_TOOLS)
    except KeelError as exc:
        fail(exc)
    try:
        _serve(engine, room, http)
    except Refused as exc:
        fail(exc, code=EXIT_REFUSED)
    except UsageError as exc:
        fail(exc)
    except KeelError as exc:
        fail(exc, code=EXIT_FAILED)
    finally:
        engine.close()


def _require_sdk() -> None:
    """Exit with the extra to install when the MCP SDK is missing — first, before the
    brain, the role or the database: nothing else can be fixed to make the command work."""
    try:
        import anyio  # noqa: F401

        import keel.mcp.server
        import keel.mcp.transports  # noqa: F401
    except ModuleNotFoundError as exc:
        if (exc.name or "").partition(".")[0] not in ("mcp", "anyio"):
            raise
        # Written plainly: the error printer reads markup, and would eat the brackets.
        sys.stderr.write("error: keel mcp needs the MCP SDK — pip install 'keel-engine[mcp]'\n")
        raise typer.Exit(EXIT_USAGE) from None


def _serve(engine: Engine, room: Room, http: int | None) -> None:
    # The role is resolved on every call, but a room without one is refused before serving,
    # and a database out of reach fails now rather than on every call.
    resolved = engine.role_for(room.request())
    engine.store.applied()
    if resolved.agent != "cli":
        LOG.warning(
            "role '%s' is agent: %s, so context_turn answers with whole contexts every turn — "
            "set agent: cli in its file to send a session only what changed",
            resolved.id,
            resolved.agent,
        )
    import anyio  # `mcp_server` checked the SDK is there

    from keel.mcp.server import build_server
    from keel.mcp.transports import serve_http, serve_stdio

    server = build_server(engine, room)
    if http is None:
        anyio.run(serve_stdio, server)
        return
    with _bound(http) as sock:
        sys.stderr.write(f"keel mcp: serving {room.where} on http://127.0.0.1:{http}/mcp\n")
        anyio.run(serve_http, server, sock)


def _bound(port: int) -> socket.socket:
    """The loopback socket for `--http PORT`; a usage error when the port cannot be had."""
    from keel.mcp.transports import listen  # the SDK is there: `_serve` imported it

    try:
        return listen(port)
    except OSError as exc:
        if exc.errno == errno.EADDRINUSE:
            fail(f"port {port} is in use — pick another --http PORT")
        fail(f"cannot listen on 127.0.0.1:{port} ({exc.strerror}) — pick another --http PORT")
