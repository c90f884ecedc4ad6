"""`keel agent-hook`: a coding agent's prompt hook (Claude Code's hook protocol).

The command reads one JSON object on stdin and prints the context to add (see
`keel.mcp.hook`). It never exits with status 2 — for Claude Code's UserPromptSubmit that
status blocks the prompt and erases it — so every failure, a mistyped option included, is
one line on stderr and status 1, which the agent reports and goes past. The turn's
warnings (brain code that failed) are one line each on stderr, with status 0.

Each prompt is a new process, so the brain is read through its snapshot cache
(`keel.brain.snapshot_cache`): only the files edited since the last prompt are parsed, and
an edit always reaches the next prompt. The `keel` script first asks the brain's warm
server (`keel.cli.hook_client`, `keel.cli.hook_server`), which answers through `respond`
here with an engine it keeps open: this command is the cold path, and both print the same.

What arrives on stdin is data, the agent's JSON, read as bytes (JSON is UTF-8; bytes that
are not are a malformed input like any other).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING

import typer
import typer.core

from keel.cli.options import (
    BotOpt,
    BrainArg,
    ChatOpt,
    DbOpt,
    DmOpt,
    FromOpt,
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

if TYPE_CHECKING:
    from keel.runtime.engine import Engine

NAME = "keel agent-hook"
# How one hook call gets its engine: opened for the call, or a warm server's, kept open.
Opener = Callable[[], AbstractContextManager["Engine"]]


@dataclass(frozen=True, slots=True, kw_only=True)
class Said:
    """What one hook call prints, on each stream, and its exit status."""

    out: str = ""
    err: str = ""
    status: int = 0


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
    sender: FromOpt = None,
    db: DbOpt = None,
) -> None:
    """Answer a coding agent's prompt hook: read its JSON on stdin, print the context to add."""
    said = respond(
        lambda: open_engine(brain, db, cached=True),
        room_of(bot=bot, chat=chat, thread=thread, dm=dm, role=role, sender=sender),
        sys.stdin.buffer.read(),
    )
    sys.stderr.write(said.err)
    sys.stdout.write(said.out)
    if said.status:
        raise typer.Exit(said.status)


def room_of(
    *,
    bot: str,
    chat: str,
    thread: str | None,
    dm: bool,
    role: str | None,
    sender: str | None = None,
) -> Room:
    """The room the command line names, and who the agent speaks for (if told)."""
    return Room(
        conversation=Conversation(bot=bot, chat=chat, thread=thread),
        role=role,
        dm=dm,
        sender=sender,
    )


def respond(engine: Opener, room: Room, stdin: bytes) -> Said:
    """What the hook prints for the input `stdin`, answered with the engine `engine` opens:
    the context to add, one line per warning, or one line saying why it could not."""
    try:
        payload = read_input(stdin)
        with engine() as opened:
            said = answer(opened, room, payload)
    except KeelError as exc:
        return Said(err=f"{NAME}: {exc}\n", status=EXIT_FAILED)
    warnings = "".join(f"{NAME}: warning: {shown(warning)}\n" for warning in said.warnings)
    out = output(payload.hook_event_name, said.text) + "\n" if said.text else ""
    return Said(out=out, err=warnings)
