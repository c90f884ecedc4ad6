"""What a request's body goes through before a route sees it: its JSON.

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
