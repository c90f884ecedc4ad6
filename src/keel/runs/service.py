"""The runs facade: the one door to runs, which the CLI and the HTTP service (its API and
its dashboard) use.

Everything that starts, fires, waits for, decides or reads runs goes through here; the
doors only translate (arguments in; records, exit codes and status codes out). No module
outside `keel.runs` imports another module of it (tests/test_layers.py holds to that):
what a door needs of them — a run's order, its record, the events hooks listen to — is
named in `__all__` here.

- `launch` registers the workflows (`keel.runs.workflows.register`) and launches this
  process's runtime (`keel.runs.app`); `opened` is the runtime of one command: the one this
  process runs already (same database), else one launched for the block and closed after.
- `start` records each run as `pending`, all in one transaction, then starts its workflow
  in this process, now (so a run anyone was told of is always recorded); `fire` does so
  for every hook an event reaches. `wait` follows a run until it is done, failed or waiting
  for a person (woken as a run started here ends or parks, else looking every 0.1 s);
  `started` until it has taken its first step.
- `decide` records a person's decision on a card and wakes its run; `answered` wakes the
  run of a card a chat reply decided; either takes the run over when its process died.
  `follow` reads a woken run's record, following it to its end when this process runs it.
- `record` and `listing` read Keel's tables only: no runtime, no DBOS (`run_record` and
  `run_summary` read them within a transaction the caller holds).
- `check_database` says why runs cannot live on a database, if they cannot; `hosted` is
  the runtime this process launched on an engine, once it has.
- `work` runs the worker (`keel.runs.worker`) until told to stop (SIGINT or SIGTERM
  with `signals`).

A process that closes its runtime while a run of it waits for a person lets the run leave
(`keel.runs.app.Runtime.leave`): it waits in the journal, and whoever decides its card, or
a worker, finishes it. `import dbos` happens only once a runtime launches.
"""

from __future__ import annotations

import _thread
import signal
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from datetime import UTC, datetime
from typing import TYPE_CHECKING, Any

from keel.brain.snapshot import Brain
from keel.errors import Refused, StoreError, UsageError
from keel.link.values import Conversation
from keel.log import logger
from keel.runs.app import Runtime, active, current, system_database
from keel.runs.approvals import wake
from keel.runs.context import answered_by
from keel.runs.executors import TERMINAL, recover_dead
from keel.runs.orders import hook_events, hook_orders, new_id, order_for, pending, unheard
from keel.runs.records import run_record, run_summary
from keel.runs.values import RunOrder
from keel.runtime.cards import decide as record_decision
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice, build_model, parse_model
from keel.store.run_values import CardRow, RunRow, RunStatus
from keel.store.store import Store

if TYPE_CHECKING:
    from keel.runs.worker import WorkerReport

__all__ = [
    "SETTLED",
    "RunOrder",
    "Runtime",
    "absolute",
    "answered",
    "answered_by",
    "check_database",
    "decide",
    "fire",
    "follow",
    "hook_events",
    "hook_orders",
    "hosted",
    "launch",
    "listing",
    "model_spec",
    "new_id",
    "opened",
    "order_for",
    "owner",
    "pending",
    "record",
    "run_record",
    "run_summary",
    "start",
    "started",
    "unheard",
    "wait",
    "went_on",
    "work",
]

LOG = logger("runs")
# A run is followed until it reaches one of these.
SETTLED: frozenset[RunStatus] = frozenset({"done", "failed", "waiting"})
# A run started in this process wakes `wait` as it ends or parks; one working elsewhere (a
# worker took it over, a recovery) is looked at this often.
_POLL_S = 0.1
# How often `started` looks at a run that has not taken its first step.
_START_POLL_S = 0.02
# How long `follow` waits for a woken run that another live process runs.
ELSEWHERE_S = 30.0


# -- orders and models ----------------------------------------------------------------------


def model_spec(text: str | None) -> str | None:
    """A run's `--model` spec, checked before any run starts (a missing key or file is a
    `UsageError`), with a scripted file's path made absolute for whichever process runs or
    replays it."""
    if text is None:
        return None
    choice = absolute(parse_model(text))
    build_model(choice)
    return choice.spec


def absolute(choice: ModelChoice) -> ModelChoice:
    """A model choice whose scripted file (if any) is named by its absolute path."""
    if choice.provider == "scripted" and choice.path is not None:
        return ModelChoice(provider="scripted", path=choice.path.resolve())
    return choice


# -- this process's runtime -----------------------------------------------------------------


def launch(
    engine: Engine,
    *,
    kind: str = "run",
    model: ModelChoice | None = None,
    queues: Sequence[str] = (),
) -> Runtime:
    """Register the workflows and launch this process's runtime (`keel.runs.app.launch`)."""
    from keel.runs.app import launch as launch_dbos
    from keel.runs.workflows import register

    register()
    return launch_dbos(engine, kind=kind, model=model, queues=queues)


def check_database(engine: Engine) -> None:
    """Raise a `UsageError` saying why runs cannot live on `engine`'s database (one in
    memory, which no run could outlive); nothing when they can."""
    system_database(engine.url)


def hosted(engine: Engine) -> Runtime | None:
    """The runtime this process launched on `engine`, once it has; else None."""
    runtime = active()
    return runtime if runtime is not None and runtime.engine is engine else None


@contextmanager
def opened(
    engine: Engine, kind: str = "run", model: ModelChoice | None = None
) -> Iterator[Runtime]:
    """The runtime for `engine`: the one launched in this process when it serves the same
    database (left running), else a new one, closed when the block ends."""
    shared = active()
    if shared is not None:
        if shared.target != system_database(engine.url):
            raise UsageError(
                "this process runs the runs of another database — use one database per process"
            )
        yield shared
        return
    runtime = launch(engine, kind=kind, model=model)
    try:
        yield runtime
    finally:
        runtime.close()


# -- starting and following runs ------------------------------------------------------------


def start(*orders: RunOrder) -> None:
    """Record each run as pending, all in one transaction, then start their workflows in
    this process.

    A run is recorded before anything runs it, so whoever is told of it can read it back:
    pending, then as its workflow moves it — or failed, with the reason, when its workflow
    could not start. When the database refuses the record, `StoreError` says why and none
    of them started. Starting an id again starts nothing: its row and its workflow stand
    as they are.
    """
    runtime = current()
    at = datetime.now(UTC)
    with runtime.engine.store.transaction() as tx:
        for order in orders:
            tx.add_run(pending(order, at, runtime.executor))
    for order in orders:
        _launch(runtime, order)


def fire(
    brain: Brain,
    event: str,
    payload: Mapping[str, Any],
    *,
    conversation: Conversation | None = None,
    bot: str | None = None,
    chat: str | None = None,
    thread: str | None = None,
    model: str | None = None,
    event_id: str | None = None,
) -> list[RunOrder]:
    """Start a run of every hook listening to `event` (`hook_orders` says where each
    speaks); their orders, none when no hook listens."""
    orders = hook_orders(
        brain,
        event,
        payload,
        conversation=conversation,
        bot=bot,
        chat=chat,
        thread=thread,
        model=model,
        event_id=event_id,
    )
    if orders:
        start(*orders)
    return orders


def _launch(runtime: Runtime, order: RunOrder) -> None:
    from dbos import DBOS, SetWorkflowID

    from keel.runs.workflows import register

    try:
        with SetWorkflowID(order.id):
            handle = DBOS.start_workflow(register().run, order.to_json())
    # Where a recorded run meets its journal: whatever keeps DBOS from taking it (its
    # database refusing the row, a value it cannot write) must leave the run failed with
    # the reason, not pending with nothing to run it. Logged whole.
    except Exception as exc:
        LOG.exception("run %s: its workflow could not start", order.id)
        error = f"its workflow could not start: {type(exc).__name__}: {exc}"
        with runtime.engine.store.transaction() as tx:
            row = tx.run(order.id)
            if row is not None and row.status == "pending":
                tx.set_run_status(order.id, "failed", datetime.now(UTC), error=error)
        return
    future = getattr(handle, "future", None)  # a workflow DBOS runs here, in a thread
    if future is not None:
        future.add_done_callback(lambda _: runtime.note_change())


def wait(
    runtime: Runtime,
    run_id: str,
    *,
    timeout_s: float | None = None,
    waiting_done: bool = False,
) -> RunStatus | None:
    """Follow a run until it is done, failed or waiting; its status then (None: the run
    never recorded a start, or `timeout_s` passed first). `waiting_done`: the run waits for
    a card just decided, so its `waiting` does not count until it has read the decision —
    or asked a new card (its `running` between the two may pass unseen)."""
    from dbos import DBOS

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    store = runtime.engine.store
    past_waiting = not waiting_done
    with store.transaction() as tx:
        asked = len(tx.cards(run_id=run_id))
    while True:
        seen = runtime.changes
        with store.transaction() as tx:
            row = tx.run(run_id)
            if not past_waiting and len(tx.cards(run_id=run_id)) > asked:
                past_waiting = True
        if row is not None and row.status != "waiting":
            past_waiting = True
        if row is not None and row.status in SETTLED and past_waiting:
            return row.status
        status = DBOS.get_workflow_status(run_id)
        if status is not None and status.status in TERMINAL:
            with store.transaction() as tx:
                row = tx.run(run_id)
            return None if row is None else row.status
        if deadline is not None and time.monotonic() > deadline:
            return None if row is None else row.status
        runtime.wait_change(seen, _POLL_S)


def started(store: Store, run_id: str, timeout_s: float) -> RunRow:
    """A run's row once it has taken its first step (or failed to), else as it stands after
    `timeout_s`: always as recorded, since `start` records a run before it starts."""
    deadline = time.monotonic() + timeout_s
    while True:
        with store.transaction() as tx:
            row = tx.run(run_id)
        if row is None:
            raise StoreError(
                f"run {run_id} was recorded and its row is gone — was it deleted? Start it again"
            )
        if row.status != "pending" or time.monotonic() > deadline:
            return row
        time.sleep(_START_POLL_S)


def owner(run_id: str) -> str | None:
    """The executor that holds a run's workflow, if DBOS knows it."""
    from dbos import DBOS

    status = DBOS.get_workflow_status(run_id)
    return None if status is None else status.executor_id


def went_on(runtime: Runtime, run: Mapping[str, Any]) -> str | None:
    """The process that went on with a run (its record) when it was not this one: another
    live process held the run, or took it from DBOS's queue first."""
    ended = run["status"] in ("done", "failed")
    holder = run["executor"] if ended else owner(str(run["id"]))
    return None if holder == runtime.executor else holder


# -- cards ----------------------------------------------------------------------------------


def decide(
    runtime: Runtime,
    card_id: str,
    *,
    approve: bool,
    by: str | None,
    note: str | None = None,
    person: str | None = None,
) -> tuple[CardRow, bool]:
    """Record a decision on a card, wake its run, and take the run over when the process
    that ran it is gone; the card, and whether this process took its run.

    The same decision again, while the card's run still waits, wakes the run again instead
    of being refused: a wake lost after the decision was saved (a crash, a database blip)
    is mended by deciding again. A different decision is refused, as
    `keel.runtime.cards.decide` says, and so is one from a `person` the brain's `people:`
    does not allow (recorded on the card, which stays pending).
    """
    store = runtime.engine.store
    try:
        card = record_decision(
            store,
            card_id,
            approve=approve,
            by=by,
            note=note,
            brain=runtime.engine.brain,
            person=person,
        )
    except Refused:
        waiting = _still_waiting(store, card_id, approve=approve)
        if waiting is None:
            raise
        card = waiting
    return card, answered(runtime, card)


def answered(runtime: Runtime, card: CardRow) -> bool:
    """Wake the run of a decided card, and take it over when its process is gone; whether
    this process took it."""
    wake(card)
    return card.run_id in recover_dead(runtime)


def follow(runtime: Runtime, card_id: str, run_id: str, *, taken: bool) -> dict[str, Any]:
    """The record of a run just woken from its card: followed to its end when this process
    runs it (it took the run over, or started it), else for `ELSEWHERE_S`, then left to
    its process."""
    here = taken or owner(run_id) == runtime.executor
    wait(runtime, run_id, timeout_s=None if here else ELSEWHERE_S, waiting_done=True)
    found = record(runtime.engine.store, run_id)
    if found is None:
        raise UsageError(f"card {card_id} belongs to no recorded run")
    return found


def _still_waiting(store: Store, card_id: str, *, approve: bool) -> CardRow | None:
    """The card, when it was decided as `approve` says and its run still waits."""
    with store.transaction() as tx:
        card = tx.card(card_id)
        run = tx.run(card.run_id) if card is not None else None
    wanted = "approved" if approve else "denied"
    if card is None or card.status != wanted or run is None or run.status != "waiting":
        return None
    return card


# -- reading runs back ----------------------------------------------------------------------


def record(store: Store, run_id: str) -> dict[str, Any] | None:
    """A run's record (`keel.runs.records`), or None for an unknown id."""
    with store.transaction() as tx:
        return run_record(tx, run_id)


def listing(
    store: Store, *, status: RunStatus | None = None, limit: int = 50
) -> list[dict[str, Any]]:
    """The newest runs (those with `status`, when given), newest first, as summaries."""
    with store.transaction() as tx:
        return [run_summary(r) for r in tx.runs(status=status, limit=limit)]


# -- the worker -----------------------------------------------------------------------------


def work(
    engine: Engine,
    *,
    model: ModelChoice | None = None,
    until_idle: bool = False,
    seconds: str = "0",
    stop: threading.Event | None = None,
    signals: bool = False,
    say: Callable[[str], None] | None = None,
) -> WorkerReport:
    """Launch this process's runtime as a worker and run it (`keel.runs.worker.serve`)
    until `stop` is set — by SIGINT or SIGTERM too, with `signals` — or, with
    `until_idle`, until nothing is left; what it did."""
    from keel.runs.schedules import QUEUE
    from keel.runs.worker import serve

    stop = stop or threading.Event()
    if signals and threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGINT, signal.SIGTERM):
            signal.signal(sig, stop_on_signal(stop))
    runtime = launch(engine, kind="worker", model=model, queues=[QUEUE])
    return serve(runtime, model=model, until_idle=until_idle, seconds=seconds, stop=stop, say=say)


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
