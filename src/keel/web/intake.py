"""What a request's body goes through before a route sees it: its size, then its JSON.

`BodyLimit` answers 413 to a body larger than the server's bound (`Service.max_body`,
`keel serve --max-body`) before anything parses it: at once when its `Content-Length`
says so, else as its bytes arrive (a chunked body declares no length), reading no further
than one byte past the bound. A body within the bound is handed on whole.

`JSONRoute` is the `/v1` routes' route class: it parses a JSON body so that every body
that is not JSON is a 422 with the parser's reason — not FastAPI's 400 for the ways the
parser fails other than a syntax error (bytes that are not UTF-8, nesting deeper than
Python's parser goes). How deep a free-form value may nest is the bodies' business
(`keel.web.bodies`): the bound there is far below where the parser stops.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Coroutine
from typing import Any

from fastapi import Request, Response
from fastapi.routing import APIRoute
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from keel.web.errors import KeelJSON


def too_large(limit: int) -> str:
    """Why a body was refused: the bound, and what to do."""
    return (
        f"the request's body is larger than {limit:,} bytes, this server's bound — send "
        "less, or serve with a larger keel serve --max-body"
    )


class BodyLimit:
    """Answers 413 to a request whose body is larger than the server's bound; see the
    module docstring."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        limit: int = scope["app"].state.service.max_body
        declared = _content_length(scope)
        if declared is not None and declared > limit:
            await _refuse(limit, scope, receive, send)
            return
        body = bytearray()
        while True:
            message = await receive()
            if message["type"] != "http.request":
                return  # the client went away before its body ended: nobody to answer
            body += message.get("body", b"")
            if len(body) > limit:
                await _refuse(limit, scope, receive, send)
                return
            if not message.get("more_body", False):
                break
        await self.app(scope, _replaying(bytes(body), receive), send)


def _content_length(scope: Scope) -> int | None:
    for name, value in scope["headers"]:
        if name == b"content-length":
            try:
                return int(value)
            except ValueError:
                return None  # the server refuses such a request; count the bytes anyway
    return None


async def _refuse(limit: int, scope: Scope, receive: Receive, send: Send) -> None:
    # The rest of the body is never read: the connection cannot be used again.
    answer = KeelJSON({"detail": too_large(limit)}, 413, headers={"connection": "close"})
    await answer(scope, receive, send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """`receive` with the body, read already, as its first message."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if sent:
            return await receive()  # what comes after the body: a disconnect
        sent = True
        return {"type": "http.request", "body": body, "more_body": False}

    return replay


class JSONBody(Request):
    """A request whose JSON body, when it cannot be parsed, says why as a JSON error."""

    async def json(self) -> Any:
        body = await self.body()
        try:
            return json.loads(body)
        except UnicodeDecodeError as exc:
            reason = f"the body is not UTF-8 (byte {exc.start} is {body[exc.start]:#04x})"
            raise _invalid(reason, body, exc.start) from None
        except RecursionError:
            raise _invalid("the body is nested deeper than the parser goes", body, 0) from None


def _invalid(reason: str, body: bytes, at: int) -> json.JSONDecodeError:
    return json.JSONDecodeError(reason, body.decode("utf-8", "replace"), at)


class JSONRoute(APIRoute):
    """A route whose JSON body is parsed by `JSONBody`."""

    def get_route_handler(self) -> Callable[[Request], Coroutine[Any, Any, Response]]:
        handler = super().get_route_handler()

        async def handle(request: Request) -> Response:
            return await handler(JSONBody(request.scope, request.receive))

        return handle
