"""`--http`: streamable HTTP on loopback, one round trip through the official client."""

from __future__ import annotations

import socket

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.types import TextContent

from keel.mcp.server import build_server
from keel.mcp.transports import http_server
from keel.runtime.engine import Engine
from tests.mcp.brains import STYLE
from tests.mcp.conftest import DEV

pytestmark = pytest.mark.anyio


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
    return port


@pytest.mark.parametrize("mode", [pytest.param("legacy"), pytest.param("auto", id="2026-07-28")])
async def test_a_round_trip_over_http_on_loopback(dev_engine: Engine, mode: str) -> None:
    port = free_port()
    uvicorn = http_server(build_server(dev_engine, DEV), port)
    url = f"http://127.0.0.1:{port}/mcp"
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(uvicorn.serve)
        with anyio.fail_after(30):
            while not uvicorn.started:
                await anyio.sleep(0.01)
        try:
            bound = {sock.getsockname()[0] for srv in uvicorn.servers for sock in srv.sockets}
            async with Client(url, mode=mode) as client:
                tools = [t.name for t in (await client.list_tools()).tools]
                first = await client.call_tool("context_turn", {"input": "hi"})
                second = await client.call_tool("context_turn", {"input": "again"})
            async with httpx2.AsyncClient() as raw:
                rebound = await raw.post(url, headers={"Host": "evil.example"}, json={})
        finally:
            uvicorn.should_exit = True
    assert "context_turn" in tools
    assert bound == {"127.0.0.1"}, "bound to loopback only"
    texts = [c.text for r in (first, second) for c in r.content if isinstance(c, TextContent)]
    assert STYLE in texts[0]
    assert STYLE not in texts[1], "one session for the server over HTTP"
    assert rebound.status_code == 421, "a Host that is not loopback is refused"
