"""The stdio transport's guard, in this process: a request the SDK's reader refuses is
answered with an error naming it, never dropped; everything else passes on unchanged.

tests/mcp/test_stdio.py sends the same lines to a real `keel mcp` process.
"""

from __future__ import annotations

import anyio
import mcp_types as types
import pytest
from mcp.shared.message import SessionMessage
from mcp_types import INVALID_PARAMS, JSONRPCError

from keel.mcp.transports import _answer_unreadable, _refusal

pytestmark = pytest.mark.anyio

SURROGATE = (
    '{"jsonrpc":"2.0","id":4,"method":"tools/call",'
    '"params":{"name":"context_open","arguments":{"name":"\\udfff"}}}'
)


def unreadable(line: str) -> Exception:
    """What the SDK's stdio reader hands on for a line it cannot read."""
    try:
        types.jsonrpc_message_adapter.validate_json(line, by_name=False)
    except Exception as exc:  # noqa: BLE001 - whatever the reader would pass on
        return exc
    raise AssertionError(f"the SDK read {line!r}")


def test_a_request_with_half_a_surrogate_pair_gets_an_error_with_its_id() -> None:
    answer = _refusal(unreadable(SURROGATE))
    assert answer is not None
    error = answer.message
    assert isinstance(error, JSONRPCError)
    assert (error.id, error.error.code) == (4, INVALID_PARAMS)
    assert "surrogate" in error.error.message
    error.model_dump_json()  # it can be written


@pytest.mark.parametrize(
    "line",
    [
        pytest.param('{"jsonrpc":"2.0","method":"x","params":{"a":"\\ud800"}}', id="no-id"),
        pytest.param('{"jsonrpc":"2.0","id":true,"method":"x","p":"\\ud800"}', id="bool-id"),
        pytest.param("[1, 2", id="not-json"),
        pytest.param('"\\ud800"', id="not-an-object"),
    ],
)
def test_what_has_no_id_to_answer_is_left_to_the_sdk(line: str) -> None:
    assert _refusal(unreadable(line)) is None
    assert _refusal(ValueError("not from the reader")) is None


async def test_the_guard_answers_refusals_and_passes_everything_else_on() -> None:
    lines_in, lines = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    onward, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](10)
    answers, client_reads = anyio.create_memory_object_stream[SessionMessage](10)
    ping = SessionMessage(types.JSONRPCRequest(jsonrpc="2.0", id=1, method="ping"))
    other = ValueError("something else")
    async with lines_in:
        await lines_in.send(ping)
        await lines_in.send(unreadable(SURROGATE))
        await lines_in.send(other)
    async with lines, server_reads, client_reads:
        await _answer_unreadable(lines, onward, answers)
        assert [item async for item in server_reads] == [ping, other]
        answers.close()
        [refused] = [item async for item in client_reads]
    assert isinstance(refused.message, JSONRPCError)
    assert refused.message.id == 4
