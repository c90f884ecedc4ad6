"""The worker's loop, run here as a guest in a thread: calls, deadlines, held answers, hang-ups."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from keel.code import protocol
from keel.code.protocol import HEADER, Frames, frame
from keel.code.worker import Worker
from tests.code.support import match_code, write_code

TURN = {
    "input": "T-481 is late",
    "role": "support",
    "surface": "chat",
    "subject_id": None,
    "run": None,
}


@dataclass
class Channel:
    """Keel's end of a worker's channel, for a test to speak through."""

    sock: socket.socket
    root: Path
    left: threading.Event
    frames: Frames
    inbox: list[dict[str, Any]]
    ids: Iterator[int]

    def call(self, path: str, *, deadline_in: float = 5.0, **args: Any) -> int:
        ident = next(self.ids)
        call = {
            "id": ident,
            "kind": "match",
            "path": path,
            "deadline": time.monotonic() + deadline_in,
        }
        call["args"] = {"context": "ticket", **args}
        self.sock.sendall(
            frame({"op": "calls", "shared": [TURN], "calls": [{**call, "refs": {"turn": 0}}]})
        )
        return ident

    def next(self) -> dict[str, Any]:
        while not self.inbox:
            data = self.sock.recv(65536)
            assert data, "the worker hung up"
            self.inbox.extend(self.frames.feed(data))
        return self.inbox.pop(0)


@pytest.fixture
def channel(tmp_path: Path) -> Iterator[Channel]:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    left = threading.Event()
    hello = {"root": str(tmp_path)}
    worker = Worker(theirs, hello, own_process=False, leave=lambda _code: left.set())
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    channel = Channel(ours, tmp_path, left, Frames(), [], iter(range(1, 10**6)))
    assert channel.next() == {"op": "ready"}
    yield channel
    ours.close()
    thread.join(10)
    assert left.is_set()
    theirs.close()


def test_a_call_is_answered_with_its_value_and_log(channel: Channel) -> None:
    path = write_code(
        channel.root, match_code("ctx.log('saw', turn.input)\nreturn {'entity': turn.input[:5]}")
    )
    ident = channel.call(path)
    assert channel.next() == {
        "op": "done",
        "id": ident,
        "line": 4,
        "value": {"entity": "T-481"},
        "log": ["saw T-481 is late"],
    }


def test_a_call_past_its_deadline_on_arrival_is_not_run(channel: Channel) -> None:
    path = write_code(channel.root, match_code("ctx.log('ran')\nreturn {}"))
    late = channel.call(path, deadline_in=-1)
    assert channel.next() == {"op": "finished", "id": late}
    fresh = channel.call(path)
    assert channel.next()["id"] == fresh


def test_a_call_past_its_deadline_is_reported_with_its_line_then_finishes(channel: Channel) -> None:
    path = write_code(
        channel.root,
        match_code("while not ctx.signal.wait(0.01):\n    pass\nctx.log('stopped')\nreturn {}"),
    )
    ident = channel.call(path, deadline_in=0.2)
    assert channel.next() == {"op": "overdue", "id": ident, "line": 5}
    assert channel.next() == {"op": "finished", "id": ident}


def test_quick_calls_answer_together(channel: Channel) -> None:
    path = write_code(channel.root, match_code("return {}"))
    idents = {channel.call(path) for _ in range(10)}
    assert {channel.next()["id"] for _ in range(10)} == idents


def test_an_answer_too_large_to_send_says_so(
    channel: Channel, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = write_code(channel.root, match_code("return {'entity': 'x' * 2000}"))
    monkeypatch.setattr(protocol, "MAX_FRAME", 1000)
    ident = channel.call(path)
    answer = channel.next()
    assert (answer["op"], answer["id"], answer["log"]) == ("done", ident, [])
    assert answer["too_large"] > 2000


def test_a_broken_frame_ends_the_worker(channel: Channel) -> None:
    channel.sock.sendall(HEADER.pack(2) + b"{x")
    assert channel.left.wait(10)


def test_calls_that_came_with_the_hello_are_run(tmp_path: Path) -> None:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    path = write_code(tmp_path, match_code("return {'entity': 'early'}"))
    call = {"id": 7, "kind": "match", "path": path, "deadline": time.monotonic() + 5}
    early = {"op": "calls", "calls": [{**call, "args": {"context": "ticket", "turn": TURN}}]}
    hello = {"root": str(tmp_path)}
    worker = Worker(theirs, hello, own_process=False, leave=lambda _code: None, early=[early])
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    frames = Frames()
    received: list[dict[str, Any]] = []
    while len(received) < 2:
        received += frames.feed(ours.recv(65536))
    assert received[0] == {"op": "ready"}
    assert received[1]["value"] == {"entity": "early"}
    ours.close()
    thread.join(10)
    theirs.close()
