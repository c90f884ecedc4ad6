"""`keel turn`: prepare one turn, assemble its model input, show or print it."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from keel.cli.app import EXIT_OVERFLOW, app, emit_json, error_console, guard
from keel.cli.options import (
    AtOpt,
    BotOpt,
    BrainArg,
    ChatOpt,
    DbOpt,
    DmOpt,
    EntityOpt,
    JsonOpt,
    ReachOpt,
    RoleOpt,
    RunOpt,
    ThreadOpt,
    open_engine,
    parse_at,
    parse_entry,
    parse_reach,
    parse_run,
)
from keel.cli.turn_view import print_turn
from keel.errors import FitOverflow
from keel.link.values import Conversation, TurnRequest
from keel.payload.providers import PayloadFormat, first_request
from keel.tokens.exact import counter_from_settings
from keel.turn.prepared import Session


@app.command()
def turn(
    brain: BrainArg,
    role: RoleOpt = None,
    bot: BotOpt = "cli",
    chat: ChatOpt = "cli",
    thread: ThreadOpt = None,
    dm: DmOpt = False,
    input_text: Annotated[str, typer.Option("--input", help="The turn's input text.")] = "",
    reply_to: Annotated[
        list[str] | None, typer.Option("--reply-to", help="A message this turn replies to.")
    ] = None,
    run: RunOpt = None,
    entity: EntityOpt = None,
    reach: ReachOpt = None,
    attach: Annotated[
        list[str] | None, typer.Option("--attach", help="A code link: CTX[=KEY] (repeatable).")
    ] = None,
    open_: Annotated[
        list[str] | None,
        typer.Option("--open", help="The agent's context_open: CTX[=KEY] (repeatable)."),
    ] = None,
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
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Prepare one turn and assemble its model input (no model call); record it."""

    def body() -> None:
        request = TurnRequest(
            conversation=Conversation(bot=bot, chat=chat, thread=thread),
            now=parse_at(at),
            role=role,
            dm=dm,
            input=input_text,
            reply_to=tuple(reply_to or ()),
            run=parse_run(run),
            entity=entity,
            reach=parse_reach(reach),
            attach=tuple(parse_entry(a, "--attach") for a in attach or ()),
            open=tuple(parse_entry(o, "--open") for o in open_ or ()),
        )
        counter = counter_from_settings(counter_name, ranks)
        cli_session = Session(id=session, compacted=compacted) if session else None
        with open_engine(brain, db, counter=counter) as engine:
            try:
                prepared, assembly = engine.prepare(request, session=cli_session)
            except FitOverflow as exc:
                if as_json:
                    emit_json({"overflow": str(exc), "fit": exc.details})
                else:
                    error_console().print(f"[bold red]does not fit:[/] {exc}")
                raise typer.Exit(EXIT_OVERFLOW) from None
        if fmt is not None:
            emit_json(first_request(assembly, fmt))
        elif as_json:
            emit_json(
                {
                    **prepared.to_json(),
                    "sections": [s.to_json() for s in assembly.sections],
                    "fit": assembly.fit.to_json(),
                    "counter": assembly.counter,
                }
            )
        else:
            print_turn(prepared, assembly)

    guard(as_json, body)
