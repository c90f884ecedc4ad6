"""A body larger than the server's bound is answered 413 before anything parses it, whether
its length is declared or only counted as it arrives; a body within the bound is served.

The bound is the service's (`build_service(max_body=...)`, `keel serve --max-body`): the
tests serve the reference brain with a small one, so a body at the bound is still a turn
Keel takes, and once with the default, for the 50 MB fire that once answered 200 and lost
its run.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from fastapi import FastAPI
from fastapi.testclient import TestClient
from starlette.types import Message, Scope

from keel.web.intake import too_large
from keel.web.limits import MAX_BODY_BYTES
from keel.web.service import Service
from keel.web.serving import build_service
from tests.runtime.driver import copy_reference
from tests.web.memory_runs import MemoryRuns

BOUND = 2_048
TURN = {"bot": "nova", "chat": "tg:chat:-1002000000101", "dry_run": True}
JSON = {"content-type": "application/json"}


def serve(tmp_path: Path, **options: Any) -> tuple[Service, FastAPI]:
    """The reference brain served on SQLite with the in-memory runs backend."""
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'keel.db').as_posix()}"
    return build_service(brain, url, seed=False, runs=MemoryRuns(), env={}, **options)


@pytest.fixture
def bounded(tmp_path: Path) -> Iterator[FastAPI]:
    svc, app = serve(tmp_path, max_body=BOUND)
    yield app
    svc.engine.close()


def turn_of(size: int) -> bytes:
    """A dry-run turn whose body is exactly `size` bytes."""
    bare = json.dumps({**TURN, "input": ""}).encode()
    return json.dumps({**TURN, "input": "x" * (size - len(bare))}).encode()


def chunks(body: bytes, size: int = 256) -> Iterator[bytes]:
    """The body in pieces: sent chunked, with no Content-Length."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("chunked", [False, True], ids=["with-a-length", "chunked"])
def test_a_body_at_the_bound_is_served_and_one_byte_more_is_413(
    bounded: FastAPI, chunked: bool
) -> None:
    client = TestClient(bounded)
    at, over = turn_of(BOUND), turn_of(BOUND + 1)
    assert (len(at), len(over)) == (BOUND, BOUND + 1)
    served = client.post("/v1/turns", content=chunks(at) if chunked else at, headers=JSON)
    assert served.status_code == 200, served.text
    refused = client.post("/v1/turns", content=chunks(over) if chunked else over, headers=JSON)
    assert refused.status_code == 413
    assert refused.json() == {"detail": too_large(BOUND)}
    assert "2,048 bytes" in refused.json()["detail"]


def test_a_declared_length_past_the_bound_is_413_before_the_body_is_parsed(
    bounded: FastAPI,
) -> None:
    # Not JSON: a server that parsed it would answer 422.
    answer = TestClient(bounded).post("/v1/turns", content=b"{" * (BOUND + 1), headers=JSON)
    assert answer.status_code == 413
    assert answer.headers["connection"] == "close"


def test_a_streamed_body_is_read_no_further_than_one_byte_past_the_bound(
    bounded: FastAPI,
) -> None:
    pieces = [b"x" * 1_000] * 50  # 50 KB, no Content-Length
    taken: list[int] = []
    sent: list[Message] = []

    async def receive() -> Message:
        taken.append(len(taken))
        more = len(taken) < len(pieces)
        return {"type": "http.request", "body": pieces[len(taken) - 1], "more_body": more}

    async def send(message: Message) -> None:
        sent.append(message)

    scope: Scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": "POST",
        "scheme": "http",
        "path": "/v1/turns",
        "raw_path": b"/v1/turns",
        "root_path": "",
        "query_string": b"",
        "headers": [(b"content-type", b"application/json"), (b"host", b"testserver")],
        "client": ("127.0.0.1", 1),
        "server": ("testserver", 80),
        "state": {},
    }
    anyio.run(bounded, scope, receive, send)
    assert sent[0]["status"] == 413
    assert len(taken) == 3  # 3,000 bytes read: the third piece crossed 2,048


def test_the_token_is_asked_before_the_body_is_counted(tmp_path: Path) -> None:
    svc, app = serve(tmp_path, max_body=BOUND, token="t0ken")
    try:
        client = TestClient(app)
        over = turn_of(BOUND + 1)
        assert client.post("/v1/turns", content=over, headers=JSON).status_code == 401
        signed = {**JSON, "authorization": "Bearer t0ken"}
        assert client.post("/v1/turns", content=over, headers=signed).status_code == 413
    finally:
        svc.engine.close()


def test_a_50_mb_event_is_413_and_starts_no_run(tmp_path: Path) -> None:
    svc, app = serve(tmp_path)
    try:
        body = {"payload": {"ticket": "T-9", "blob": "x" * (50 << 20)}}
        answer = TestClient(app).post("/v1/events/ticket.opened", json=body)
        assert answer.status_code == 413
        assert answer.json() == {"detail": too_large(MAX_BODY_BYTES)}
        assert isinstance(svc.runs, MemoryRuns)
        assert svc.runs.fired == []
    finally:
        svc.engine.close()


def test_the_dashboard_is_bounded_too(bounded: FastAPI) -> None:
    form = {"decision": "deny", "back": "/runs", "note": "x" * BOUND}
    answer = TestClient(bounded).post("/runs/cards/card-1", data=form)
    assert answer.status_code == 413
