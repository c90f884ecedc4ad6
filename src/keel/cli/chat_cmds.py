"""`keel send`, `keel bind`, `keel unbind`: what moves in chats."""

from __future__ import annotations

from typing import Annotated, Any

import typer

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
    open_engine,
    parse_at,
    parse_reach,
    parse_run,
)
from keel.cli.root import app, console, emit_json, guard
from keel.link.values import Conversation


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
        with open_engine(brain, db) as engine:
            origin = engine.send(
                Conversation(bot=bot, chat=chat, thread=thread),
                text,
                message_id=message_id,
                at=parse_at(at),
                run=parse_run(run),
                entity=entity,
                reach=parse_reach(reach),
                about_entity=about_entity,
                about_context=about_context,
                card=card,
            )
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
        with open_engine(brain, db) as engine:
            said = engine.bind(
                context=context, chat=chat, entity=entity, thread=thread, bot=bot, role=role
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
            console().print(said)

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
        with open_engine(brain, db) as engine:
            said = engine.unbind(context=context, chat=chat, thread=thread, bot=bot, role=role)
        if as_json:
            emit_json({"unbound": {"context": context, "chat": chat, "thread": thread, "bot": bot}})
        else:
            console().print(said)

    guard(as_json, body)
