"""`keel mcp` over stdio, as a host starts it: a child process speaking on stdin/stdout.

Each test starts a Python process that imports the MCP SDK (a second or two), so there
are two: one through the official client, one raw, line by line, to see that stdout
carries nothing but the protocol and that a call the SDK itself rejects costs only itself.
"""

from __future__ import annotations

import json
import selectors
import subprocess
from pathlib import Path
from typing import IO, Any

import pytest
from mcp import ClientSession, StdioServerParameters, stdio_client
from mcp.types import TextContent

from tests.mcp.brains import STYLE
from tests.mcp.conftest import Engines
from tests.mcp.launch import child_env, keel_command
from tests.runtime.driver import copy_reference

pytestmark = pytest.mark.anyio

ACME_ARGS = ("--bot", "nova", "--chat", "tg:chat:-1002000000101")
# Long enough for a child on a busy machine to import the SDK and answer; a hung server
# fails the test instead of hanging the suite.
ANSWER_SECONDS = 60


async def test_the_official_client_over_stdio(
    tmp_path: Path, engines: Engines, database_url: str
) -> None:
    brain = copy_reference(tmp_path / "brain")
    engines(brain)  # the brain's state in the test's database
    params = StdioServerParameters(
        command=keel_command()[0],
        args=[*keel_command()[1:], "mcp", str(brain), *ACME_ARGS, "--db", database_url],
        env=child_env(),
        cwd=tmp_path,
    )
    async with stdio_client(params) as (read, write), ClientSession(read, write) as session:
        init = await session.initialize()
        tools = [t.name for t in (await session.list_tools()).tools]
        refused = await session.call_tool("context_open", {"name": "client", "entity": "globex"})
        turn = await session.call_tool("context_turn", {"input": "When does it renew?"})
        resources = [r.uri for r in (await session.list_resources()).resources]
    assert init.server_info.name == "keel"
    assert tools == ["context_open", "context_turn"]
    assert refused.is_error
    assert isinstance(refused.content[0], TextContent)
    assert "bound to client 'acme'" in refused.content[0].text
    assert not turn.is_error
    assert isinstance(turn.content[0], TextContent)
    assert 'name="client" entity="acme"' in turn.content[0].text
    assert resources == ["keel://catalog", "keel://context/client"]


def test_stdout_is_only_the_protocol_and_a_malformed_call_costs_only_itself(
    dev_brain: Path, engines: Engines, database_url: str
) -> None:
    engines(dev_brain)
    command = keel_command("mcp", str(dev_brain), "--db", database_url)
    with subprocess.Popen(
        command,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=child_env(),
        text=True,
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        talk = _Talk(server.stdin, server.stdout)
        init = talk.ask("initialize", _INITIALIZE)
        talk.tell("notifications/initialized")
        not_an_object = talk.ask("tools/call", {"name": "context_turn", "arguments": [1]})
        unknown = talk.ask("tools/call", {"name": "context_sing", "arguments": {}})
        surrogate = talk.ask(
            "tools/call", {"name": "context_turn", "arguments": {"input": "\ud800"}}
        )
        opened = talk.ask("tools/call", {"name": "context_open", "arguments": {"name": "\udfff"}})
        turn = talk.ask("tools/call", {"name": "context_turn", "arguments": {"input": "hi"}})
        server.stdin.close()
        rest = server.stdout.read()
        assert server.wait(timeout=ANSWER_SECONDS) == 0
    assert init["result"]["serverInfo"]["name"] == "keel"
    assert not_an_object["error"]["code"] == -32602
    assert unknown["result"]["isError"] is True
    assert "there is no tool 'context_sing'" in unknown["result"]["content"][0]["text"]
    for answer in (surrogate, opened):
        assert answer.get("error") or answer["result"]["isError"] is True, answer
    assert turn["result"].get("isError") is not True
    assert STYLE in turn["result"]["content"][0]["text"]
    assert rest == "", "nothing but answers on stdout"


_INITIALIZE = {
    "protocolVersion": "2025-11-25",
    "capabilities": {},
    "clientInfo": {"name": "raw-test", "version": "0"},
}


class _Talk:
    """JSON-RPC one line at a time: a request, then wait for its answer."""

    def __init__(self, stdin: IO[str], stdout: IO[str]) -> None:
        self._stdin = stdin
        self._stdout = stdout
        self._next = 0
        self._selector = selectors.DefaultSelector()
        self._selector.register(stdout, selectors.EVENT_READ)

    def tell(self, method: str, params: dict[str, Any] | None = None) -> None:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = params
        self._stdin.write(json.dumps(message) + "\n")
        self._stdin.flush()

    def ask(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        self._next += 1
        message = {"jsonrpc": "2.0", "id": self._next, "method": method, "params": params}
        self._stdin.write(json.dumps(message) + "\n")
        self._stdin.flush()
        if not self._selector.select(timeout=ANSWER_SECONDS):
            raise AssertionError(f"no answer to {method} in {ANSWER_SECONDS}s")
        answer: dict[str, Any] = json.loads(self._stdout.readline())
        assert answer["id"] == self._next
        return answer
