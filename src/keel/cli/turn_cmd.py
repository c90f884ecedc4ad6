"""`keel turn`: prepare one turn, assemble its model input, show or print it; with
`--model`, ask that model too and print its answer.

The flags that describe a turn (`--bot`, `--chat`, `--input`, `--run`, `--open`, ...) are
shared with `keel explain`, which dry-runs the turn they describe (`build_request`).
"""

from __future__ import annotations

from datetime import datetime
from pathlib import Path
from typing import Annotated

import typer

from keel.brain import Brain
from keel.cli.options import (
    AtOpt,
    BrainArg,
    DbOpt,
    DmOpt,
    EntityOpt,
    FromOpt,
    JsonOpt,
    ReachOpt,
    RoleOpt,
    RunOpt,
    ThreadOpt,
    TurnBotOpt,
    TurnChatOpt,
    open_engine,
    parse_at,
    parse_entries,
    parse_reach,
    parse_run,
)
from keel.cli.root import app, console, emit_json, error_console, guard
from keel.cli.status import EXIT_OVERFLOW
from keel.cli.turn_view import print_turn
from keel.errors import FitOverflow, UsageError
from keel.link.reach import check_override
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.payload.providers import PayloadFormat, first_request
from keel.runtime.engine import DEFAULT_BOT, Engine
from keel.runtime.model_specs import FORMS, build_model, parse_model
from keel.runtime.models import ModelClient
from keel.tokens.exact import counter_from_settings
from keel.turn.prepared import Session, prepared_json

DEFAULT_CHAT = "cli"
InputOpt = Annotated[str, typer.Option("--input", help="The turn's input text.")]
ReplyToOpt = Annotated[
    list[str] | None, typer.Option("--reply-to", help="A message this turn replies to.")
]
AttachOpt = Annotated[
    list[str] | None,
    typer.Option("--attach", help="Code links: CTX[=KEY], comma-separated or repeated."),
]
OpenOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--open", help="The agent's context_open calls: CTX[=KEY], comma-separated or repeated."
    ),
]


def build_request(
    brain: Brain,
    *,
    bot: str | None,
    chat: str | None,
    thread: str | None,
    now: datetime,
    role: str | None,
    dm: bool,
    input_text: str,
    reply_to: list[str] | None,
    run: str | None,
    entity: str | None,
    reach: str | None,
    attach: list[str] | None,
    open_: list[str] | None,
    sender: str | None = None,
) -> TurnRequest:
    """The turn the flags describe."""
    ref = parse_run(run)
    return TurnRequest(
        conversation=speaking_as(brain, ref, bot, chat, thread),
        now=now,
        role=role,
        dm=dm,
        input=input_text,
        reply_to=tuple(reply_to or ()),
        run=ref,
        entity=entity,
        reach=parse_reach(reach),
        attach=parse_entries(attach, "--attach"),
        open=parse_entries(open_, "--open"),
        sender=sender,
    )


def speaking_as(
    brain: Brain, run: RunRef | None, bot: str | None, chat: str | None, thread: str | None
) -> Conversation:
    """Where the turn is: the flags, else where the run speaks (as `keel run` would), else
    the `cli` bot and chat."""
    entity = brain.entity(run.kind, run.id) if run is not None else None
    if entity is None:
        return Conversation(bot=bot or DEFAULT_BOT, chat=chat or DEFAULT_CHAT, thread=thread)
    return Conversation(
        bot=bot or entity.bot or DEFAULT_BOT,
        chat=chat or entity.chat or DEFAULT_CHAT,
        thread=thread if chat is not None or thread is not None else entity.thread,
    )


def _check_reach(engine: Engine, request: TurnRequest) -> None:
    """A reach typed on the command line means those contexts, as for `keel run`: one the
    brain does not have is a usage error, not a warning in the turn."""
    if request.run is not None and request.reach:
        check_override(engine.brain, request.run, request.reach)


@app.command()
def turn(
    brain: BrainArg,
    role: RoleOpt = None,
    bot: TurnBotOpt = None,
    chat: TurnChatOpt = None,
    thread: ThreadOpt = None,
    dm: DmOpt = False,
    input_text: InputOpt = "",
    reply_to: ReplyToOpt = None,
    sender: FromOpt = None,
    run: RunOpt = None,
    entity: EntityOpt = None,
    reach: ReachOpt = None,
    attach: AttachOpt = None,
    open_: OpenOpt = None,
    session: Annotated[
        str | None,
        typer.Option("--session", help="A CLI agent's session id: send only what it lacks."),
    ] = None,
    compacted: Annotated[
        bool, typer.Option("--compacted", help="The CLI session compacted: send everything.")
    ] = False,
    fmt: Annotated[
        PayloadFormat | None,
        typer.Option("--format", help="Print the provider request: openai, responses, anthropic."),
    ] = None,
    counter_name: Annotated[
        str,
        typer.Option("--counter", help="Token counter: estimate, o200k or cl100k (exact)."),
    ] = "estimate",
    ranks: Annotated[
        Path | None,
        typer.Option("--ranks", help="Folder of <encoding>.tiktoken rank files (exact counts)."),
    ] = None,
    dry_run: Annotated[
        bool,
        typer.Option(
            "--dry-run",
            help="Prepare and show the turn, but record nothing (no turn number, "
            "history, kept links, ledger or journal).",
        ),
    ] = False,
    model: Annotated[
        str | None,
        typer.Option("--model", help=f"Ask this model and print its answer: {FORMS}."),
    ] = None,
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Prepare one turn and assemble its model input; record it. With --model, the model
    answers too (its tool calls run), and the answer is recorded."""

    def body() -> None:
        client = answering_model(model, dry_run=dry_run, fmt=fmt)
        counter = counter_from_settings(counter_name, ranks)
        cli_session = Session(id=session, compacted=compacted) if session else None
        answer: dict[str, object] = {}
        with open_engine(brain, db, counter=counter) as engine:
            request = build_request(
                engine.brain,
                bot=bot,
                chat=chat,
                thread=thread,
                now=parse_at(at),
                role=role,
                dm=dm,
                input_text=input_text,
                reply_to=reply_to,
                run=run,
                entity=entity,
                reach=reach,
                attach=attach,
                open_=open_,
                sender=sender,
            )
            _check_reach(engine, request)
            card = None if dry_run else engine.answer_card(request)
            if card is not None:
                # A yes or no to a pending card is the person's decision, not a turn.
                from keel.cli.run_cmds import follow_reply

                follow_reply(brain, db, engine, card, as_json=as_json)
            try:
                if client is None:
                    prepared, assembly = engine.prepare(
                        request, session=cli_session, dry_run=dry_run
                    )
                else:
                    outcome = engine.run(request, client, session=cli_session)
                    prepared, assembly = outcome.prepared, outcome.assembly
                    answer = {"reply": outcome.reply, "requests": outcome.requests}
            except FitOverflow as exc:
                if as_json:
                    emit_json({"overflow": str(exc), "fit": exc.details})
                else:
                    error_console().print(f"[bold red]does not fit:[/] {exc}")
                raise typer.Exit(EXIT_OVERFLOW) from None
        if fmt is not None:
            emit_json(first_request(assembly, fmt))
        elif as_json:
            where = request.conversation
            emit_json({**prepared_json(prepared, assembly, where, request.sender), **answer})
        else:
            if dry_run:
                console().print("[yellow]dry run:[/] nothing was recorded")
            print_turn(prepared, assembly)
            if answer:
                asked = int(str(answer["requests"]))
                console().rule(f"answer ({asked} model request{'s' if asked != 1 else ''})")
                console().print(str(answer["reply"]), markup=False, highlight=False)

    guard(as_json, body)


def answering_model(
    spec: str | None, *, dry_run: bool, fmt: PayloadFormat | None
) -> ModelClient | None:
    """The client `--model` names (None: prepare only), checked against the other flags."""
    if spec is None:
        return None
    client = build_model(parse_model(spec))
    if client is not None and dry_run:
        raise UsageError("--dry-run records nothing, and a model's answer is recorded — drop one")
    if client is not None and fmt is not None:
        raise UsageError("--format prints the request without sending it — drop --model")
    return client
