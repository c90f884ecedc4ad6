"""`keel widget show`, `keel widget refresh`: a context's lines as a chat message kept up
to date in place (`keel.runtime.widgets`).

`show` records the message in the room's outbox (a surface sends it) and prints its text;
`refresh` reads every live widget's lines again and prints each message it edited.
"""

from __future__ import annotations

from typing import Annotated

import typer
from rich.markup import escape

from keel.cli.options import (
    AtOpt,
    BrainArg,
    DbOpt,
    JsonOpt,
    ThreadOpt,
    open_engine,
    parse_at,
)
from keel.cli.root import app, console, emit_json, guard
from keel.cli.run_view import indented
from keel.cli.widget_view import print_refreshed, refreshed_json
from keel.link.values import Conversation

widget_app = typer.Typer(
    help="A context's lines as a chat message, edited in place as they change.",
    no_args_is_help=True,
)
app.add_typer(widget_app, name="widget")


@widget_app.command("show")
def widget_show(
    brain: BrainArg,
    context: Annotated[str, typer.Option("--context", help="The context whose widget to show.")],
    bot: Annotated[str, typer.Option("--bot", help="The sending bot.")],
    chat: Annotated[str, typer.Option("--chat", help="The chat sent to.")],
    thread: ThreadOpt = None,
    message_id: Annotated[
        str | None, typer.Option("--message-id", help="The sent message's id (default: new).")
    ] = None,
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Send a context's widget to a chat: its view's rows as numbered lines."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            shown = engine.show_widget(
                Conversation(bot=bot, chat=chat, thread=thread),
                context,
                message_id=message_id,
                at=parse_at(at),
            )
        if as_json:
            emit_json(shown.to_json())
            return
        out = console()
        out.print(f"sent [bold]{shown.origin.message_id}[/] · widget {shown.origin.widget}")
        out.print(indented(shown.text))
        if shown.replaced:
            earlier = ", ".join(escape(m) for m in shown.replaced)
            out.print(f"replaces {earlier}: no longer kept up to date, left as it reads")

    guard(as_json, body)


@widget_app.command("refresh")
def widget_refresh(
    brain: BrainArg,
    at: AtOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Read every live widget's lines again; edit each message whose lines changed."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            edits, left = engine.refresh_widgets(at=parse_at(at))
        if as_json:
            emit_json(refreshed_json(edits, left))
            return
        print_refreshed(console(), edits, left)
        if not edits and not left:
            console().print("no widget's lines changed")

    guard(as_json, body)
