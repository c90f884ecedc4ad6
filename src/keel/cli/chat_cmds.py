"""`keel send`, `keel bind`, `keel unbind`, `keel state apply`: what moves in chats."""

from __future__ import annotations

import uuid
from typing import Annotated, Any

import typer

from keel.brain import Brain, RoleSpec, load_brain
from keel.cli.app import app, console, emit_json, guard
from keel.cli.options import (
    AtOpt,
    BrainArg,
    ChatOpt,
    DbOpt,
    EntityOpt,
    JsonOpt,
    ReachOpt,
    RoleOpt,
    RunOpt,
    ThreadOpt,
    open_brain,
    parse_at,
    parse_reach,
    parse_run,
)
from keel.link.gather import resolve_role
from keel.link.values import Conversation, TurnRequest
from keel.state import apply_sql, connect, default_url
from keel.state.database import creates
from keel.tools.binding import bind_context, unbind_context
from keel.tools.send import origin_of, record_send


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
                record_send(tx, origin, text)
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

    guard(as_json, body)


def _role(
    brain: Brain, role: str | None, bot: str | None, chat: str, thread: str | None
) -> RoleSpec:
    """The role a binding command acts as: named, or access.yaml's for the bot and chat."""
    conversation = Conversation(bot=bot or "cli", chat=chat, thread=thread)
    return resolve_role(
        brain, TurnRequest(conversation=conversation, now=parse_at(None), role=role)
    )


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
            spec = _role(opened.brain, role, bot, chat, thread)
            with opened.store.transaction() as tx:
                bind_context(
                    opened.brain,
                    tx,
                    spec,
                    context=context,
                    entity=entity,
                    chat=chat,
                    thread=thread,
                    bot=bot,
                )
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

    guard(as_json, body)


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
            spec = _role(opened.brain, role, bot, chat, thread)
            with opened.store.transaction() as tx:
                unbind_context(
                    opened.brain, tx, spec, context=context, chat=chat, thread=thread, bot=bot
                )
        if as_json:
            emit_json({"unbound": {"context": context, "chat": chat, "thread": thread, "bot": bot}})
        else:
            console().print(f"unbound {context} in {chat}")

    guard(as_json, body)


state_app = typer.Typer(help="The brain's state database.", no_args_is_help=True)
app.add_typer(state_app, name="state")


@state_app.command("apply")
def state_apply(brain: BrainArg, db: DbOpt = None, as_json: JsonOpt = False) -> None:
    """Apply the brain's state/*.sql to the database (tables, views, sample rows)."""

    def body() -> None:
        loaded = load_brain(brain)
        url = db or default_url(loaded.root)
        # A SQLite database Keel creates gets the files applied by `connect` itself.
        created_now = creates(url)
        engine = connect(url, loaded)
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

    guard(as_json, body)
