"""The dashboard: server-rendered pages over the same Engine the API uses.

    /                 System: the roles and their context use, recent turns, doctor, runs
    /roles/{role}     Context per role: agent_context, its findings, context size per turn
    /turns            Recorded turns;  /turns/{id}  the turn inspector
    /chats            Chats;  /chat?chat=...  one chat's bindings, kept contexts, turns, history
    /runs             Runs and pending approval cards;  /runs/{id}  one run's steps
    /doctor           The doctor report
    /login            Sign in with the server's token (only when it has one)

HTML from Jinja2 templates with one vendored stylesheet and one small script (sorting a
table; confirming a denial; deciding a card in place; keeping a run's page current);
charts are SVG drawn on the server. Nothing is loaded from elsewhere, so the dashboard
works offline. An approval decision posts back to the server, which checks it came from
its own page; so do the forms that act (`keel.web.forms`: try, start, fire, what-if).
"""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Annotated, Any
from urllib.parse import parse_qs, quote, urlencode

import anyio.to_thread
from fastapi import APIRouter, Depends, Query, Request
from fastapi.responses import HTMLResponse, RedirectResponse, Response
from fastapi.templating import Jinja2Templates

from keel.errors import KeelError, UsageError
from keel.ledger import DEFAULT_SINCE, parse_since
from keel.link.values import id_problem
from keel.web.auth import COOKIE, matches, same_origin, service, signed_in
from keel.web.charts import Point, size_chart
from keel.web.inspector import inspect_turn
from keel.web.reading import chats, recorded, role_findings, shown_history
from keel.web.runs import Card, RunsUnavailable
from keel.web.service import Service

HERE = Path(__file__).parent
templates = Jinja2Templates(directory=HERE / "templates")
templates.env.filters["q"] = lambda value: quote(str(value), safe="")
router = APIRouter(include_in_schema=False, default_response_class=HTMLResponse)
Svc = Annotated[Service, Depends(service)]
# Turns a role's chart and a turns list show at most.
SHOWN = 500
FORM_LIMIT = 4096
# How long a decision waits for its run to go on before the page is shown.
MOVE_ON_S = 3.0


class SignIn(Exception):
    """The dashboard asks for the token first."""


def guard(request: Request) -> None:
    if not signed_in(request):
        raise SignIn


Guarded = Depends(guard)


def page(request: Request, name: str, status: int = 200, **values: Any) -> HTMLResponse:
    svc: Service = service(request)
    brain = svc.brain()
    context = {
        "brain": brain.manifest.name or brain.root.name,
        "skips": brain.skips,
        "model": svc.model_spec,
        "runs_off": svc.runs.unavailable(),
        "token": svc.token is not None,
        "seeded": svc.seeded,
        "status": status,
        "notice": decided_notice(request, svc),
        **values,
    }
    return templates.TemplateResponse(request, name, context, status_code=status)


def _since(value: str) -> datetime:
    return parse_since(value, datetime.now(UTC))


@router.get("/", dependencies=[Guarded])
def system(request: Request, svc: Svc) -> HTMLResponse:
    brain = svc.brain()
    since = _since(DEFAULT_SINCE)
    roles = [(ident, svc.engine.report(ident, since=since)) for ident in sorted(brain.roles)]
    report = svc.engine.doctor()
    runs: Any = None
    if svc.runs.unavailable() is None:
        runs = {"runs": svc.runs.runs(limit=10), "cards": svc.runs.cards()}
    return page(
        request,
        "system.html",
        roles=roles,
        turns=svc.engine.turns(limit=15),
        findings=report.findings,
        failed=report.failed,
        runs=runs,
    )


@router.get("/roles/{role}", dependencies=[Guarded])
def role_page(request: Request, role: str, svc: Svc, since: str = DEFAULT_SINCE) -> Response:
    if (refused := _unusable(request, role=role)) is not None:
        return refused
    if role not in svc.brain().roles:
        return page(request, "missing.html", 404, what=f"no role '{role}' in this brain")
    try:
        start = _since(since)
    except UsageError as exc:
        return page(request, "missing.html", 422, what=str(exc))
    report = svc.engine.report(role, since=start)
    turns = svc.engine.turns(role=role, since=start, limit=SHOWN)
    points = [
        Point(
            at=j.request.now,
            value=sum(d.chars for d in j.attached),
            href=f"/turns/{j.id}",
            label=f"turn {j.id}: {sum(d.chars for d in j.attached):,} chars of contexts"
            + (f", {len(j.stubbed)} stubbed" if j.stubbed else ""),
            stubbed=bool(j.stubbed),
        )
        for j in turns
    ]
    chart = size_chart(
        points, title=f"Context size per turn of role {role}", unit="chars of contexts"
    )
    return page(
        request,
        "role.html",
        role=role,
        since=since,
        report=report,
        findings=role_findings(svc.engine, role, start),
        chart=chart,
        turns=turns[:50],
    )


@router.get("/turns", dependencies=[Guarded])
def turns_page(
    request: Request,
    svc: Svc,
    chat: str | None = None,
    role: str | None = None,
    limit: Annotated[int, Query(ge=1, le=SHOWN)] = 100,
) -> HTMLResponse:
    if (refused := _unusable(request, chat=chat, role=role)) is not None:
        return refused
    found = svc.engine.turns(chat=chat or None, role=role or None, limit=limit)
    return page(request, "turns.html", turns=found, chat=chat, role=role)


@router.get("/turns/{ident}", dependencies=[Guarded])
def turn_page(request: Request, ident: int, svc: Svc) -> HTMLResponse:
    journal = recorded(svc.engine, ident) if 0 < ident < 2**62 else None
    if journal is None:
        return page(request, "missing.html", 404, what=f"no turn {ident} in the journal")
    explanation = svc.engine.explain(ident)
    view = inspect_turn(journal, shown_history(svc.engine, journal), explanation)
    return page(request, "turn.html", view=view, journal=journal)


@router.get("/chats", dependencies=[Guarded])
def chats_page(request: Request, svc: Svc) -> HTMLResponse:
    return page(request, "chats.html", chats=chats(svc.engine))


@router.get("/chat", dependencies=[Guarded])
def chat_page(request: Request, svc: Svc, chat: str = "") -> HTMLResponse:
    if not chat:
        return page(request, "missing.html", 404, what="name a chat: /chat?chat=...")
    if (refused := _unusable(request, chat=chat)) is not None:
        return refused
    return page(
        request,
        "chat.html",
        chat=chat,
        bindings=svc.engine.bindings(chat),
        context=svc.engine.context(chat),
        turns=svc.engine.turns(chat=chat, limit=50),
        history=svc.engine.history(chat, limit=50),
    )


@router.get("/runs", dependencies=[Guarded])
def runs_page(request: Request, svc: Svc) -> HTMLResponse:
    if svc.runs.unavailable() is not None:
        return page(request, "runs.html", runs=(), cards=())
    return page(request, "runs.html", runs=svc.runs.runs(limit=100), cards=svc.runs.cards())


@router.get("/runs/{run_id}", dependencies=[Guarded])
def run_page(request: Request, run_id: str, svc: Svc) -> HTMLResponse:
    if (refused := _unusable(request, run=run_id)) is not None:
        return refused
    try:
        found = svc.runs.run(run_id)
    except RunsUnavailable as exc:
        return page(request, "missing.html", 404, what=str(exc))
    if found is None:
        return page(request, "missing.html", 404, what=f"no run {run_id!r}")
    return page(request, "run.html", run=found)


@router.post("/runs/cards/{card}", dependencies=[Guarded])
async def decide_card(request: Request, card: str) -> Response:
    """The approve / deny form: decide the card, then back to the page it came from."""
    if not same_origin(request):
        return page(request, "missing.html", 403, what="a decision must come from this dashboard")
    form = parse_qs((await request.body())[:FORM_LIMIT].decode("utf-8", "replace"))
    decision = (form.get("decision") or [""])[0]
    person = (form.get("as") or [""])[0].strip() or None
    back = (form.get("back") or ["/runs"])[0]
    if decision not in ("approve", "deny"):
        return page(request, "missing.html", 422, what="decide with approve or deny")
    if not back.startswith("/") or back.startswith("//"):
        # Only a page of this dashboard: a form must not send the browser elsewhere.
        return page(request, "missing.html", 422, what="go back to a page of this dashboard")
    svc: Service = service(request)

    def decide() -> Card | None:
        return svc.runs.decide(
            card, approve=decision == "approve", by="dashboard", note=None, person=person
        )

    try:
        # Off the event loop: deciding writes to the database and wakes the run, and the
        # runs engine refuses to block a running loop.
        decided = await anyio.to_thread.run_sync(decide)
    except KeelError as exc:
        return page(request, "missing.html", 409, what=str(exc))
    if decided is None:
        return page(request, "missing.html", 404, what=f"no approval card {card!r}")
    if decided.run_id:
        await anyio.to_thread.run_sync(moved_on, svc, decided.run_id)
    # Back where the person was, with word of what they decided (`page` shows it).
    told = urlencode({"decided": decided.id, "run": decided.run_id or ""})
    return RedirectResponse(f"{back}{'&' if '?' in back else '?'}{told}", status_code=303)


def moved_on(svc: Service, run_id: str, seconds: float = MOVE_ON_S) -> None:
    """Wait a moment for a run woken by its card to go on, so the page the person lands on
    does not still say it waits: until it stops waiting, waits on another card, or
    `seconds` pass (a run that takes longer is then followed by the run page itself)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        found = svc.runs.run(run_id)
        if found is None or found.status != "waiting":
            return
        if any(c.status == "pending" for c in found.cards):
            return
        time.sleep(0.05)


def decided_notice(request: Request, svc: Service) -> str | None:
    """What the decision just made says, on the page the person came back to: read from
    the card as recorded, never from the address (which anyone can write)."""
    card_id, run_id = request.query_params.get("decided"), request.query_params.get("run")
    if not card_id or not run_id or svc.runs.unavailable() is not None:
        return None
    found = svc.runs.run(run_id)
    card = next((c for c in found.cards if c.id == card_id), None) if found else None
    if card is None or card.status == "pending":
        return None
    who = f" by {card.decided_by}" if card.decided_by else ""
    goes_on = "it goes on" if card.status == "approved" else "what it asked is not done"
    return f"Card {card.id} {card.status}{who}: run {run_id} has its answer, and {goes_on}."


@router.get("/doctor", dependencies=[Guarded])
def doctor_page(request: Request, svc: Svc) -> HTMLResponse:
    report = svc.engine.doctor()
    return page(request, "doctor.html", findings=report.findings, failed=report.failed)


@router.get("/login")
def login_page(request: Request) -> HTMLResponse:
    return page(request, "login.html", wrong=False)


@router.post("/login")
async def login(request: Request) -> Response:
    svc: Service = service(request)
    form = parse_qs((await request.body())[:FORM_LIMIT].decode("utf-8", "replace"))
    given = (form.get("token") or [""])[0]
    if svc.token is None or not same_origin(request) or not matches(svc.token, given):
        return page(request, "login.html", 401, wrong=True)
    answer = RedirectResponse("/", status_code=303)
    answer.set_cookie(COOKIE, given, httponly=True, samesite="strict")
    return answer


def _unusable(request: Request, **names: str | None) -> HTMLResponse | None:
    """A 422 page for a name in the address that no store can hold (a NUL, 600 characters),
    before a database is asked about it (PostgreSQL refuses a NUL outright)."""
    for what, value in names.items():
        problem = id_problem(value, f"the {what}") if value else None
        if problem is not None:
            return page(request, "missing.html", 422, what=problem)
    return None
