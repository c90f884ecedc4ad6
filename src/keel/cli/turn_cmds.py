"""`keel turn`, `keel send`, `keel bind`, `keel unbind`, `keel state apply`."""

from __future__ import annotations

import uuid
from collections.abc import Callable
from typing import Annotated, Any

import typer
from rich.table import Table

from keel.brain import load_brain
from keel.cli.app import EXIT_REFUSED, app, console, emit_json, fail
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
    open_brain,
    parse_at,
    parse_entry,
    parse_reach,
    parse_run,
)
from keel.errors import KeelError, LinkError, Refused, StoreError, UsageError
from keel.link.gather import resolve_role
from keel.link.values import Conversation, TurnRequest
from keel.runtime.prepare import PreparedTurn, prepare_turn
from keel.state import apply_sql, connect, default_url
from keel.state.database import DB_DIR, DB_FILE
from keel.tools.binding import check_bind, check_unbind
from keel.tools.send import origin_of


def _guard(as_json: bool, action: Callable[[], None]) -> None:
    """Run a command body, turning Keel's errors into the CLI's exit codes."""
    try:
        action()
    except (Refused, LinkError) as exc:
        if as_json:
            emit_json({"refused": str(exc)})
        else:
            console().print(f"[bold yellow]refused:[/] {exc}")
        raise typer.Exit(EXIT_REFUSED) from None
    except (UsageError, StoreError) as exc:
        fail(exc)
    except KeelError as exc:
        fail(exc)


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
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Prepare one turn (no model call): what it carries, stubs, refusals; record it."""

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
        with open_brain(brain, db) as opened:
            prepared = prepare_turn(opened.brain, opened.store, request)
        if as_json:
            emit_json(prepared.to_json())
        else:
            _print_turn(prepared)

    _guard(as_json, body)


def _print_turn(prepared: PreparedTurn) -> None:
    out = console()
    out.print(f"[bold]turn {prepared.turn}[/] · role [cyan]{prepared.role}[/]")
    table = Table("context", "entity", "link", "chars", "status", box=None, pad_edge=False)
    for a in prepared.attached:
        table.add_row(
            a.link.context,
            a.link.entity or "",
            a.link.kind,
            str(a.block.chars),
            "[green]attached[/]",
        )
    for s in prepared.stubs:
        table.add_row(
            s.link.context, s.link.entity or "", s.link.kind, "", f"[yellow]stub ({s.knob})[/]"
        )
    for r in prepared.refused:
        table.add_row(r.context, r.entity or "", r.kind, "", f"[red]refused[/]: {r.reason}")
    if table.row_count:
        out.print(table)
    else:
        out.print("no feature contexts linked to this turn")
    if prepared.catalog:
        out.print("\n[bold]catalog[/]")
        for ident, description in prepared.catalog:
            out.print(f"- {ident}: {description}", markup=False)
    for a in prepared.attached:
        out.print()
        out.print(a.block.text, markup=False)
    for s in prepared.stubs:
        out.print(s.text, markup=False)


@app.command()
def send(
    brain: BrainArg,
    bot: Annotated[str, typer.Option("--bot", help="The sending bot.")],
    chat: Annotated[str, typer.Option("--chat", help="The chat sent to.")],
    text: Annotated[str, typer.Option("--text", help="The message text.")],
    thread: ThreadOpt = None,
    run: RunOpt = None,
    entity: EntityOpt = None,
    reach: ReachOpt = None,
    about_entity: Annotated[
        str | None, typer.Option("--about-entity", help="Key the send: about: {entity}.")
    ] = None,
    about_context: Annotated[
        str | None, typer.Option("--about-context", help="About one context, unkeyed.")
    ] = None,
    message_id: Annotated[
        str | None, typer.Option("--message-id", help="The sent message's id (default: new).")
    ] = None,
    card: Annotated[
        bool, typer.Option("--card", help="The message is an approval card still pending.")
    ] = False,
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Record a message a run sends, with the origin a reply will bring back."""

    def body() -> None:
        with open_brain(brain, db) as opened:
            origin = origin_of(
                opened.brain,
                conversation=Conversation(bot=bot, chat=chat, thread=thread),
                message_id=message_id or uuid.uuid4().hex,
                sent_at=parse_at(at),
                run=parse_run(run),
                entity=entity,
                reach=parse_reach(reach),
                about_entity=about_entity,
                about_context=about_context,
                pending_card=card,
            )
            with opened.store.transaction() as tx:
                tx.record_origin(origin)
        data: dict[str, Any] = {
            "message_id": origin.message_id,
            "text": text,
            "origin": {
                "feature": origin.feature,
                "reach": [{"context": r.context, "entity": r.entity} for r in origin.reach],
            },
        }
        if as_json:
            emit_json(data)
        else:
            reach_text = ", ".join(
                r.context + (f"={r.entity}" if r.entity else "") for r in origin.reach
            )
            console().print(
                f"sent [bold]{origin.message_id}[/] · feature {origin.feature or '-'} · "
                f"reach {reach_text or '-'}"
            )

    _guard(as_json, body)


BindContext = Annotated[str, typer.Option("--context", help="The context to bind.")]
BindBot = Annotated[
    str | None, typer.Option("--bot", help="The bot the binding is for (default: every bot).")
]


@app.command()
def bind(
    brain: BrainArg,
    context: BindContext,
    chat: ChatOpt,
    role: RoleOpt = None,
    entity: Annotated[str | None, typer.Option("--entity", help="The entity key.")] = None,
    thread: ThreadOpt = None,
    bot: BindBot = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """context_bind: bind a chat (or thread) to a context and entity."""

    def body() -> None:
        with open_brain(brain, db) as opened:
            request = TurnRequest(
                conversation=Conversation(bot=bot or "cli", chat=chat, thread=thread),
                now=parse_at(None),
                role=role,
            )
            spec = resolve_role(opened.brain, request)
            binding = check_bind(
                opened.brain,
                spec,
                context=context,
                entity=entity,
                chat=chat,
                thread=thread,
                bot=bot,
            )
            with opened.store.transaction() as tx:
                tx.bind(binding)
        result = {
            "bound": {
                "context": context,
                "entity": entity,
                "chat": chat,
                "thread": thread,
                "bot": bot,
            }
        }
        if as_json:
            emit_json(result)
        else:
            console().print(
                f"bound {context}{'=' + entity if entity else ''} in {chat}"
                f"{' thread ' + thread if thread else ''}"
            )

    _guard(as_json, body)


@app.command()
def unbind(
    brain: BrainArg,
    context: BindContext,
    chat: ChatOpt,
    role: RoleOpt = None,
    thread: ThreadOpt = None,
    bot: BindBot = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """context_unbind: remove a binding made by context_bind."""

    def body() -> None:
        with open_brain(brain, db) as opened:
            request = TurnRequest(
                conversation=Conversation(bot=bot or "cli", chat=chat, thread=thread),
                now=parse_at(None),
                role=role,
            )
            spec = resolve_role(opened.brain, request)
            check_unbind(opened.brain, spec, context=context, chat=chat)
            with opened.store.transaction() as tx:
                removed = tx.unbind(context=context, chat=chat, thread=thread, bot=bot)
            if not removed:
                raise Refused(f"no binding of '{context}' made by context_bind here to remove")
        if as_json:
            emit_json({"unbound": {"context": context, "chat": chat, "thread": thread, "bot": bot}})
        else:
            console().print(f"unbound {context} in {chat}")

    _guard(as_json, body)


state_app = typer.Typer(help="The brain's state database.", no_args_is_help=True)
app.add_typer(state_app, name="state")


@state_app.command("apply")
def state_apply(brain: BrainArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Apply the brain's state/*.sql to the database (tables, views, sample rows)."""

    def body() -> None:
        loaded = load_brain(brain)
        # The embedded default applies the files itself when Keel creates it.
        created_now = db is None and not (loaded.root / DB_DIR / DB_FILE).exists()
        engine = connect(db or default_url(loaded.root), loaded)
        try:
            if not created_now:
                apply_sql(engine, loaded.state_sql)
        finally:
            engine.dispose()
        files = [f.path for f in loaded.state_sql]
        if as_json:
            emit_json({"applied": files})
        else:
            console().print(f"applied {len(files)} file(s): {', '.join(files) or '-'}")

    _guard(as_json, body)
