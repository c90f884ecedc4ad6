"""The bearer token: asked on every `/v1` route, and by the dashboard, when one is set.

Without a token the server trusts whoever reaches it, so it binds to loopback by default.
With one, an API client sends `Authorization: Bearer TOKEN`; a person signs in to the
dashboard once at `/login`, which sets the token as an HttpOnly, SameSite=Strict cookie.
Tokens are compared in constant time. The dashboard's forms (an approval decision, and
those of `keel.web.forms`) also refuse a cross-site submission, token or not: its `Origin`
must be this server.
"""

from __future__ import annotations

import secrets
from typing import Annotated

from fastapi import Depends, HTTPException, Request
from fastapi.responses import JSONResponse
from fastapi.security import HTTPAuthorizationCredentials, HTTPBearer
from starlette.requests import HTTPConnection
from starlette.types import ASGIApp, Receive, Scope, Send

from keel.web.service import Service

COOKIE = "keel_token"
UNAUTHORIZED = "a bearer token is required: send Authorization: Bearer <token>"
CHALLENGE = {"WWW-Authenticate": "Bearer"}
_bearer = HTTPBearer(auto_error=False, description="The token given to `keel serve --token`.")


def service(request: HTTPConnection) -> Service:
    """The server's `Service`."""
    found: Service = request.app.state.service
    return found


# The routes' dependencies are coroutines though they wait for nothing: FastAPI runs a
# plain function dependency in its thread pool, a thread hop each per request (a tenth of
# a turn's cost on the server, bench/service_load.py).


async def served(request: Request) -> Service:
    """`service` as a route's dependency."""
    return service(request)


def matches(expected: str | None, given: str | None) -> bool:
    """Whether `given` is the token (always true when no token is set)."""
    if expected is None:
        return True
    return given is not None and secrets.compare_digest(expected.encode(), given.encode())


async def require_token(
    request: Request,
    credentials: Annotated[HTTPAuthorizationCredentials | None, Depends(_bearer)],
) -> None:
    """The `/v1` routes' guard: 401 unless the bearer token (or the dashboard's cookie) is
    the server's. `TokenGate` answers first; this declares the scheme in the OpenAPI
    document, and guards a route mounted without the gate."""
    expected = service(request).token
    given = credentials.credentials if credentials is not None else None
    if matches(expected, given) or matches(expected, request.cookies.get(COOKIE)):
        return
    raise HTTPException(status_code=401, detail=UNAUTHORIZED, headers=CHALLENGE)


class TokenGate:
    """Answers a `/v1` request that lacks the token with 401 before anything reads it.

    A route's dependency runs after FastAPI has parsed the body, so a bad body sent with
    no token got a 422 describing the route; the gate refuses it as it should, first.
    """

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        guarded = scope["type"] == "http" and str(scope["path"]).startswith("/v1/")
        if guarded and scope["app"].state.service.token and not signed_in(HTTPConnection(scope)):
            refused = JSONResponse({"detail": UNAUTHORIZED}, 401, headers=CHALLENGE)
            await refused(scope, receive, send)
            return
        await self.app(scope, receive, send)


def signed_in(request: HTTPConnection) -> bool:
    """Whether a dashboard request carries the token (in its cookie or its header)."""
    expected = service(request).token
    header = request.headers.get("authorization", "")
    scheme, _, given = header.partition(" ")
    bearer = given if scheme.lower() == "bearer" else None
    return matches(expected, request.cookies.get(COOKIE)) or matches(expected, bearer)


def same_origin(request: Request) -> bool:
    """Whether a form post comes from this server's own pages (no Origin: not a browser's
    cross-site post, which always sends one)."""
    if request.headers.get("sec-fetch-site") == "cross-site":
        return False
    origin = request.headers.get("origin")
    if origin is None or origin == "null":
        return origin is None
    host = request.headers.get("host", "")
    return origin.split("://", 1)[-1] == host
