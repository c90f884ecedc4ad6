"""Options and argument parsing shared by the turn-side commands.

Imported by most command modules, so it imports nothing heavy itself: the engine (and the
database layer under it) loads when a command opens it, the loader when a brain argument
is checked.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import TYPE_CHECKING, Annotated

import typer

from keel.brain.limits import MAX_BOT_CHARS, MAX_CHAT_ID_CHARS
from keel.brain.specs import ENTITY_KINDS, ReachEntry, is_person
from keel.errors import UsageError
from keel.link.values import RunRef, id_problem

if TYPE_CHECKING:
    from keel.runtime.engine import Engine
    from keel.tokens import TokenCounter


def _a_brain(path: Path) -> Path:
    """The brain directory as given, once it is one: an empty or unrelated folder would
    load as a brain with nothing in it, and every check of it would pass."""
    from keel.brain.loader import TOPS

    if path.is_dir() and not any(os.path.lexists(path / top) for top in TOPS):
        raise typer.BadParameter(
            f"{path} is not a brain — it has none of {', '.join(f'{t}/' for t in TOPS)}; "
            f"give a brain directory, or start one with `keel init {path}`"
        )
    return path


BrainArg = Annotated[
    Path,
    typer.Argument(help="The brain directory.", show_default=False, callback=_a_brain),
]
DbOpt = Annotated[
    str | None,
    typer.Option(
        "--db",
        help="Database URL (default: the brain's own SQLite file, .keel/keel.db).",
        show_default=False,
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]
RoleOpt = Annotated[
    str | None,
    typer.Option("--role", help="The turn's role (default: access.yaml's rule for bot+chat)."),
]
DmOpt = Annotated[
    bool, typer.Option("--dm", help="The chat is a direct message (for the access.yaml rule).")
]


def _checked(what: str, limit: int = MAX_CHAT_ID_CHARS) -> Callable[[str | None], str | None]:
    """An option callback refusing an id Keel could not store, in the flag's own words."""

    def check(value: str | None) -> str | None:
        if value is not None and (problem := id_problem(value, what, limit)) is not None:
            raise typer.BadParameter(problem)
        return value

    return check


def person_checked(what: str) -> Callable[[str | None], str | None]:
    """An option callback refusing what cannot be a person's id (`tg:user:42`): the same
    shape `people:` asks of the ids it names, so a decision never rests on a typo."""

    def check(value: str | None) -> str | None:
        if value is None:
            return None
        problem = id_problem(value, what)
        if problem is None and (value != value.strip() or not is_person(value)):
            problem = (
                f"{what} {value[:60]!r} is not a person's id — write it as the chat surface "
                "names them, such as tg:user:42"
            )
        if problem is not None:
            raise typer.BadParameter(problem)
        return value

    return check


BotOpt = Annotated[
    str,
    typer.Option(
        "--bot", help="The bot the turn is for.", callback=_checked("the bot", MAX_BOT_CHARS)
    ),
]
TurnBotOpt = Annotated[
    str | None,
    typer.Option(
        "--bot",
        help="The bot the turn is for (default: the --run's own bot, else cli).",
        callback=_checked("the bot", MAX_BOT_CHARS),
    ),
]
ChatOpt = Annotated[
    str, typer.Option("--chat", help="The chat the turn is in.", callback=_checked("the chat id"))
]
TurnChatOpt = Annotated[
    str | None,
    typer.Option(
        "--chat",
        help="The chat the turn is in (default: the --run's own chat, else cli).",
        callback=_checked("the chat id"),
    ),
]
ThreadOpt = Annotated[
    str | None,
    typer.Option(
        "--thread",
        help="The thread of the chat (default: whole chat).",
        callback=_checked("the thread id"),
    ),
]
FromOpt = Annotated[
    str | None,
    typer.Option(
        "--from",
        help="Who spoke: a person's id, such as tg:user:42 (checked when the turn decides a card).",
        callback=person_checked("the sender"),
    ),
]
RunOpt = Annotated[
    str | None,
    typer.Option("--run", help="What the turn is a run of: heartbeat:ID, hook:ID or scenario:ID."),
]
EntityOpt = Annotated[str | None, typer.Option("--entity", help="Key the run's one keyed context.")]
ReachOpt = Annotated[
    str | None,
    typer.Option("--reach", help="Replace the run's reach: CTX[=KEY],CTX[=KEY],..."),
]
AtOpt = Annotated[
    str | None, typer.Option("--at", help="The time of the turn or send, ISO 8601 (default: now).")
]


@contextmanager
def open_engine(
    path: Path, db: str | None, *, counter: TokenCounter | None = None, cached: bool = False
) -> Iterator[Engine]:
    """The brain's engine for one command: no watcher thread, closed when the command ends.
    `cached` reads the brain through its snapshot cache (see `Engine`)."""
    from keel.runtime.engine import Engine

    engine = Engine(path, db, counter=counter, watch=False, cached=cached)
    try:
        yield engine
    finally:
        engine.close()


def parse_entry(text: str, flag: str) -> ReachEntry:
    """`CTX` or `CTX=KEY` as a reach entry."""
    context, sep, key = text.strip().partition("=")
    if not context or (sep and not key):
        raise UsageError(f"{flag} {text!r}: write CTX or CTX=KEY")
    return ReachEntry(context=context, entity=key if sep else None)


def parse_entries(given: Sequence[str] | None, flag: str) -> tuple[ReachEntry, ...]:
    """Every `CTX[=KEY]` of a flag's values, each value possibly a comma-separated list."""
    return tuple(
        parse_entry(part, flag) for text in given or () for part in text.split(",") if part.strip()
    )


def parse_reach(text: str | None) -> tuple[ReachEntry, ...] | None:
    """`--reach a,b=KEY` as entries; an empty string is an empty reach."""
    return None if text is None else parse_entries([text], "--reach")


def parse_run(text: str | None, given_as: str = "--run") -> RunRef | None:
    """`KIND:ID` as a run reference; `given_as` names where the text came from, as the
    command takes it (a flag, or a positional argument)."""
    if text is None:
        return None
    word, _, ident = text.partition(":")
    kinds = [k for k in ENTITY_KINDS if k == word]
    if not kinds or not ident:
        raise UsageError(
            f"{given_as} {text!r}: write KIND:ID with KIND one of {', '.join(ENTITY_KINDS)}"
        )
    return RunRef(kind=kinds[0], id=ident)


def parse_at(text: str | None) -> datetime:
    """An ISO 8601 time in UTC (a time without a zone is taken as UTC); default now."""
    if text is None:
        return datetime.now(UTC)
    try:
        value = datetime.fromisoformat(text)
    except ValueError:
        raise UsageError(
            f"--at {text!r}: not an ISO 8601 time (e.g. 2026-11-29T18:00:00Z)"
        ) from None
    return value.replace(tzinfo=UTC) if value.tzinfo is None else value.astimezone(UTC)
