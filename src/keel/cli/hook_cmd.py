"""`keel agent-hook`: a coding agent's prompt hook (Claude Code's hook protocol).

The command reads one JSON object on stdin and prints the context to add (see
`keel.mcp.hook`). It never exits with status 2 — for Claude Code's UserPromptSubmit that
status blocks the prompt and erases it — so every failure, a mistyped option included, is
one line on stderr and status 1, which the agent reports and goes past. The turn's
warnings (brain code that failed) are one line each on stderr, with status 0.

Each prompt is a new process, so the brain is read through its snapshot cache
(`keel.brain.snapshot_cache`): only the files edited since the last prompt are parsed, and
an edit always reaches the next prompt.
"""

from __future__ import annotations

import sys

import typer
import typer.core

from keel.cli.options import (
    BotOpt,
    BrainArg,
    ChatOpt,
    DbOpt,
    DmOpt,
    RoleOpt,
    ThreadOpt,
    open_engine,
)
from keel.cli.root import app
from keel.cli.status import EXIT_FAILED
from keel.errors import KeelError
from keel.link.values import Conversation
from keel.log import shown
from keel.mcp.hook import answer, output, read_input
from keel.mcp.room import Room

NAME = "keel agent-hook"


class _NeverBlocking(typer.core.TyperCommand):
    """A command whose usage errors are one line and exit 1, not the 2 that would block the
    agent's prompt (nor the boxed usage text, which the agent would show as its error)."""

    # typer.Context narrows the vendored click context this method is declared with.
    def parse_args(self, ctx: typer.Context, args: list[str]) -> list[str]:  # type: ignore[override]
        try:
            return super().parse_args(ctx, args)
        except typer.TyperException as exc:
            said = " ".join(exc.format_message().split()).rstrip(".")
            sys.stderr.write(f"{NAME}: {said} — see {NAME} --help\n")
            raise typer.Exit(EXIT_FAILED) from None


@app.command("agent-hook", cls=_NeverBlocking)
def agent_hook(
    brain: BrainArg,
    bot: BotOpt = "cli",
    chat: ChatOpt = "cli",
    thread: ThreadOpt = None,
    dm: DmOpt = False,
    role: RoleOpt = None,
    db: DbOpt = None,
) -> None:
    """Answer a coding agent's prompt hook: read its JSON on stdin, print the context to add."""
    room = Room(conversation=Conversation(bot=bot, chat=chat, thread=thread), role=role, dm=dm)
    try:
        payload = read_input(sys.stdin.read())
        with open_engine(brain, db, cached=True) as engine:
            said = answer(engine, room, payload)
    except KeelError as exc:
        sys.stderr.write(f"{NAME}: {exc}\n")
        raise typer.Exit(EXIT_FAILED) from None
    for warning in said.warnings:
        sys.stderr.write(f"{NAME}: warning: {shown(warning)}\n")
    if said.text:
        sys.stdout.write(output(payload.hook_event_name, said.text) + "\n")
