"""The `/v1` routes over runs: start one, read one, fire an event, decide an approval card.

They call the server's `RunsBackend` (`keel.web.runs`); on a server without runs every one
answers 501 with the reason (503 when its worker stopped). A run or card id the backend
does not know is a 404. Starting a run or firing an event answers once each run has taken
its first step (or a few seconds have passed): the run goes on in the server, and `GET
/v1/runs/{id}` follows it. A run's `model` is the caller's pick only within bounds
(`chosen_by_caller`: no file or server outside the brain and the server's own).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from fastapi import APIRouter, Depends, Path, Query

from keel.runs.service import hook_events, unheard
from keel.runtime.model_specs import chosen_by_caller
from keel.web.auth import require_token, served
from keel.web.bodies import DecisionBody, EventBody, RunBody
from keel.web.errors import RESPONSES, KeelJSON, Missing
from keel.web.intake import JSONRoute
from keel.web.limits import MAX_NAME
from keel.web.runs import Run, Where
from keel.web.service import Service
from keel.web.shapes import read_back

router = APIRouter(
    prefix="/v1", dependencies=[Depends(require_token)], responses=RESPONSES, route_class=JSONRoute
)
Svc = Annotated[Service, Depends(served)]
Ident = Annotated[str, Path(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00/]+$")]


@router.get("/runs", summary="The newest runs, newest first")
def get_runs(svc: Svc, limit: Annotated[int, Query(ge=0, le=1000)] = 50) -> KeelJSON:
    return KeelJSON({"runs": [r.to_json() for r in svc.runs.runs(limit=limit)]})


@router.post(
    "/runs",
    summary="Start a heartbeat or a scenario now",
    responses=read_back(
        "The run, as recorded once it took its first step.",
        GetRun=("/v1/runs/{run_id}", {"run_id": "$response.body#/id"}),
    ),
)
def post_run(body: RunBody, svc: Svc) -> KeelJSON:
    """The run as it started; hooks start from events (`POST /v1/events/{event}`)."""
    return KeelJSON(start_run(body, svc).to_json())


def start_run(body: RunBody, svc: Service) -> Run:
    """Start what a run body asks (shared with the dashboard's start form)."""
    start = body.start(model=_model(body.model, svc))
    svc.brain()
    return svc.runs.start(start)


@router.get("/runs/{run_id}", summary="One run: its status, steps and approval cards")
def get_run(run_id: Ident, svc: Svc) -> KeelJSON:
    found = svc.runs.run(run_id)
    if found is None:
        raise Missing(f"no run {run_id!r} — GET /v1/runs lists them")
    return KeelJSON(found.to_json())


@router.post(
    "/events/{event}",
    summary="Fire an event: the hooks that listen to it run",
    responses=read_back(
        "The event and the runs it started, each as recorded once it took its first step.",
        GetFirstRun=("/v1/runs/{run_id}", {"run_id": "$response.body#/runs/0/id"}),
    ),
)
def post_event(event: Ident, body: EventBody, svc: Svc) -> KeelJSON:
    started = fire_event(event, body, svc)
    return KeelJSON({"event": event, "runs": [r.to_json() for r in started]})


def fire_event(event: str, body: EventBody, svc: Service) -> Sequence[Run]:
    """Fire an event with a body's payload (shared with the dashboard's fire form): the
    runs of the hooks it started. An event no hook listens to is refused, as `keel fire`
    refuses it: a misspelt event would otherwise start nothing without a word."""
    brain = svc.brain()
    if event not in hook_events(brain):
        raise unheard(brain, event)
    return svc.runs.fire(
        event,
        body.payload,
        Where(bot=body.bot, chat=body.chat, thread=body.thread),
        model=_model(body.model, svc),
        event_id=body.event_id,
    )


def _model(spec: str | None, svc: Service) -> str | None:
    """The model a caller picked for a run, if it may pick that one (422 why not)."""
    if spec is None:
        return None
    return chosen_by_caller(spec, svc.engine.source.root, server=svc.model_spec)


@router.get("/approvals", summary="The approval cards still pending")
def get_approvals(svc: Svc) -> KeelJSON:
    return KeelJSON({"cards": [c.to_json() for c in svc.runs.cards()]})


@router.post("/approvals/{card}", summary="Approve or deny a pending approval card")
def post_approval(card: Ident, body: DecisionBody, svc: Svc) -> KeelJSON:
    """The card as decided; 409 when it was decided already, or when the brain's `people:`
    does not let `person` decide it (the refusal is recorded; the card stays pending)."""
    decided = svc.runs.decide(
        card,
        approve=body.decision == "approve",
        by=body.by,
        note=body.note,
        person=body.person,
    )
    if decided is None:
        raise Missing(f"no approval card {card!r} — GET /v1/approvals lists the pending ones")
    return KeelJSON(decided.to_json())
