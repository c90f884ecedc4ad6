"""`keel report`, `keel context`, `keel explain`, `keel what-if`: the ledger read back.

Each reads the ledger and the turn journal through the Engine and prints a table (or
`--json`); none records anything — `explain` with turn flags dry-runs the turn.
"""

from __future__ import annotations

from typing import Annotated

import typer

from keel.cli.options import (
    AtOpt,
    BrainArg,
    DbOpt,
    DmOpt,
    EntityOpt,
    JsonOpt,
    ReachOpt,
    RoleOpt,
    RunOpt,
    ThreadOpt,
    TurnBotOpt,
    TurnChatOpt,
    open_engine,
    parse_at,
)
from keel.cli.report_view import (
    print_chat_context,
    print_explanation,
    print_report,
    print_what_if,
    report_console,
)
from keel.cli.root import app, emit_json, guard
from keel.cli.turn_cmd import AttachOpt, InputOpt, OpenOpt, ReplyToOpt, build_request
from keel.ledger import DEFAULT_SINCE

SinceOpt = Annotated[
    str,
    typer.Option("--since", help="The window: a span (7d, 24h, 30m) or an ISO 8601 time."),
]
NowOpt = Annotated[
    str | None,
    typer.Option("--now", help="The end of the window, ISO 8601 (default: now)."),
]


@app.command()
def report(
    brain: BrainArg,
    role: Annotated[str, typer.Option("--role", help="The role to report on.")],
    since: SinceOpt = DEFAULT_SINCE,
    now: NowOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """agent_context: per context, the role's turns it attached to, its stubs, sizes, links."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.report(role, since=since, now=parse_at(now))
        if as_json:
            emit_json(found.to_json())
        else:
            print_report(report_console(), found)

    guard(as_json, body)


@app.command()
def context(
    brain: BrainArg,
    chat: Annotated[str, typer.Option("--chat", help="The chat.")],
    bot: Annotated[
        str | None, typer.Option("--bot", help="The bot (default: the latest turn of any).")
    ] = None,
    thread: Annotated[
        str | None,
        typer.Option("--thread", help="The thread (default: the latest turn of any)."),
    ] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """/context: what the chat's latest turn carried, the whole window, the kept links."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.context(chat, bot=bot, thread=thread)
        if as_json:
            emit_json(found.to_json() if found is not None else None)
        elif found is None:
            report_console().print(f"no recorded turn in {chat}")
        else:
            print_chat_context(report_console(), found)

    guard(as_json, body)


@app.command()
def explain(
    brain: BrainArg,
    turn_id: Annotated[
        int | None,
        typer.Argument(
            help="A recorded turn's id (keel turns lists them); without it, the turn the "
            "flags describe is dry-run.",
            show_default=False,
        ),
    ] = None,
    role: RoleOpt = None,
    bot: TurnBotOpt = None,
    chat: TurnChatOpt = None,
    thread: ThreadOpt = None,
    dm: DmOpt = False,
    input_text: InputOpt = "",
    reply_to: ReplyToOpt = None,
    run: RunOpt = None,
    entity: EntityOpt = None,
    reach: ReachOpt = None,
    attach: AttachOpt = None,
    open_: OpenOpt = None,
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Why each context of the brain did or did not reach a turn."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            if turn_id is not None:
                found = engine.explain(turn_id)
            else:
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
                )
                found = engine.explain(request)
        if as_json:
            emit_json(found.to_json())
        else:
            print_explanation(report_console(), found)

    guard(as_json, body)


@app.command("what-if")
def what_if(
    brain: BrainArg,
    settings: Annotated[
        list[str] | None,
        typer.Option(
            "--set",
            help="A knob to change, KEY=VALUE (repeatable): contexts.maxActive=5, "
            "context.ID.chars=2000, role.ID.contexts_budget.turnChars=20000, "
            "sections.history=6000, model.window=100000, state.rows=10. Without any, the "
            "turns are replayed as the brain is now.",
        ),
    ] = None,
    since: SinceOpt = DEFAULT_SINCE,
    now: NowOpt = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role's turns.")] = None,
    chat: Annotated[str | None, typer.Option("--chat", help="Only this chat's turns.")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Replay the window's recorded turns under changed knobs; nothing is recorded."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.what_if(
                settings or (), since=since, now=parse_at(now), role=role, chat=chat
            )
        if as_json:
            emit_json(found.to_json())
        else:
            print_what_if(report_console(), found)

    guard(as_json, body)
