"""The dashboard's forms that act: try a message, start a run, fire an event, what-if.

    /try        a message as a person would send it: lands on its turn's inspector, or
                (dry run) shows the would-be turn on the inspector without recording it
    /start      start a heartbeat or scenario (POST /start), or fire an event (POST /fire):
                lands on the run's page
    /what-if    the window's turns re-fitted under changed knobs, before and after

Each form builds the body of its `/v1` route (`keel.web.bodies`) from its fields and calls
the work that route does (`take_turn`, `start_run`, `fire_event`, `what_if_of`), so a form
checks and does exactly what the API does. Whatever is refused — a field the body does
not accept, a payload that is not a JSON object, a role the brain lacks, a run the runs
backend will not start — comes back on the same form, its fields as they were typed, with
the reason next to the field it is about (or above the form), and the status the API
would answer. A post is taken only from the dashboard's own pages (`same_origin`) and,
with a token, from a signed-in person: the rules of an approval decision.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar
from urllib.parse import parse_qs, quote, urlencode

import anyio.to_thread
from fastapi import APIRouter, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from pydantic import ValidationError

from keel.errors import (
    ContentError,
    FitOverflow,
    KeelError,
    LinkError,
    Refused,
    StoreError,
    UsageError,
)
from keel.ledger import explain
from keel.ledger.knob_set import parse_override
from keel.link.values import id_problem
from keel.web.api import Decided, take_turn, what_if_of
from keel.web.api_runs import fire_event, start_run
from keel.web.auth import same_origin, service
from keel.web.bodies import EventBody, RunBody, TurnBody, WhatIfBody
from keel.web.inspector import inspect_turn
from keel.web.pages import Guarded, moved_on, page
from keel.web.runs import RunsDown, RunsUnavailable
from keel.web.service import Service

router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)
T = TypeVar("T")
# The what-if form's own knob fields (any other knob goes in its "more" field).
KNOBS = (
    ("contexts.maxActive", "Contexts attached at most per turn"),
    ("contexts.turnChars", "Characters of contexts per turn"),
    ("state.rows", "Rows a view shows"),
    ("model.window", "Model window (tokens)"),
)
NOT_HERE = "a form must be sent from this dashboard's own page"
INVALID = "Some fields are not valid: see the reason under each."


@dataclass(frozen=True, slots=True, kw_only=True)
class Problem:
    """Why a form was refused: the status the API would answer, the reason, and the
    reasons that belong to a field (by the field's name)."""

    status: int
    reason: str = ""
    fields: Mapping[str, str] = field(default_factory=dict)


async def fields_of(request: Request) -> dict[str, str]:
    """A posted form's fields (the first value of each); its size is bounded before this
    by the server's body limit (`keel.web.intake`)."""
    text = (await request.body()).decode("utf-8", "replace")
    return {name: values[0] for name, values in parse_qs(text, keep_blank_values=True).items()}


def given(fields: Mapping[str, str], name: str) -> str | None:
    """A field's value, or None when left blank (the body's default then applies)."""
    value = fields.get(name, "").strip()
    return value or None


def problem_of(exc: Exception, renamed: Mapping[str, str] | None = None) -> Problem:
    """A refusal as the form shows it, with the status the API answers for it
    (`keel.web.errors`); `renamed` maps a body's field to the form's."""
    if isinstance(exc, ValidationError):
        found: dict[str, str] = {}
        for error in exc.errors():
            loc = [str(part) for part in error.get("loc", ())]
            name = (renamed or {}).get(loc[0], loc[0]) if loc else ""
            # pydantic prefixes a validator's own reason; the form shows the reason alone
            said = str(error.get("msg", "is not valid")).removeprefix("Value error, ")
            found.setdefault(name, said)
        return Problem(status=422, reason=INVALID, fields=found)
    if isinstance(exc, FitOverflow | Refused | LinkError):
        return Problem(status=409, reason=str(exc))
    if isinstance(exc, RunsDown | StoreError | ContentError):
        return Problem(status=503, reason=str(exc))
    if isinstance(exc, RunsUnavailable):
        return Problem(status=501, reason=str(exc))
    return Problem(status=422, reason=str(exc))


def json_object(text: str, name: str) -> dict[str, Any]:
    """A JSON-object field's value ({} when blank); `FieldProblem` says what is wrong."""
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        where = f"line {exc.lineno} column {exc.colno}"
        raise FieldProblem(name, f"is not JSON: {exc.msg} at {where}") from None
    if not isinstance(value, dict):
        raise FieldProblem(name, 'must be a JSON object, such as {"ticket": "T-1"}')
    return value


class FieldProblem(ValueError):
    """One form field cannot be read into its body."""

    def __init__(self, name: str, reason: str) -> None:
        super().__init__(reason)
        self.name = name
        self.reason = reason


async def attempt(call: Callable[[], T], renamed: Mapping[str, str] | None = None) -> T | Problem:
    """`call`'s result, or the `Problem` that says why it was refused. Off the event loop:
    the work waits for the database, a model, or a run's first step."""
    try:
        return await anyio.to_thread.run_sync(call)
    except FieldProblem as exc:
        return Problem(status=422, reason=INVALID, fields={exc.name: exc.reason})
    except (ValidationError, KeelError) as exc:
        return problem_of(exc, renamed)


# -- try a message --------------------------------------------------------------------------

TURN_FIELDS = {"input": "text"}  # the body's field -> the form's


def choices(svc: Service) -> dict[str, Any]:
    """What the forms offer to pick from: the brain's bots, roles, runs and events."""
    brain = svc.brain()
    entities = brain.entities.values()
    return {
        "bots": list(brain.access.bots),
        "roles": sorted(brain.roles),
        "startable": sorted(e.key for e in entities if e.kind in ("heartbeat", "scenario")),
        "events": sorted({e.event for e in entities if e.kind == "hook" and e.event}),
    }


def try_page(
    request: Request, fields: Mapping[str, str], problem: Problem | None = None
) -> HTMLResponse:
    status = problem.status if problem is not None else 200
    values = {**first_room(service(request)), **fields}
    return page(
        request, "try.html", status, values=values, problem=problem, **choices(service(request))
    )


def first_room(svc: Service) -> dict[str, str]:
    """Where the try form starts: the first group rule's bot and chat in access.yaml (a
    room a turn can be taken in as it stands), else `keel turn`'s own cli/cli."""
    rule = next((r for r in svc.brain().access.rules if r.is_group and r.role), None)
    if rule is None:
        return {"bot": "cli", "chat": "cli"}
    return {"bot": rule.bot, "chat": rule.scope}


@router.get("/try", dependencies=[Guarded])
def try_form(request: Request) -> HTMLResponse:
    return try_page(request, dict(request.query_params))


def turn_body(fields: Mapping[str, str]) -> TurnBody:
    return TurnBody.model_validate(
        {
            "bot": fields.get("bot", "").strip(),
            "chat": fields.get("chat", "").strip(),
            "thread": given(fields, "thread"),
            "role": given(fields, "role"),
            "sender": given(fields, "sender"),
            "input": fields.get("text", ""),
            "reply_to": [reply] if (reply := given(fields, "reply_to")) else [],
            "dry_run": fields.get("dry_run") == "on",
        }
    )


@router.post("/try", dependencies=[Guarded])
async def try_message(request: Request) -> Response:
    """Take the turn; land on its inspector (a dry run's is shown here, unrecorded)."""
    if not same_origin(request):
        return page(request, "missing.html", 403, what=NOT_HERE)
    fields = await fields_of(request)
    svc: Service = service(request)
    done = await attempt(lambda: take_turn(turn_body(fields), svc), TURN_FIELDS)
    if isinstance(done, Problem):
        return try_page(request, fields, done)
    if isinstance(done, Decided):  # a yes or no to a pending card: its run's page
        run_id = done.card.run_id or ""
        await anyio.to_thread.run_sync(moved_on, svc, run_id)
        told = urlencode({"decided": done.card.id, "run": run_id})
        return RedirectResponse(f"/runs/{_q(run_id)}?{told}", status_code=303)
    journal = done.prepared.journal
    if journal is None:  # a prepared turn always journals; a guard for the type checker
        return try_page(request, fields, Problem(status=422, reason="the turn journaled nothing"))
    if journal.id is not None:
        return RedirectResponse(f"/turns/{journal.id}", status_code=303)
    view = inspect_turn(journal, done.assembly.history, explain(svc.brain(), journal))
    return page(request, "turn.html", view=view, journal=journal, dry=fields)


# -- start a run, fire an event -------------------------------------------------------------


def start_page(
    request: Request,
    fields: Mapping[str, str],
    problem: Problem | None = None,
    *,
    form: str = "",
    note: str = "",
) -> HTMLResponse:
    status = problem.status if problem is not None else 200
    return page(
        request,
        "start.html",
        status,
        values=fields,
        problem=problem,
        form=form,
        note=note,
        **choices(service(request)),
    )


@router.get("/start", dependencies=[Guarded])
def start_form(request: Request) -> HTMLResponse:
    return start_page(request, dict(request.query_params))


def run_body(fields: Mapping[str, str]) -> RunBody:
    return RunBody.model_validate(
        {
            "run": fields.get("run", "").strip(),
            "entity": given(fields, "entity"),
            "chat": given(fields, "chat"),
            "input": fields.get("input", ""),
            "vars": json_object(fields.get("vars", ""), "vars"),
            "model": given(fields, "model"),
        }
    )


@router.post("/start", dependencies=[Guarded])
async def start(request: Request) -> Response:
    """Start the run; land on its page."""
    if not same_origin(request):
        return page(request, "missing.html", 403, what=NOT_HERE)
    fields = await fields_of(request)
    svc: Service = service(request)
    done = await attempt(lambda: start_run(run_body(fields), svc))
    if isinstance(done, Problem):
        return start_page(request, fields, done, form="run")
    return RedirectResponse(f"/runs/{_q(done.id)}", status_code=303)


def event_body(fields: Mapping[str, str]) -> tuple[str, EventBody]:
    event = fields.get("event", "").strip()
    if (wrong := id_problem(event, "the event")) is not None or "/" in event:
        raise FieldProblem("event", wrong or "may not hold a slash")
    body = EventBody.model_validate(
        {
            "payload": json_object(fields.get("payload", ""), "payload"),
            "chat": given(fields, "chat"),
            "model": given(fields, "model"),
        }
    )
    return event, body


@router.post("/fire", dependencies=[Guarded])
async def fire(request: Request) -> Response:
    """Fire the event; land on the page of the run it started (the runs list for several)."""
    if not same_origin(request):
        return page(request, "missing.html", 403, what=NOT_HERE)
    fields = await fields_of(request)
    svc: Service = service(request)

    def fired() -> tuple[str, list[str]]:
        event, body = event_body(fields)
        return event, [run.id for run in fire_event(event, body, svc)]

    done = await attempt(fired)
    if isinstance(done, Problem):
        return start_page(request, fields, done, form="event")
    event, started = done
    if not started:
        note = f"No run started for {event!r}."
        return start_page(request, fields, form="event", note=note)
    if len(started) > 1:
        return RedirectResponse("/runs", status_code=303)
    return RedirectResponse(f"/runs/{_q(started[0])}", status_code=303)


def _q(text: str) -> str:
    return quote(text, safe="")


# -- what-if --------------------------------------------------------------------------------


def what_if_page(
    request: Request, fields: Mapping[str, str], problem: Problem | None = None, report: Any = None
) -> HTMLResponse:
    status = problem.status if problem is not None else 200
    values = {"since": "7d", **fields}
    return page(
        request,
        "whatif.html",
        status,
        values=values,
        problem=problem,
        report=report,
        knobs=KNOBS,
        **choices(service(request)),
    )


@router.get("/what-if", dependencies=[Guarded])
def what_if_form(request: Request) -> HTMLResponse:
    return what_if_page(request, dict(request.query_params))


def knob_settings(fields: Mapping[str, str]) -> dict[str, int | str]:
    """The knobs the form sets: its own fields, then each `KEY=VALUE` line of "more"."""
    found: dict[str, int | str] = {}
    for key, _ in KNOBS:
        if (value := given(fields, key)) is not None:
            setting = f"{key}={value}"
            try:  # checked here too, so the reason stands under its own field
                parse_override(setting)
            except UsageError as exc:
                raise FieldProblem(key, str(exc).removeprefix(f"--set {setting!r}: ")) from None
            found[key] = _number(value)
    for line in fields.get("more", "").splitlines():
        if not line.strip():
            continue
        key, sep, value = line.partition("=")
        if not sep or not key.strip():
            raise FieldProblem("more", f"{line.strip()!r}: write KEY=VALUE, one a line")
        found[key.strip()] = _number(value.strip())
    return found


def _number(text: str) -> int | str:
    """A whole number as one, else the text (the body's check then says what is wrong)."""
    try:
        return int(text)
    except ValueError:
        return text


def what_if_body(fields: Mapping[str, str]) -> WhatIfBody:
    return WhatIfBody.model_validate(
        {
            "set": knob_settings(fields),
            "since": fields.get("since", "").strip() or "7d",
            "role": given(fields, "role"),
            "chat": given(fields, "chat"),
        }
    )


@router.post("/what-if", dependencies=[Guarded])
async def what_if(request: Request) -> Response:
    """The window re-fitted under the form's knobs, before and after; nothing recorded."""
    if not same_origin(request):
        return page(request, "missing.html", 403, what=NOT_HERE)
    fields = await fields_of(request)
    svc: Service = service(request)
    done = await attempt(lambda: what_if_of(what_if_body(fields), svc), {"set": "more"})
    if isinstance(done, Problem):
        return what_if_page(request, fields, done)
    return what_if_page(request, fields, report=done)
