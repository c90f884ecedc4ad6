"""`keel run`, `keel fire`, `keel scenario`, `keel runs`, `keel messages`, `keel worker`,
`keel approve`: runs of heartbeats, hooks and scenarios, durable on DBOS.

A command that starts a run runs it in its own process, now, and waits until it is done,
failed, or waiting for a person's approval; it prints the run's record (`--json`: the
record itself, `keel.runs.records`). Exit status: 0 when the run is done or waiting, 1
when it failed, 3 when what it did was refused, 2 on a usage error. `keel runs` and `keel
messages` only read Keel's tables, and never load DBOS.

A process that ends while one of its runs waits for a card ends at once: the run waits in
the journal, and `keel approve` (or a worker, once the card is decided) finishes it.
"""

from __future__ import annotations

import _thread
import json
import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from keel.cli.app import EXIT_FAILED, EXIT_REFUSED, app, console, emit_json, guard
from keel.cli.options import (
    BrainArg,
    DbOpt,
    EntityOpt,
    JsonOpt,
    ReachOpt,
    ThreadOpt,
    open_engine,
    parse_reach,
    parse_run,
)
from keel.errors import UsageError
from keel.link.values import Conversation
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice, build_model, parse_model
from keel.store.run_values import RUN_STATUSES, RunStatus

ModelOpt = Annotated[
    str | None,
    typer.Option(
        "--model",
        help="The model: openai:NAME, anthropic:NAME, openai-compatible:NAME@URL, "
        "scripted:FILE or none (default: the role's or MANIFEST's, else a provider whose "
        "key is set, else none).",
    ),
]
RunBotOpt = Annotated[
    str | None, typer.Option("--bot", help="The bot the run speaks as (default: its own).")
]
RunChatOpt = Annotated[
    str | None, typer.Option("--chat", help="The chat the run speaks in (default: its own).")
]
PayloadOpt = Annotated[str, typer.Option("--payload", help="The event's payload, a JSON object.")]
VarsOpt = Annotated[str, typer.Option("--vars", help="The scenario's vars, a JSON object.")]


# -- starting a run -------------------------------------------------------------------------


def model_spec(text: str | None) -> str | None:
    """A `--model` spec, checked now (a missing key or file is a usage error before any
    run starts), with a scripted file's path made absolute for whichever process runs it."""
    if text is None:
        return None
    choice = parse_model(text)
    if choice.provider == "scripted" and choice.path is not None:
        choice = ModelChoice(provider="scripted", path=choice.path.resolve())
    build_model(choice)
    return choice.spec


def json_object(text: str, flag: str) -> dict[str, Any]:
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise UsageError(f"{flag} is not JSON ({exc.msg} at char {exc.pos})") from None
    if not isinstance(value, dict):
        raise UsageError(f"{flag} must be a JSON object, not {type(value).__name__}")
    return value


def where(bot: str | None, chat: str | None, thread: str | None) -> Conversation | None:
    if bot is None and chat is None and thread is None:
        return None
    if chat is None:
        raise UsageError("--bot and --thread say where in a chat: name the chat with --chat")
    return Conversation(bot=bot or "cli", chat=chat, thread=thread)


@contextmanager
def runtime_for(engine: Engine, kind: str) -> Iterator[None]:
    """This process's runtime for the command (launched here unless one already is).

    A runtime launched here that still runs workflows when the command ends — a run waiting
    for a card — ends the process at once: its worker thread would keep it alive.
    """
    from keel.runs.app import active, launch, system_database

    shared = active()
    if shared is not None:
        if shared.target != system_database(engine.url):
            raise UsageError("this process runs the runs of another database")
        yield
        return
    runtime = launch(engine, kind=kind)
    code = 0
    try:
        yield
    except typer.Exit as exc:
        code = exc.exit_code
        raise
    finally:
        busy = runtime.busy
        runtime.close()
        if busy:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)


def run_now(
    path: Path, db: str | None, as_json: bool, orders: Callable[[Engine], list[Any]]
) -> None:
    """Start the runs `orders` makes, wait for each, print their records, exit as they went."""
    from keel.runs.app import current
    from keel.runs.records import run_record
    from keel.runs.service import start, wait

    with open_engine(path, db) as engine:
        made = orders(engine)
        with runtime_for(engine, "run"):
            runtime = current()
            for order in made:
                start(order)
                wait(runtime, order.id)
            with engine.store.transaction() as tx:
                records = [run_record(tx, o.id) for o in made]
            shown = [r for r in records if r is not None]
            if as_json:
                emit_json(shown[0] if len(made) == 1 and shown else {"runs": shown})
            else:
                for record in shown:
                    print_record(record)
            raise typer.Exit(exit_code(shown))


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
    thread: ThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a heartbeat, hook or scenario now, durably, and wait for it."""

    def body() -> None:
        from keel.runs.service import order_for

        ref = parse_run(what)
        if ref is None:  # parse_run answers None only for no text
            raise UsageError("name what to run: heartbeat:ID, hook:ID or scenario:ID")
        spec = model_spec(model)
        place = where(bot, chat, thread)

        def orders(engine: Engine) -> list[Any]:
            order = order_for(
                engine.brain,
                ref,
                entity=entity,
                reach=parse_reach(reach),
                conversation=place,
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
    thread: ThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Fire an event: every hook listening to it runs now (its gate decides the reach)."""

    def body() -> None:
        from keel.runs.service import hook_orders

        data = json_object(payload, "--payload")
        spec = model_spec(model)
        place = where(bot, chat, thread)

        def orders(engine: Engine) -> list[Any]:
            return hook_orders(
                engine.brain, event, data, conversation=place, model=spec, event_id=event_id
            )

        run_now(brain, db, as_json, orders)

    guard(as_json, body)


@app.command()
def scenario(
    brain: BrainArg,
    ident: Annotated[str, typer.Argument(help="The scenario's id.")],
    vars_: VarsOpt = "{}",
    bot: RunBotOpt = None,
    chat: RunChatOpt = None,
    thread: ThreadOpt = None,
    model: ModelOpt = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run a scenario now: its pipeline with these vars, each ctx call a durable step."""

    def body() -> None:
        from keel.link.values import RunRef
        from keel.runs.service import order_for

        data = json_object(vars_, "--vars")
        spec = model_spec(model)
        place = where(bot, chat, thread)

        def orders(engine: Engine) -> list[Any]:
            ref = RunRef(kind="scenario", id=ident)
            return [order_for(engine.brain, ref, vars_=data, conversation=place, model=spec)]

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
        from keel.runs.records import run_record, run_summary

        if action is not None and action != "show":
            raise UsageError(f"keel runs BRAIN [show ID] — {action!r} is not show")
        if action == "show" and run_id is None:
            raise UsageError("keel runs BRAIN show ID — name the run")
        with open_engine(brain, db) as engine, engine.store.transaction() as tx:
            if action == "show" and run_id is not None:
                record = run_record(tx, run_id)
                if record is None:
                    raise UsageError(f"no run {run_id!r} — `keel runs BRAIN` lists them")
                found: Any = record
            else:
                found = [run_summary(r) for r in tx.runs(status=_status(status), limit=limit)]
        if action == "show":
            emit_json(found) if as_json else print_record(found)
        elif as_json:
            emit_json({"runs": found})
        else:
            table = Table("id", "run", "status", "chat", "started", "error", box=None)
            for r in found:
                table.add_row(
                    r["id"], r["run"], r["status"], r["chat"] or "", r["created_at"][:19],
                    r["error"] or "",
                )  # fmt: skip
            console().print(table if found else "no runs yet")

    guard(as_json, body)


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
        for m in sent:
            reach = ", ".join(r.context + (f"={r.entity}" if r.entity else "") for r in m.reach)
            card = " · [yellow]card pending[/]" if m.pending_card else ""
            console().print(
                f"[bold]{m.message_id}[/] · {m.run or '-'} · reach {reach or '-'}{card}\n  {m.text}"
            )
        if not sent:
            console().print(f"nothing was sent in {chat}")

    guard(as_json, body)


def _owned_here(runtime: Any, run_id: str) -> bool:
    from dbos import DBOS

    status = DBOS.get_workflow_status(run_id)
    return status is not None and status.executor_id == runtime.executor


def print_record(record: dict[str, Any]) -> None:
    """A run's record for a person."""
    out = console()
    out.print(
        f"run [bold]{record['id']}[/] · {record['run']} · {record['status']}"
        + (f" · role {record['role']}" if record["role"] else "")
        + (f" · chat {record['chat']}" if record["chat"] else "")
    )
    steps = Table("#", "step", "status", "ms", "detail", box=None, pad_edge=False)
    for s in record["steps"]:
        ms = "" if s["ms"] is None else f"{s['ms']:.1f}"
        steps.add_row(str(s["seq"]), s["name"], s["status"], ms, s["detail"])
    out.print(steps)
    for m in record["messages"]:
        out.print(f"sent {m['message_id']} to {m['chat']}: {m['text']}")
    for c in record["cards"]:
        out.print(f"card {c['id']} · {c['status']} · {c['summary']}")
        if c["status"] == "pending":
            out.print(
                f"  waiting: reply yes or no to it, or keel approve BRAIN {c['id']} --yes (or --no)"
            )
    if record["error"]:
        out.print(f"[bold red]error:[/] {record['error']}")


# -- workers and approvals ------------------------------------------------------------------


@app.command()
def worker(
    brain: BrainArg,
    model: ModelOpt = None,
    until_idle: Annotated[
        bool, typer.Option("--until-idle", help="Stop once no run is left to do.")
    ] = False,
    seconds: Annotated[
        str, typer.Option("--seconds", hidden=True, help="Cron seconds field (demos, tests).")
    ] = "0",
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Run the brain's heartbeats on their schedules and finish the runs of dead processes."""

    def body() -> None:
        from keel.runs.records import run_summary
        from keel.runs.worker import serve

        spec = model_spec(model)
        choice = parse_model(spec) if spec is not None else None
        stop = threading.Event()
        for sig in (signal.SIGINT, signal.SIGTERM):
            if threading.current_thread() is threading.main_thread():
                signal.signal(sig, stop_on_signal(stop))
        say = None if as_json else (lambda line: console().print(line))
        engine = Engine(brain, db, watch=not until_idle)
        try:
            report = serve(
                engine, model=choice, until_idle=until_idle, seconds=seconds, stop=stop, say=say
            )
        finally:
            engine.close()
        data = {
            "executor": report.executor,
            "schedules": [{"name": s.name, "cron": s.cron} for s in report.schedules],
            "recovered": report.recovered,
            "finished": [run_summary(r) for r in report.finished],
        }
        if as_json:
            emit_json(data)
        else:
            console().print(
                f"worker {report.executor}: {len(report.schedules)} schedules, "
                f"took over {len(report.recovered)} runs, {len(report.finished)} finished"
            )
        if report.left_running:
            sys.stdout.flush()
            os._exit(0)

    guard(as_json, body)


def stop_on_signal(stop: threading.Event) -> Callable[[int, Any], None]:
    """A signal handler that sets `stop` without waiting on it.

    Python runs a handler in the main thread between two bytecodes — possibly inside
    `stop.wait()`, holding the event's lock — so `stop.set()` right there could wait for
    that lock forever. A new low-level thread (no `threading` lock taken to start it) sets
    it instead.
    """

    def handler(_signum: int, _frame: Any) -> None:
        _thread.start_new_thread(stop.set, ())

    return handler


@app.command()
def approve(
    brain: BrainArg,
    card: Annotated[str, typer.Argument(help="The approval card's id.")],
    yes: Annotated[bool, typer.Option("--yes", help="Approve the call.")] = False,
    no: Annotated[bool, typer.Option("--no", help="Deny the call.")] = False,
    by: Annotated[str | None, typer.Option("--by", help="Who decides.")] = None,
    note: Annotated[str | None, typer.Option("--note", help="Why.")] = None,
    db: DbOpt = None,
    as_json: JsonOpt = False,
) -> None:
    """Approve or deny a pending card; its run goes on (here, when no live process runs it)."""

    def body() -> None:
        from keel.runs.app import current
        from keel.runs.records import run_record
        from keel.runs.service import decide_and_wake, wait

        if yes == no:
            raise UsageError("say --yes or --no")
        with open_engine(brain, db) as engine, runtime_for(engine, "approve"):
            runtime = current()
            decided, taken = decide_and_wake(
                runtime, card, approve=yes, by=by or "keel approve", note=note
            )
            # A run this process took over is finished here; one a live worker holds is
            # followed for a while, then left to it.
            here = taken or _owned_here(runtime, decided.run_id)
            wait(runtime, decided.run_id, timeout_s=None if here else 30.0, waiting_done=True)
            with engine.store.transaction() as tx:
                record = run_record(tx, decided.run_id)
            if record is None:
                raise UsageError(f"card {card} belongs to no recorded run")
            if as_json:
                emit_json(record)
            else:
                console().print(f"card {card}: {'approved' if yes else 'denied'}")
                print_record(record)
            raise typer.Exit(exit_code([record]))

    guard(as_json, body)
