"""`DurableRuns`: the runs routes and pages on Keel's runs engine (`keel.runs`, durable on
DBOS), and the worker `keel serve` hosts for them.

At the application's start-up (`open`), a thread runs `keel.runs.worker.serve` on the
server's Engine: it launches this process's DBOS runtime as a worker, so the brain's
heartbeats fire on their schedules (applied again whenever the brain's files change), and
the unfinished runs of processes that died are taken over. Once it has launched, what was
asked of start-up runs (`when_open`: a new database's seed starts its runs there), before
the server takes its first request. At shutdown (`close`) the worker is told to stop and
joined: the runs working here get a few seconds to finish their step, those waiting for a
card leave (`keel.runs.app.Runtime.leave`), and DBOS stops with it.

Every call goes through the runs facade (`keel.runs.service`): this module only hosts the
worker's thread and turns runs into the protocol's values. A run started here (`start`,
`fire`) runs in this process, in DBOS's workflow threads. It is recorded (pending) before
its workflow starts, and the call answers once the run has taken its first step (or failed
to, or after `START_WAIT_S`): what it answers is always a run `run` reads back. A run the
database refuses to record is not started, and the call raises the `StoreError` (503)
that says why. Deciding a card records the decision and wakes the run where it waits — in
this process, or in the live process that runs it; a run whose process died is taken over
here.

Reading runs (`runs`, `run`, `cards`) reads Keel's tables only (`runs.run_record`), so
it works while the worker is down; starting, firing and deciding need the worker, and
answer `RunsDown` (503) with the reason when it is not running. `import dbos` happens in
the worker's thread, never when this module, `keel` or `keel.web` is imported.

DBOS is a process-wide singleton: a process hosts one worker at most. A worker that cannot
launch (one is launched already, DBOS cannot use the database) is logged, and the runs
routes say why; the server goes on serving turns.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import replace
from typing import Any

from typing_extensions import override

from keel.errors import KeelError, StoreError, UsageError
from keel.link.values import Conversation, RunRef
from keel.log import logger
from keel.runs import service as runs
from keel.runs.service import RunOrder, Runtime, run_record
from keel.runtime.engine import Engine
from keel.runtime.model_specs import ModelChoice, parse_model
from keel.store import Tx
from keel.store.run_values import FINISHED, CardRow, RunRow, StepRow
from keel.web.runs import Card, NoRuns, Run, RunsBackend, RunsDown, RunStart, RunStep, Where

LOG = logger("serve")
# How long a start waits for the run's first step before answering it as pending.
START_WAIT_S = 5.0
# How long start-up waits for the worker's DBOS to launch (`import dbos` alone can take
# seconds on a cold start).
LAUNCH_WAIT_S = 120.0
# At shutdown: how long the worker gets to stop (its runs' `leave` included).
STOP_WAIT_S = 30.0
_POLL_S = 0.02

NO_WORKER = (
    "this server hosts no runs worker (keel serve --no-worker): heartbeats, hooks and "
    "scenarios run in `keel worker`, `keel run` and `keel fire`, and `keel runs BRAIN` "
    "lists them — serve without --no-worker to run them here"
)
NOT_STARTED = (
    "the runs worker starts with the server (the application's lifespan) and has not "
    "started — serve the application with uvicorn, or enter its TestClient"
)


def runs_for(engine: Engine, *, model: str | None = None, worker: bool = True) -> RunsBackend:
    """The runs backend of a server on `engine`: one hosting the worker, or one saying why
    it has none (`--no-worker`; a database in memory, which no run could outlive).

    `model` is the server's `--model` (None: each run's role or MANIFEST decides).
    """
    if not worker:
        return NoRuns(NO_WORKER)
    try:
        runs.check_database(engine)
    except UsageError as exc:
        return NoRuns(str(exc))
    choice = None if model is None else runs.absolute(parse_model(model))
    return DurableRuns(engine, model=choice)


class HostedWorker:
    """The runs worker (`keel.runs.service.work`) in a thread of the server's process; see
    the module docstring."""

    def __init__(self, engine: Engine, model: ModelChoice | None) -> None:
        self._engine = engine
        self._model = model
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._runtime: Runtime | None = None
        self._left_running = 0  # what the worker's report said, once it stopped
        self._failure: str | None = None  # why it stopped, once it has

    @property
    def runtime(self) -> Runtime | None:
        """The worker's runtime while it runs, else None."""
        thread = self._thread
        if thread is None or not thread.is_alive() or self._failure is not None:
            return None
        return self._runtime

    @property
    def problem(self) -> str:
        """Why the worker is not running, when `runtime` is None."""
        if self._failure is not None:
            return self._failure
        if self._thread is None:
            return NOT_STARTED
        if self._runtime is None:
            return "the runs worker is starting — try again in a moment"
        return "the runs worker stopped"

    def start(self) -> None:
        """Start the worker's thread and wait until its DBOS is launched (or failed)."""
        if self._thread is not None:
            return
        thread = threading.Thread(target=self._serve, name="keel-serve-worker", daemon=True)
        self._thread = thread
        thread.start()
        deadline = time.monotonic() + LAUNCH_WAIT_S
        while thread.is_alive() and time.monotonic() < deadline:
            found = runs.hosted(self._engine)
            if found is not None:
                self._runtime = found
                return
            time.sleep(_POLL_S)
        if thread.is_alive():
            self._failure = f"the runs worker did not start within {LAUNCH_WAIT_S:.0f} s"
            LOG.error("%s", self._failure)

    def stop(self) -> int:
        """Stop the worker; how many runs were still working here when it stopped (mid-step
        after the wait `keel.runs.app.Runtime.leave` gives them; a run waiting for a card
        leaves)."""
        self._stop.set()
        thread = self._thread
        if thread is None:
            return 0
        thread.join(STOP_WAIT_S)
        if self._failure is None:
            self._failure = "the runs worker has stopped: the server is shutting down"
        if thread.is_alive():
            LOG.warning("the runs worker did not stop within %.0f s", STOP_WAIT_S)
            return 1
        return self._left_running

    def _serve(self) -> None:
        try:
            report = runs.work(self._engine, model=self._model, stop=self._stop, say=LOG.info)
            self._left_running = report.left_running
        except KeelError as exc:  # it could not launch, or lost its database
            self._failure = f"the runs worker stopped: {exc}"
            LOG.error("%s", self._failure)
        # The thread's edge: whatever ends the worker (DBOS's own errors included) must
        # reach the runs routes as a reason, not die with the thread. Logged whole.
        except Exception as exc:
            self._failure = f"the runs worker stopped: {type(exc).__name__}: {exc}"
            LOG.exception("the runs worker stopped")
        else:
            if not self._stop.is_set():
                self._failure = "the runs worker stopped"


class DurableRuns(RunsBackend):
    """Runs on `keel.runs`, with the worker hosted in this process; see the module
    docstring."""

    def __init__(self, engine: Engine, *, model: ModelChoice | None = None) -> None:
        self._engine = engine
        self._worker = HostedWorker(engine, model)
        self._when_open: list[Callable[[], None]] = []
        # Runs still working in this process when the worker stopped (mid-step).
        self.left_running = 0

    def when_open(self, call: Callable[[], None]) -> None:
        """Call `call` once, at start-up, after the worker has launched (or failed to): the
        seed's runs start there (`keel.web.seed`), before the server takes requests."""
        self._when_open.append(call)

    @override
    def open(self) -> None:
        self._worker.start()
        calls, self._when_open = self._when_open, []
        for call in calls:
            call()

    @override
    def close(self) -> None:
        self.left_running = self._worker.stop()

    @override
    def unavailable(self) -> str | None:
        return None if self._worker.runtime is not None else self._worker.problem

    @override
    def runs(self, *, limit: int) -> Sequence[Run]:
        with self._engine.store.transaction() as tx:
            return [listed(tx, row) for row in tx.runs(limit=limit)]

    @override
    def run(self, run_id: str) -> Run | None:
        with self._engine.store.transaction() as tx:
            return whole(tx, run_id)

    @override
    def start(self, start: RunStart, *, run_id: str | None = None) -> Run:
        """As the protocol says; `run_id` names the run (the seed's, so a replay starts
        nothing new), else it gets a new id."""
        self._ready()
        order = runs.order_for(
            self._engine.brain,
            start.run,
            entity=start.entity,
            reach=start.reach,
            input_text=start.input,
            vars_=start.vars,
            model=runs.model_spec(start.model),
            run_id=run_id,
        )
        order = speaking(order, start.where)
        runs.start(order)
        return self._started(order)

    @override
    def fire(
        self,
        event: str,
        payload: Mapping[str, Any],
        where: Where,
        *,
        model: str | None = None,
        event_id: str | None = None,
    ) -> Sequence[Run]:
        self._ready()
        orders = runs.fire(
            self._engine.brain,
            event,
            payload,
            bot=where.bot,
            chat=where.chat,
            thread=where.thread,
            model=runs.model_spec(model),
            event_id=event_id,
        )
        return [self._started(order) for order in orders]

    @override
    def cards(self) -> Sequence[Card]:
        with self._engine.store.transaction() as tx:
            return [card_of(c) for c in tx.cards(status="pending")]

    @override
    def decide(
        self,
        card_id: str,
        *,
        approve: bool,
        by: str | None,
        note: str | None,
        person: str | None = None,
    ) -> Card | None:
        runtime = self._ready()
        with self._engine.store.transaction() as tx:
            if tx.card(card_id) is None:
                return None
        decided, _ = runs.decide(
            runtime, card_id, approve=approve, by=by or "keel serve", note=note, person=person
        )
        return card_of(decided)

    def _ready(self) -> Runtime:
        runtime = self._worker.runtime
        if runtime is None:
            raise RunsDown(self._worker.problem)
        return runtime

    def _started(self, order: RunOrder) -> Run:
        """The run once it has taken its first step (or failed to), else as it stands after
        `START_WAIT_S` (`keel.runs.service.started`)."""
        runs.started(self._engine.store, order.id, START_WAIT_S)
        with self._engine.store.transaction() as tx:
            found = whole(tx, order.id)
        if found is None:
            raise StoreError(
                f"run {order.id} was recorded and its row is gone — was it deleted? Start it again"
            )
        return found


def speaking(order: RunOrder, where: Where) -> RunOrder:
    """The order with where the caller says it speaks; the run's plan fills in the rest
    from its file (`keel.runs.plan`)."""
    return replace(order, bot=where.bot, chat=where.chat, thread=where.thread)


def listed(tx: Tx, row: RunRow) -> Run:
    """A run as a listing shows it: what it is, how it stands, its steps and cards."""
    where = None
    if row.chat is not None:
        where = Conversation(bot=row.bot or "cli", chat=row.chat, thread=row.thread)
    return Run(
        id=row.id,
        run=RunRef(kind=row.kind, id=row.entity_id),
        status=row.status,
        entity=row.entity,
        role=row.role,
        conversation=where,
        reach=row.reach,
        model=row.model,
        pin=row.pin,
        started_at=row.created_at,
        finished_at=row.updated_at if row.status in FINISHED else None,
        steps=tuple(step_of(s) for s in tx.steps(row.id)),
        cards=tuple(card_of(c) for c in tx.cards(run_id=row.id)),
        error=row.error,
    )


def whole(tx: Tx, run_id: str) -> Run | None:
    """A run read whole: its listing, and what it did (`keel runs BRAIN show ID --json`)."""
    row = tx.run(run_id)
    record = run_record(tx, run_id) if row is not None else None
    if row is None or record is None:
        return None
    return replace(
        listed(tx, row),
        turns=tuple(record["turns"]),
        messages=tuple(record["messages"]),
        usage=dict(record["usage"]),
        refused=bool(record["refused"]),
    )


def step_of(step: StepRow) -> RunStep:
    return RunStep(
        name=step.name,
        status=step.status,
        seq=step.seq,
        started_at=step.started_at,
        finished_at=step.finished_at,
        turn_id=step.turn_id,
        detail=step.detail,
    )


def card_of(card: CardRow) -> Card:
    return Card(
        id=card.id,
        run_id=card.run_id,
        tool=card.tool,
        summary=card.summary,
        risk=card.risk,
        status=card.status,
        arguments=dict(card.arguments),
        asked_at=card.asked_at,
        decided_at=card.decided_at,
        decided_by=card.decided_by,
        note=card.note,
        refused=tuple(
            {"by": r.by, "at": r.at.isoformat(), "reason": r.reason} for r in card.refused
        ),
    )
