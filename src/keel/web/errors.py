"""Keel's errors as HTTP answers, mapped in one place.

    Refused, LinkError     409  {"refused": reason}
    FitOverflow            409  {"overflow": reason, "fit": {estimate, window, ...}}
    UsageError             422  {"detail": reason}
    a body or query that does not validate (or a body that is not JSON)
                           422  {"detail": [{"loc": [...], "msg": ..., "type": ...}]}
    a body larger than the server's bound
                           413  {"detail": reason}       (`keel.web.intake`)
    a missing thing        404  {"detail": reason}       (raised by the routes)
    RunsUnavailable        501  {"detail": reason}       (no runs on this server)
    RunsDown               503  {"detail": reason}       (its worker stopped)
    StoreError             503  {"detail": reason}
    ContentError           503  {"detail": reason}       (the brain cannot be used)

A turn that does not fit is a 409, not a 422: the body was well formed, and the same body
is answered once a budget or the model's window is raised in the brain. Anything else that
escapes a route is a bug, and is left to the server's 500. Every answer is JSON written
with `ensure_ascii=False`; a lone surrogate (from a path that decoded to one) is written
as its escape, so an answer can always be encoded.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse

from keel.brain.problems import did_you_mean
from keel.errors import ContentError, FitOverflow, LinkError, Refused, StoreError, UsageError
from keel.web.runs import RunsDown, RunsUnavailable


class KeelJSON(JSONResponse):
    """JSON that can always be encoded: a lone surrogate becomes its `\\udXXX` escape."""

    def render(self, content: Any) -> bytes:
        text = json.dumps(content, ensure_ascii=False, separators=(",", ":"))
        return text.encode("utf-8", "backslashreplace")


class Missing(LookupError):
    """A route's thing (a turn, a role, a run, a card) does not exist: 404 with the reason."""


def _answer(status: int, body: Mapping[str, Any]) -> KeelJSON:
    return KeelJSON(dict(body), status_code=status)


async def _refused(_: Request, exc: Exception) -> KeelJSON:
    return _answer(409, {"refused": str(exc)})


async def _overflow(_: Request, exc: Exception) -> KeelJSON:
    details = exc.details if isinstance(exc, FitOverflow) else {}
    return _answer(409, {"overflow": str(exc), "fit": details})


async def _usage(_: Request, exc: Exception) -> KeelJSON:
    return _answer(422, {"detail": str(exc)})


async def _missing(_: Request, exc: Exception) -> KeelJSON:
    return _answer(404, {"detail": str(exc)})


async def _unavailable(_: Request, exc: Exception) -> KeelJSON:
    return _answer(501, {"detail": str(exc)})


async def _store(_: Request, exc: Exception) -> KeelJSON:
    return _answer(503, {"detail": str(exc)})


async def _invalid(request: Request, exc: Exception) -> KeelJSON:
    """The body or query did not validate: each problem with where it is (no input echo)."""
    errors = exc.errors() if isinstance(exc, RequestValidationError) else []
    as_json = "json" in request.headers.get("content-type", "")
    fields = _body_fields(request)
    detail = [
        {
            "loc": [str(part) for part in e.get("loc", ())],
            "msg": f"{_said(e, as_json=as_json)}{_near(e, fields)}",
            "type": e.get("type"),
        }
        for e in errors
    ]
    return _answer(422, {"detail": detail})


def _body_fields(request: Request) -> tuple[str, ...]:
    """The fields the route's body takes (none when it takes no body model)."""
    route = request.scope.get("route")
    field = getattr(route, "body_field", None)
    model = getattr(getattr(field, "field_info", None), "annotation", None)
    known = getattr(model, "model_fields", None)
    return tuple(known) if isinstance(known, dict) else ()


def _near(error: Mapping[str, Any], fields: tuple[str, ...]) -> str:
    """For a body field the route does not take: the one meant, or the ones it takes."""
    loc = tuple(error.get("loc", ()))
    if error.get("type") != "extra_forbidden" or len(loc) != 2 or loc[0] != "body":
        return ""
    return did_you_mean(str(loc[1]), fields) if fields else ""


# What a whole body that is no object fails with: without a JSON content-type, the body
# is never parsed, so a JSON object sent so fails as "not a dictionary".
_NOT_AN_OBJECT = frozenset({"model_attributes_type", "dict_type"})


def _said(error: Mapping[str, Any], *, as_json: bool) -> Any:
    """A problem's message; a body that is not JSON says the parser's reason too, and one
    sent without a JSON content-type says to send it with one."""
    reason = (error.get("ctx") or {}).get("error")
    if error.get("type") == "json_invalid" and isinstance(reason, str):
        return f"{error.get('msg')}: {reason}"
    if not as_json and error.get("type") in _NOT_AN_OBJECT and tuple(error["loc"]) == ("body",):
        return (
            "the body was not read as JSON: send it with the header content-type: application/json"
        )
    return error.get("msg")


def install(app: FastAPI) -> None:
    """Map Keel's errors on `app`."""
    app.add_exception_handler(RequestValidationError, _invalid)
    app.add_exception_handler(Refused, _refused)
    app.add_exception_handler(LinkError, _refused)
    app.add_exception_handler(FitOverflow, _overflow)
    app.add_exception_handler(UsageError, _usage)
    app.add_exception_handler(Missing, _missing)
    app.add_exception_handler(RunsUnavailable, _unavailable)
    app.add_exception_handler(RunsDown, _store)
    app.add_exception_handler(StoreError, _store)
    app.add_exception_handler(ContentError, _store)


RESPONSES: dict[int | str, dict[str, Any]] = {
    401: {"description": "A bearer token is required (`--token`), and was missing or wrong."},
    404: {"description": 'No such thing: `{"detail": reason}`.'},
    409: {
        "description": 'Refused (`{"refused": reason}`), or a turn that does not fit '
        '(`{"overflow": reason, "fit": {...}}`).'
    },
    413: {"description": "A body larger than the server's bound (`keel serve --max-body`)."},
    422: {"description": "A body, path or query that is not valid, or a request Keel cannot do."},
    501: {"description": 'This server runs no runs: `{"detail": reason}`.'},
    503: {
        "description": "The database cannot be used, or the runs worker stopped: "
        '`{"detail": reason}`.'
    },
}
