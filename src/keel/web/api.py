"""The `/v1` routes over turns, chats and reports: what the `keel` commands do, as HTTP.

Each route is a sync function (the server runs it in its thread pool; the Engine is safe
to share between threads), reads its body through `keel.web.bodies`, calls the Engine and
answers with the JSON the matching command prints with `--json`. `POST /v1/turns`, the
hot path, may prepare on the event loop instead (`Service.prepares_on_loop`). Errors are
mapped once, in `keel.web.errors`; a route raises `Missing` for what does not exist.
"""

from __future__ import annotations

from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import APIRouter, Depends, Path, Query
from starlette.concurrency import run_in_threadpool

from keel.assemble.values import Assembly
from keel.ledger import DEFAULT_SINCE, WhatIf, parse_since
from keel.link.values import Conversation, Origin, TurnRequest
from keel.payload.providers import first_request
from keel.runtime.engine import DEFAULT_LIMIT
from keel.store.run_values import CardRow
from keel.turn.prepared import PreparedTurn, Session, prepared_json
from keel.web.auth import require_token, served
from keel.web.bodies import (
    BindBody,
    OpenBody,
    SendBody,
    Since,
    TurnBody,
    TurnFields,
    UnbindBody,
    WhatIfBody,
    entries,
    run_ref,
)
from keel.web.errors import RESPONSES, KeelJSON, Missing
from keel.web.intake import JSONRoute
from keel.web.limits import MAX_NAME
from keel.web.reading import recorded, shown_history
from keel.web.service import Service
from keel.web.shapes import binding_json, read_back, recorded_json, turn_json

router = APIRouter(
    prefix="/v1", dependencies=[Depends(require_token)], responses=RESPONSES, route_class=JSONRoute
)
Svc = Annotated[Service, Depends(served)]
TurnId = Annotated[int, Path(ge=1, le=2**62, description="A recorded turn's id.")]
Limit = Annotated[int, Query(ge=0, le=1000)]
# Query strings share the bodies' bounds (length, no NUL).
QName = Annotated[str | None, Query(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00]*$")]
QChat = Annotated[str, Query(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00]*$")]
QSince = Annotated[Since, Query()]


TURN_READ = {"ident": "$response.body#/id"}


@router.post(
    "/turns",
    summary="Prepare a turn, or answer it with the server's model",
    responses=read_back(
        "The turn as `keel turn --json` prints it, with its `id` (null for a dry run).",
        GetTurn=("/v1/turns/{ident}", TURN_READ),
        ExplainTurn=("/v1/turns/{ident}/explain", TURN_READ),
    ),
)
async def post_turn(body: TurnBody, svc: Svc) -> KeelJSON:
    """`keel turn --json`: what the turn carries, its sections, its fit — and its `id`.

    With a model configured (`keel serve --model`), the model answers too (`reply`,
    `requests`); a `dry_run` is prepared only and records nothing. `format` adds the
    provider request (`request`) in that provider's shape. A turn whose input says yes or
    no in reply to a pending approval card decides that card instead: `{"card": {"id",
    "run_id", "status"}}`.
    """
    with svc.turn_on_loop(dry_run=body.dry_run) as here:
        if here:
            return answer_turn(body, svc, database=nullcontext())
    return await run_in_threadpool(answer_turn, body, svc)


def answer_turn(
    body: TurnBody, svc: Service, database: AbstractContextManager[object] | None = None
) -> KeelJSON:
    """`POST /v1/turns`'s work, which waits for the database and the model; `database` is
    what to hold around Engine calls (the service's, unless the caller holds it)."""
    turned = take_turn(body, svc, database)
    if isinstance(turned, Decided):
        card = turned.card
        return KeelJSON({"card": {"id": card.id, "run_id": card.run_id, "status": card.status}})
    where, sender = turned.request.conversation, turned.request.sender
    answer = {**prepared_json(turned.prepared, turned.assembly, where, sender), **turned.reply}
    if body.format is not None:
        answer["request"] = first_request(turned.assembly, body.format)
    return KeelJSON(answer)


@dataclass(frozen=True, slots=True, kw_only=True)
class Turned:
    """A turn body's prepared turn, with the model's `reply` and `requests` when the
    server's model answered it."""

    request: TurnRequest
    prepared: PreparedTurn
    assembly: Assembly
    reply: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Decided:
    """A turn body that said yes or no to a pending approval card: the card it decided."""

    request: TurnRequest
    card: CardRow


def take_turn(
    body: TurnBody, svc: Service, database: AbstractContextManager[object] | None = None
) -> Turned | Decided:
    """A turn body's work, shared by `POST /v1/turns` and the dashboard's Try form: a reply
    that says yes or no to a pending card decides it; else the turn is prepared (a dry run
    records nothing) and, with a model configured, answered."""
    holding = svc.database() if database is None else database
    svc.brain()
    request = body.request()
    if not body.dry_run and request.reply_to:  # only a reply can decide a card
        with holding:
            card = svc.engine.answer_card(request)
        if card is not None:
            # A yes or no to a pending card is the person's decision: the hosted worker
            # wakes the run waiting on it.
            return Decided(request=request, card=card)
    session = Session(id=body.session, compacted=body.compacted) if body.session else None
    if svc.model is not None and not body.dry_run:
        outcome = svc.engine.run(request, svc.model, session=session)
        reply = {"reply": outcome.reply, "requests": outcome.requests}
        return Turned(
            request=request, prepared=outcome.prepared, assembly=outcome.assembly, reply=reply
        )
    with holding:
        prepared, assembly = svc.engine.prepare(request, session=session, dry_run=body.dry_run)
    return Turned(request=request, prepared=prepared, assembly=assembly)


@router.post("/explain", summary="Why each context would or would not reach a turn (dry run)")
def post_explain(body: TurnFields, svc: Svc) -> KeelJSON:
    """`keel explain` with turn flags: the turn is dry-run, nothing is recorded."""
    svc.brain()
    with svc.database():
        return KeelJSON(svc.engine.explain(body.request()).to_json())


@router.get("/turns", summary="The recorded turns, newest first")
def get_turns(
    svc: Svc,
    chat: QName = None,
    bot: QName = None,
    thread: QName = None,
    role: QName = None,
    since: Annotated[Since | None, Query()] = None,
    limit: Limit = DEFAULT_LIMIT,
) -> KeelJSON:
    """`keel turns --json`."""
    with svc.database():
        found = svc.engine.turns(
            chat=chat, bot=bot, thread=thread, role=role, since=since, limit=limit
        )
    return KeelJSON({"turns": [turn_json(j) for j in found]})


@router.get("/turns/{ident}", summary="One recorded turn: what it carried, its sections")
def get_turn(ident: TurnId, svc: Svc) -> KeelJSON:
    """The journal of one turn: decisions, refusals, sections with their text, the fit,
    and the history messages it showed."""
    with svc.database():
        journal = recorded(svc.engine, ident)
        if journal is None:
            raise Missing(f"no turn {ident} in the journal — GET /v1/turns lists them")
        return KeelJSON(recorded_json(journal, shown_history(svc.engine, journal)))


@router.get("/turns/{ident}/explain", summary="Why each context did or did not reach a turn")
def get_explain(ident: TurnId, svc: Svc) -> KeelJSON:
    """`keel explain BRAIN ID --json`."""
    svc.brain()
    with svc.database():
        if recorded(svc.engine, ident) is None:
            raise Missing(f"no turn {ident} in the journal — GET /v1/turns lists them")
        return KeelJSON(svc.engine.explain(ident).to_json())


@router.post("/send", summary="Record a message a bot sent, with its origin")
def post_send(body: SendBody, svc: Svc) -> KeelJSON:
    """`keel send --json`; a send a reply could only come back from keyed is refused."""
    svc.brain()
    with svc.database():
        origin = _send(svc, body)
    reach = [{"context": r.context, "entity": r.entity} for r in origin.reach]
    return KeelJSON(
        {
            "message_id": origin.message_id,
            "text": body.text,
            "origin": {"feature": origin.feature, "reach": reach},
        }
    )


def _send(svc: Service, body: SendBody) -> Origin:
    return svc.engine.send(
        Conversation(bot=body.bot, chat=body.chat, thread=body.thread),
        body.text,
        message_id=body.message_id,
        at=body.at,
        run=run_ref(body.run),
        entity=body.entity,
        reach=entries(body.reach),
        about_entity=body.about_entity,
        about_context=body.about_context,
        card=body.card,
    )


@router.post("/bind", summary="context_bind: bind a chat (or thread) to a context")
def post_bind(body: BindBody, svc: Svc) -> KeelJSON:
    """`keel bind --json`."""
    svc.brain()
    with svc.database():
        said = svc.engine.bind(
            context=body.context,
            chat=body.chat,
            entity=body.entity,
            thread=body.thread,
            bot=body.bot,
            role=body.role,
        )
    bound = {
        "context": body.context,
        "entity": body.entity,
        "chat": body.chat,
        "thread": body.thread,
        "bot": body.bot,
    }
    return KeelJSON({"bound": bound, "said": said})


@router.post("/unbind", summary="context_unbind: remove a binding context_bind made")
def post_unbind(body: UnbindBody, svc: Svc) -> KeelJSON:
    """`keel unbind --json`."""
    svc.brain()
    with svc.database():
        said = svc.engine.unbind(
            context=body.context, chat=body.chat, thread=body.thread, bot=body.bot, role=body.role
        )
    unbound = {"context": body.context, "chat": body.chat, "thread": body.thread, "bot": body.bot}
    return KeelJSON({"unbound": unbound, "said": said})


@router.post("/open", summary="context_open, as the turn's role would call it")
def post_open(body: OpenBody, svc: Svc) -> KeelJSON:
    """What `context_open` reads at once: the context's block, or the reason it is refused."""
    svc.brain()
    with svc.database():
        text = svc.engine.open(body.turn.request(), body.context, body.entity)
    return KeelJSON({"context": body.context, "entity": body.entity, "text": text})


@router.get("/report", summary="agent_context: what each context cost a role's turns")
def get_report(
    svc: Svc,
    role: Annotated[str, Query(min_length=1, max_length=MAX_NAME, pattern=r"^[^\x00]*$")],
    since: QSince = DEFAULT_SINCE,
) -> KeelJSON:
    """`keel report --json`."""
    if role not in svc.brain().roles:
        raise Missing(f"no role '{role}' in this brain — GET /v1/doctor lists the brain's files")
    with svc.database():
        return KeelJSON(svc.engine.report(role, since=since).to_json())


@router.get("/context", summary="/context: what a chat's latest turn carried, the window")
def get_context(svc: Svc, chat: QChat, bot: QName = None, thread: QName = None) -> KeelJSON:
    """`keel context --json`; 404 when the chat has no recorded turn."""
    with svc.database():
        found = svc.engine.context(chat, bot=bot, thread=thread)
    if found is None:
        raise Missing(f"no recorded turn in chat {chat!r}")
    return KeelJSON(found.to_json())


@router.post("/what-if", summary="Replay the window's turns under changed knobs")
def post_what_if(body: WhatIfBody, svc: Svc) -> KeelJSON:
    """`keel what-if --json`; nothing is recorded."""
    return KeelJSON(what_if_of(body, svc).to_json())


def what_if_of(body: WhatIfBody, svc: Service) -> WhatIf:
    """What-if's work, shared with the dashboard's what-if form."""
    svc.brain()
    return svc.engine.what_if(
        body.settings(), since=body.since, now=body.now, role=body.role, chat=body.chat
    )


@router.get("/history", summary="A chat's recorded messages, oldest first")
def get_history(
    svc: Svc, chat: QChat, bot: QName = None, thread: QName = None, limit: Limit = DEFAULT_LIMIT
) -> KeelJSON:
    """`keel history --json`."""
    with svc.database():
        found = svc.engine.history(chat, bot=bot, thread=thread, limit=limit)
    return KeelJSON({"messages": [m.to_json() for m in found]})


@router.get("/bindings", summary="Every chat binding: access.yaml's, then context_bind's")
def get_bindings(svc: Svc, chat: QName = None) -> KeelJSON:
    """`keel bindings --json`."""
    with svc.database():
        return KeelJSON({"bindings": [binding_json(b) for b in svc.engine.bindings(chat)]})


@router.get("/doctor", summary="Check the brain")
def get_doctor(svc: Svc) -> KeelJSON:
    """`keel doctor --json`, with `failed` (the CLI's exit 1)."""
    svc.brain()
    report = svc.engine.doctor()
    return KeelJSON({**report.to_json(), "failed": report.failed})


def window_start(since: str, now: datetime | None = None) -> datetime:
    """A validated `since` as the start of its window."""
    return parse_since(since, now or datetime.now(UTC))
