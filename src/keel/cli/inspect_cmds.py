"""`keel turns`, `keel history`, `keel bindings`: what the store holds, for people.

Read-only: the recorded turns (newest first, from the journal), a chat's messages (oldest
first), and every binding (access.yaml's and context_bind's).
"""

from __future__ import annotations

from typing import Annotated, Any

import typer
from rich.table import Table
from rich.text import Text

from keel.cli.options import BrainArg, DbOpt, JsonOpt, open_engine, parse_at
from keel.cli.report_view import report_console
from keel.cli.root import app, emit_json, guard
from keel.ledger.chat_context import decision_json
from keel.link.values import Binding
from keel.log import printable
from keel.runtime.engine import DEFAULT_LIMIT
from keel.store.journal_values import TurnJournal

LimitOpt = Annotated[int, typer.Option("--limit", help="At most this many, the newest.", min=0)]
ChatFilter = Annotated[str | None, typer.Option("--chat", help="Only this chat.")]
BotFilter = Annotated[str | None, typer.Option("--bot", help="Only this bot.")]
ThreadFilter = Annotated[
    str | None, typer.Option("--thread", help="Only this thread (default: every thread).")
]
# Characters of a message shown in the table (--json has the whole text).
SHOWN = 60


def _table(*columns: str) -> Table:
    return Table(*columns, box=None, pad_edge=False)


def turn_json(journal: TurnJournal) -> dict[str, Any]:
    """One recorded turn, as `keel turns --json` lists it."""
    conversation = journal.conversation
    request = journal.request
    return {
        "id": journal.id,
        "at": request.now.isoformat(),
        "bot": conversation.bot,
        "chat": conversation.chat,
        "thread": conversation.thread,
        "turn": journal.turn,
        "role": journal.role,
        "run": request.run.key if request.run is not None else None,
        "sender": request.sender,
        "input": request.input,
        "contexts": [decision_json(d) for d in journal.decisions],
        "refused": len(journal.refused),
        "fit": journal.fit.to_json() if journal.fit is not None else None,
    }


@app.command()
def turns(
    brain: BrainArg,
    chat: ChatFilter = None,
    bot: BotFilter = None,
    thread: ThreadFilter = None,
    role: Annotated[str | None, typer.Option("--role", help="Only this role.")] = None,
    since: Annotated[
        str | None, typer.Option("--since", help="Only since: 7d, 24h, 30m or an ISO time.")
    ] = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """The recorded turns, newest first: id, chat, role, what each carried, its fit."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.turns(
                chat=chat,
                bot=bot,
                thread=thread,
                role=role,
                since=since,
                now=parse_at(None),
                limit=limit,
            )
        if as_json:
            emit_json({"turns": [turn_json(j) for j in found]})
            return
        if not found:
            report_console().print("no recorded turns")
            return
        table = _table("id", "at", "chat", "turn", "role", "carried", "tokens")
        for journal in found:
            carried = ", ".join(
                d.link.context + ("" if d.attached else "*") for d in journal.decisions
            )
            table.add_row(
                str(journal.id),
                f"{journal.request.now:%m-%d %H:%M}",
                journal.conversation.chat,
                str(journal.turn),
                journal.role,
                carried,
                f"{journal.fit.estimate:,}" if journal.fit is not None else "",
            )
        out = report_console()
        out.print(table)
        out.print(Text("* stubbed · times in UTC · keel explain BRAIN ID says why", style="dim"))

    guard(as_json, body)


@app.command()
def history(
    brain: BrainArg,
    chat: Annotated[str, typer.Option("--chat", help="The chat.")],
    bot: BotFilter = None,
    thread: ThreadFilter = None,
    limit: LimitOpt = DEFAULT_LIMIT,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """A chat's recorded messages, oldest first: what later turns see as history."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.history(chat, bot=bot, thread=thread, limit=limit)
        if as_json:
            emit_json({"messages": [m.to_json() for m in found]})
            return
        if not found:
            report_console().print(f"no messages recorded in {chat}")
            return
        table = _table("turn", "bot", "speaker", "text")
        for message in found:
            # Escaped before the table is laid out, so the column fits what is printed.
            text = printable(" ".join(message.read_as.split()))
            shown = text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"
            speaker = message.speaker if message.sender is None else message.sender
            table.add_row(str(message.turn), message.bot, speaker, Text(shown))
        report_console().print(table)

    guard(as_json, body)


def binding_json(binding: Binding) -> dict[str, Any]:
    return {
        "context": binding.context,
        "entity": binding.entity,
        "chat": binding.chat,
        "thread": binding.thread,
        "bot": binding.bot,
        "source": binding.source,
    }


@app.command()
def bindings(
    brain: BrainArg,
    chat: ChatFilter = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Every chat binding: access.yaml's group rules, then those context_bind stored."""

    def body() -> None:
        with open_engine(brain, db) as engine:
            found = engine.bindings(chat)
        if as_json:
            emit_json({"bindings": [binding_json(b) for b in found]})
            return
        if not found:
            report_console().print("no bindings")
            return
        table = _table("chat", "thread", "bot", "context", "entity", "source")
        for binding in found:
            table.add_row(
                binding.chat,
                binding.thread or "",
                binding.bot or "(every)",
                binding.context,
                binding.entity or "",
                "access.yaml" if binding.source == "access" else "context_bind",
            )
        report_console().print(table)

    guard(as_json, body)
