"""A pipeline's conversation with Keel, seen from the worker's channel (run here as a guest)."""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keel.code import protocol
from keel.code.protocol import Frames, frame
from keel.code.worker import Worker
from tests.code.support import write_code

PIPELINE = (
    "from keel.code import CallFailed, define_pipeline\n\n\n"
    "async def run(ctx, vars):\n"
    "{body}\n\n\n"
    "pipeline = define_pipeline(run)\n"
)


class Keel:
    """Keel's end of a guest worker's channel."""

    def __init__(self, sock: socket.socket) -> None:
        self.sock = sock
        self.frames = Frames()
        self.inbox: list[dict[str, Any]] = []

    def send(self, message: dict[str, Any]) -> None:
        self.sock.sendall(frame(message))

    def start(self, root: Path, body: str, *, deadline_in: float) -> int:
        lines = "\n".join(f"    {line}" for line in body.splitlines())
        path = write_code(root, PIPELINE.format(body=lines), suffix=".pipeline.py")
        args = {
            "scenario": "s",
            "vars": {"who": "ann"},
            "run_id": "r",
            "started_at": "2026-05-01T09:30:00+00:00",
        }
        call = {"id": 1, "kind": "pipeline", "path": path, "args": args}
        self.send({"op": "calls", "calls": [call | {"deadline": time.monotonic() + deadline_in}]})
        return 1

    def next(self) -> dict[str, Any]:
        while not self.inbox:
            data = self.sock.recv(65536)
            assert data, "the worker hung up"
            self.inbox.extend(self.frames.feed(data))
        return self.inbox.pop(0)


@pytest.fixture
def keel(tmp_path: Path) -> Iterator[Keel]:
    ours, theirs = socket.socketpair()
    ours.settimeout(10)
    left = threading.Event()
    hello = {"root": str(tmp_path)}
    worker = Worker(theirs, hello, own_process=False, leave=lambda _code: left.set())
    thread = threading.Thread(target=worker.serve, daemon=True)
    thread.start()
    keel = Keel(ours)
    assert keel.next() == {"op": "ready"}
    yield keel
    ours.close()
    thread.join(10)
    assert left.is_set()
    theirs.close()


def test_the_clock_stops_while_keel_answers(keel: Keel, tmp_path: Path) -> None:
    ident = keel.start(
        tmp_path, "got = await ctx.send(chat='c', text=vars.who)\nreturn got", deadline_in=0.3
    )
    before = time.monotonic()
    ask = keel.next()
    assert {k: v for k, v in ask.items() if k != "at"} == {
        "op": "ask",
        "id": ident,
        "seq": 1,
        "name": "send",
        "args": {"chat": "c", "text": "ann", "about": None},
    }
    assert ask["at"] <= time.monotonic()
    # Past the deadline the call was given: had its clock run on, the worker would have
    # said it was overdue before anything else.
    time.sleep(max(0.0, ask["at"] + 0.5 - time.monotonic()))
    assert time.monotonic() - before >= 0.3
    keel.send(
        {"op": "answer", "id": ident, "seq": 1, "deadline": time.monotonic() + 5, "value": "m1"}
    )
    assert keel.next() == {"op": "done", "id": ident, "line": 4, "value": "m1", "log": []}


def test_the_clock_runs_again_to_the_deadline_keel_sets(keel: Keel, tmp_path: Path) -> None:
    ident = keel.start(
        tmp_path,
        "await ctx.send(chat='c', text='t')\nwhile not ctx.signal.wait(0.01):\n    pass",
        deadline_in=5,
    )
    assert keel.next()["op"] == "ask"
    keel.send({"op": "answer", "id": ident, "seq": 1, "deadline": time.monotonic() + 0.1})
    assert keel.next() == {"op": "overdue", "id": ident, "line": 6}
    assert keel.next() == {"op": "finished", "id": ident}


def test_an_error_and_a_stop_reach_the_pipeline(keel: Keel, tmp_path: Path) -> None:
    body = (
        "try:\n"
        "    await ctx.send(chat='c', text='t')\n"
        "except CallFailed as exc:\n"
        "    ctx.log(exc.call, exc.kind, exc)\n"
        "try:\n"
        "    await ctx.send(chat='c', text='again')\n"
        "except BaseException as exc:\n"
        "    ctx.log(type(exc).__name__)\n"
        "    raise\n"
        "return 'not reached'"
    )
    ident = keel.start(tmp_path, body, deadline_in=5)
    assert keel.next()["seq"] == 1
    error = {"type": "Refused", "said": "no send here", "terminal": False}
    keel.send(
        {"op": "answer", "id": ident, "seq": 1, "deadline": time.monotonic() + 5, "error": error}
    )
    assert keel.next()["seq"] == 2
    keel.send(
        {"op": "answer", "id": ident, "seq": 2, "deadline": time.monotonic() + 5, "cancel": "stop"}
    )
    done = keel.next()
    assert done["log"] == ["send Refused no send here", "Cancelled"]
    assert done["raised"]["type"] == "Cancelled"


def test_an_answer_for_no_call_is_ignored(keel: Keel, tmp_path: Path) -> None:
    keel.send({"op": "answer", "id": 99, "seq": 1, "deadline": time.monotonic() + 5, "value": 1})
    ident = keel.start(tmp_path, "return await ctx.await_approval('card-1')", deadline_in=5)
    ask = keel.next()
    assert (ask["name"], ask["args"]) == ("await_approval", {"card": "card-1"})
    # An answer to an ask that is not the one waiting (a stale one) changes nothing.
    keel.send({"op": "answer", "id": ident, "seq": 7, "deadline": time.monotonic() + 5, "value": 0})
    keel.send(
        {"op": "answer", "id": ident, "seq": 1, "deadline": time.monotonic() + 5, "value": True}
    )
    assert keel.next()["value"] is True


def test_arguments_too_large_to_send_fail_in_the_pipeline(
    keel: Keel, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(protocol, "MAX_FRAME", 1000)
    ident = keel.start(tmp_path, "await ctx.send(chat='c', text='x' * 2000)", deadline_in=5)
    done = keel.next()
    assert (done["op"], done["id"]) == ("done", ident)
    assert done["raised"]["type"] == "ValueError"
    assert done["raised"]["said"].startswith("ctx.send: its arguments are too large to send")
