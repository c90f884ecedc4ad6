"""`keel run`, `keel fire`, `keel scenario`, `keel runs`, `keel messages`, `keel worker`,
`keel approve`: runs of heartbeats, hooks and scenarios, durable on DBOS.

A command that starts a run runs it in its own process, now, and waits until it is done,
failed, or waiting for a person's approval; it prints the run's record (`--json`: the
record itself, `keel.runs.records`). Exit status: 0 when the run is done or waiting, 1
when it failed, 3 when what it did was refused, 2 on a usage error (an event no hook
listens to is one). `keel runs` and `keel messages` only read Keel's tables, and never
load DBOS.

What runs and models wrote is printed as text, never read as markup: a `[card …]` in a
message stays on screen. Tables keep ids whole at any width; a narrow terminal drops the
columns that say least, and a step's detail is cut to one line (the record prints each
long text once, in full).

Every command here is a door to the runs facade (`keel.runs.service`): it parses, prints
and picks the exit status; the facade starts, waits, decides and reads. A process that ends
while one of its runs waits for a card ends at once: the run leaves it and waits in the
journal, and `keel approve` (or a worker, once the card is decided) finishes it.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, Any, NoReturn

import typer
from rich.text import Text

from keel.brain.limits import MAX_BOT_CHARS
from keel.brain.people import first_owner
from keel.brain.problems import plural
from keel.cli.options import (
    BrainArg,
    DbOpt,
    EntityOpt,
    JsonOpt,
    ReachOpt,
    _checked,
    open_engine,
    parse_reach,
    parse_run,
    person_checked,
)
from keel.cli.root import app, console, emit_json, error_console, guard
from keel.cli.run_view import (
    approve_prefix,
    indented,
    keel_command,
    print_record,
    print_runs,
)
from keel.cli.status import EXIT_FAILED, EXIT_REFUSED
from keel.errors import UsageError
from keel.runtime.engine import Engine
from keel.runtime.model_specs import parse_model
from keel.store.run_values import RUN_STATUSES, CardRow, RunStatus

if TYPE_CHECKING:  # the runs package loads only in the commands that start or finish runs
    from keel.runs.service import RunOrder

SPECS = "openai:NAME, anthropic:NAME, openai-compatible:NAME@URL, scripted:FILE or none"
ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help=f"The model: {SPECS} (default: the role's or MANIFEST's, else a provider whose "
        "key is set, else none).",
    ),
]
WorkerModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help=f"The model of the heartbeats it runs: {SPECS}. A run it takes over keeps the "
        "model it started with.",
    ),
]
ApproveModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help=f"The model that answers the rest of the run when this process finishes it: "
        f"{SPECS} (default: the one the run started with). Requests already answered are "
        "not asked again.",
    ),
]


RunBotOpt = Annotated[
    str | None,
    typer.Option(
        "--bot",
        help="The bot the run speaks as (default: its own).",
        callback=_checked("the bot", MAX_BOT_CHARS),
    ),
]
RunChatOpt = Annotated[
    str | None,
    typer.Option(
        "--chat",
        help="The chat the run speaks in (default: its own).",
        callback=_checked("the chat id"),
    ),
]
RunThreadOpt = Annotated[
    str | None,
    typer.Option(
        "--thread",
        help="The thread it speaks in (default: its own, in its own chat; else none).",
        callback=_checked("the thread id"),
    ),
]
PayloadOpt = Annotated[str, typer.Option("--payload", help="The event's payload, a JSON object.")]
VarsOpt = Annotated[str, typer.Option("--vars", help="The scenario's vars, a JSON object.")]


# -- starting a run -------------------------------------------------------------------------


def model_spec(text: str | None) -> str | None:
    """A `--model` spec, checked now (a missing key or file is a usage error before any
    run starts), with a scripted file's path made absolute for whichever process runs it."""
    from keel.runs.service import model_spec as checked

    return checked(text)


def json_object(text: str, flag: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object ({{...}}), not {json_kind(value)}")
    return value


def json_kind(value: Any) -> str:
    """What a parsed JSON value is, in JSON's words (the user wrote JSON, not Python)."""
    if value is None:
        return "null"
    if isinstance(value, bool):  # before numbers: a bool is an int in Python
        return "true" if value else "false"
    if isinstance(value, int | float):
        return "a number"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "an array"
    return "an object"


def run_now(
    path: Path,
    db: str | None,
    as_json: bool,
    orders: Callable[[Engine], list[RunOrder]],
    *,
    event: str | None = None,
) -> None:
    """Start the runs `orders` makes, wait for each, print their records, exit as they went.

    With `event` (`keel fire`), --json prints `{"event", "runs"}` as POST /v1/events answers,
    however many hooks ran; else the one run's record."""
    from keel.runs.service import opened, record, start, wait

    with open_engine(path, db) as engine:
        made = orders(engine)
        with opened(engine, "run") as runtime:
            start(*made)
            for order in made:
                wait(runtime, order.id)
            found = [record(engine.store, o.id) for o in made]
        ended = [r for r in found if r is not None]
        if as_json:
            if event is not None:
                emit_json({"event": event, "runs": ended})
            else:
                emit_json(ended[0] if ended else {"runs": ended})
        else:
            for one in ended:
                print_record(one, approve_with=approve_prefix(path, db), brain=engine.brain)
        raise typer.Exit(exit_code(ended))


def exit_code(records: list[dict[str, Any]]) -> int:
    if any(r["status"] == "failed" and r["refused"] for r in records):
        return EXIT_REFUSED
    if any(r["status"] == "failed" for r in records):
        return EXIT_FAILED
    return 0


@app.command("run")
def run_cmd(
    brain: BrainArg,
    what: Annotated[str, typer.Argument(help="What to run: heartbeat:ID, hook:ID or scenario:ID.")],
    entity: EntityOpt = None,
    reach: ReachOpt = None,
    input_text: Annotated[str, typer.Option("--input", help="The run's input text.")] = "",
    bot: RunBotOpt = None,
    chat: RunChatOpt = None,
    thread: RunThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a heartbeat, hook or scenario now, durably, and wait for it.

    --bot, --chat and --thread each replace one of the run's own; a flag not given keeps
    the file's (--chat alone keeps its bot)."""

    def body() -> None:
        from keel.runs.service import order_for

        ref = parse_run(what, "what to run,")
        if ref is None:  # parse_run answers None only for no text
            raise UsageError("name what to run: heartbeat:ID, hook:ID or scenario:ID")
        spec = model_spec(model)

        def orders(engine: Engine) -> list[RunOrder]:
            order = order_for(
                engine.brain,
                ref,
                entity=entity,
                reach=parse_reach(reach),
                bot=bot,
                chat=chat,
                thread=thread,
                input_text=input_text,
                model=spec,
            )
            return [order]

        run_now(brain, db, as_json, orders)

    guard(as_json, body)


@app.command()
def fire(
    brain: BrainArg,
    event: Annotated[str, typer.Argument(help="The event's name, e.g. ticket.opened.")],
    payload: PayloadOpt = "{}",
    event_id: Annotated[
        str | None,
        typer.Option("--event-id", help="The event's own id: firing it again runs nothing new."),
    ] = None,
    bot: RunBotOpt = None,
    chat: RunChatOpt = None,
    thread: RunThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fire an event: every hook listening to it runs now (its gate decides the reach).

    An event no hook listens to is a usage error (exit 2, nothing on stdout with --json):
    a misspelt event would otherwise run nothing without a word. --bot, --chat and
    --thread each replace one of the hook's own."""

    def body() -> None:
        from keel.runs.service import hook_orders, unheard

        data = json_object(payload, "--payload")
        spec = model_spec(model)

        def orders(engine: Engine) -> list[RunOrder]:
            made = hook_orders(
                engine.brain,
                event,
                data,
                bot=bot,
                chat=chat,
                thread=thread,
                model=spec,
                event_id=event_id,
            )
            if not made:
                raise unheard(engine.brain, event)
            return made

        run_now(brain, db, as_json, orders, event=event)

    guard(as_json, body)


@app.command()
def scenario(
    brain: BrainArg,
    ident: Annotated[str, typer.Argument(help="The scenario's id.")],
    vars_: VarsOpt = "{}",
    bot: RunBotOpt = None,
    chat: RunChatOpt = None,
    thread: RunThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a scenario now: its pipeline with these vars, each ctx call a durable step.

    --bot, --chat and --thread each replace one of the scenario's own."""

    def body() -> None:
        from keel.link.values import RunRef
        from keel.runs.service import order_for

        data = json_object(vars_, "--vars")
        spec = model_spec(model)

        def orders(engine: Engine) -> list[RunOrder]:
            ref = RunRef(kind="scenario", id=ident)
            order = order_for(
                engine.brain, ref, vars_=data, bot=bot, chat=chat, thread=thread, model=spec
            )
            return [order]

        run_now(brain, db, as_json, orders)

    guard(as_json, body)


# -- reading runs back ----------------------------------------------------------------------


@app.command()
def runs(
    brain: BrainArg,
    action: Annotated[str | None, typer.Argument(help="show, to show one run.")] = None,
    run_id: Annotated[str | None, typer.Argument(help="The run to show.")] = None,
    status: Annotated[
        str | None, typer.Option("--status", help=f"Only runs so: {', '.join(RUN_STATUSES)}.")
    ] = None,
    limit: Annotated[int, typer.Option("--limit", help="How many runs to list.", min=0)] = 50,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """List the newest runs, or show one (`keel runs BRAIN show ID`) with its steps."""

    def body() -> None:
        from keel.runs.service import listing, record

        if action is not None and action != "show":
            raise UsageError(f"keel runs BRAIN [show ID] — {action!r} is not show")
        if action == "show" and run_id is None:
            raise UsageError("keel runs BRAIN show ID — name the run")
        with open_engine(brain, db) as engine:
            if action == "show" and run_id is not None:
                one = record(engine.store, run_id)
                if one is None:
                    raise UsageError(
                        f"no run {run_id!r} — `{keel_command('runs', brain, db)}` lists them"
                    )
                found: Any = one
            else:
                found = listing(engine.store, status=_status(status), limit=limit)
            snapshot = engine.brain
        if action == "show":
            if as_json:
                emit_json(found)
            else:
                print_record(found, approve_with=approve_prefix(brain, db), brain=snapshot)
        elif as_json:
            emit_json({"runs": found})
        elif found:
            print_runs(console(), found)
        else:
            console().print(Text(_none_listed(status, limit)))

    guard(as_json, body)


def _none_listed(status: str | None, limit: int) -> str:
    """What an empty listing means: a filter that matched nothing is not an empty journal."""
    if limit == 0:
        return "--limit 0 lists no runs"
    if status is not None:
        return f"no {status} runs"
    return "no runs yet"


def _status(text: str | None) -> RunStatus | None:
    if text is None:
        return None
    for status in RUN_STATUSES:
        if text == status:
            return status
    raise UsageError(f"--status {text!r}: one of {', '.join(RUN_STATUSES)}")


@app.command()
def messages(
    brain: BrainArg,
    chat: Annotated[str, typer.Option("--chat", help="The chat.")],
    limit: Annotated[int, typer.Option("--limit", help="How many messages.", min=0)] = 50,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """What the bot sent in a chat, each message with its origin."""

    def body() -> None:
        with open_engine(brain, db) as engine, engine.store.transaction() as tx:
            sent = tx.sent_messages(chat, limit=limit)
        if as_json:
            emit_json({"chat": chat, "messages": [m.to_json() for m in sent]})
            return
        out = console()
        for m in sent:
            reach = ", ".join(r.context + (f"={r.entity}" if r.entity else "") for r in m.reach)
            head = Text(m.message_id or "(no message id)", style="bold")
            head.append(f" · {m.run or '-'} · reach {reach or '-'}")
            if m.thread:
                head.append(f" · thread {m.thread}")
            if m.pending_card:
                head.append(" · card pending", style="yellow")
            if m.widget:
                head.append(f" · widget {m.widget}", style="cyan")
            if m.edited_at is not None:
                head.append(f" · edited {m.edited_at.isoformat(timespec='seconds')}")
            out.print(head)
            out.print(indented(m.text))
        if not sent:
            out.print(Text(f"nothing was sent in {chat}"))

    guard(as_json, body)


@app.command()
def worker(
    brain: BrainArg,
    model: WorkerModelOpt = None,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop once no run is left to do.")
    ] = False,
    seconds: Annotated[
        str, typer.Option("--seconds", hidden=True, help="Cron seconds field (demos, tests).")
    ] = "0",
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the brain's heartbeats on their schedules and finish the runs of dead processes.

    It says when it starts its executor id, where its journal is and its schedules, and
    when it stops what it did: the runs it took over and the runs it finished itself."""

    def body() -> None:
        from keel.runs.service import run_summary, work

        spec = model_spec(model)
        choice = parse_model(spec) if spec is not None else None
        say = None if as_json else _say
        engine = Engine(brain, db, watch=not until_idle)
        try:
            report = work(
                engine,
                model=choice,
                until_idle=until_idle,
                seconds=seconds,
                signals=True,
                say=say,
            )
        finally:
            engine.close()
        data = {
            "executor": report.executor,
            "journal": report.journal,
            "schedules": [{"name": s.name, "cron": s.cron} for s in report.schedules],
            "recovered": report.recovered,
            "finished": [run_summary(r) for r in report.finished],
        }
        if as_json:
            emit_json(data)
        else:
            _say(
                f"worker {report.executor} stopped: {plural(len(report.schedules), 'schedule')}, "
                f"took over {plural(len(report.recovered), 'run')}, "
                f"finished {plural(len(report.finished), 'run')}"
            )

    guard(as_json, body)


def _say(line: str) -> None:
    """A worker's line, written at once: a worker's output is often a log, followed for
    days. Into a log or a pipe it is one line per event; on a terminal it wraps at words."""
    out = console()
    out.print(Text(line), soft_wrap=not out.is_terminal)
    sys.stdout.flush()


def follow_reply(
    brain: Path, db: str | None, engine: Engine, card: CardRow, *, as_json: bool
) -> NoReturn:
    """After a chat turn's yes or no decided `card`: wake its run, finish it here when no
    live process holds it, and print it as `keel approve` would."""
    from keel.runs.service import answered, follow, opened

    with opened(engine, "reply") as runtime:
        taken = answered(runtime, card)
        record = follow(runtime, card.id, card.run_id, taken=taken)
    if as_json:
        emit_json({"card": {"id": card.id, "status": card.status}, "run": record})
    else:
        console().print(Text(f"card {card.id}: {card.status} by this reply"))
        print_record(record, approve_with=approve_prefix(brain, db), brain=engine.brain)
    raise typer.Exit(exit_code([record]))


@app.command()
def approve(
    brain: BrainArg,
    card: Annotated[str, typer.Argument(help="The approval card's id.")],
    yes: Annotated[bool, typer.Option("--yes", help="Approve the call.")] = False,
    no: Annotated[bool, typer.Option("--no", help="Deny the call.")] = False,
    by: Annotated[str | None, typer.Option("--by", help="Who decides.")] = None,
    as_person: Annotated[
        str | None,
        typer.Option(
            "--as",
            help="Decide as this person (tg:user:42), checked against people: approvers "
            "(default: the brain's first owner).",
            callback=person_checked("the person"),
        ),
    ] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    model: ApproveModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve or deny a pending card; its run goes on (here, when no live process runs it).

    With --model, the requests the run still sends here go to that model; a run a live
    process holds goes on there, with the model it has."""

    def body() -> None:
        from keel.runs.service import answered_by, decide, follow, opened, went_on

        if yes and no:
            raise UsageError("say --yes or --no, not both")
        if yes == no:
            raise UsageError("say --yes or --no")
        if by is not None and as_person is not None:
            raise UsageError(
                "give --as (the person who decides, checked against people: approvers) or "
                "--by (a name to record where the brain names no people), not both"
            )
        spec = model_spec(model)
        choice = parse_model(spec) if spec is not None else None
        with open_engine(brain, db) as engine:
            with engine.store.transaction() as tx:
                asked = tx.card(card)
                tx_run = None if asked is None else tx.run(asked.run_id)
            if asked is None:  # said before any runtime starts, with this brain's path
                raise UsageError(
                    f"no approval card {card!r} — `{keel_command('runs', brain, db)}` lists "
                    "the runs; add `show RUN` to see a run's cards"
                )
            with opened(engine, "approve") as runtime:
                with answered_by(asked.run_id, choice):
                    # On this machine, with the database at hand, the operator is
                    # trusted as the brain's first owner unless they say otherwise.
                    role = None if tx_run is None else tx_run.role
                    person = as_person or first_owner(engine.brain, role)
                    decided, taken = decide(
                        runtime,
                        card,
                        approve=yes,
                        by=by or "keel approve",
                        note=note,
                        person=person,
                    )
                    record = follow(runtime, card, decided.run_id, taken=taken)
                elsewhere = went_on(runtime, record) if choice is not None else None
            snapshot = engine.brain
        if elsewhere is not None:
            error_console().print(
                Text(
                    f"note: --model was not used: run {record['id']} went on in the process "
                    f"{elsewhere}, with the model it started with"
                )
            )
        if as_json:
            emit_json(record)
        else:
            console().print(Text(f"card {card}: {'approved' if yes else 'denied'}"))
            print_record(record, approve_with=approve_prefix(brain, db), brain=snapshot)
        raise typer.Exit(exit_code([record]))

    guard(as_json, body)
