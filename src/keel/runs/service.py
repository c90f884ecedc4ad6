"""Starting runs and waiting for them; firing events; deciding cards.

What the run commands and the service call, in a process with a launched runtime
(`keel.runs.app`). A run started here runs in this process, now: its row is written as
`pending` first, then its workflow is started under the run's id (so a run anyone was told
of is always recorded), and `wait` follows the run's row until it is done, failed or
waiting for a person (woken as a run started here ends or parks, else looking every
0.1 s).
Reading runs back needs no runtime (`keel.runs.records`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping, Sequence
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.errors import Refused
from keel.link.reach import check_override, find_run
from keel.link.values import Conversation, RunRef
from keel.log import logger
from keel.runs.app import Runtime, current
from keel.runs.approvals import wake
from keel.runs.executors import TERMINAL, recover_dead
from keel.runs.values import RunOrder
from keel.runtime.cards import decide
from keel.store.run_values import CardRow, RunRow, RunStatus
from keel.store.store import Store

LOG = logger("runs")
# A run is followed until it reaches one of these.
SETTLED: frozenset[RunStatus] = frozenset({"done", "failed", "waiting"})
# A run started in this process wakes `wait` as it ends or parks; one working elsewhere (a
# worker took it over, a recovery) is looked at this often.
_POLL_S = 0.1


def new_id(kind: str, ident: str) -> str:
    """A new run's id: what it is a run of, and a random tail."""
    return f"{kind}-{ident}-{secrets.token_hex(4)}"


def order_for(
    brain: Brain,
    run: RunRef,
    *,
    entity: str | None = None,
    reach: tuple[ReachEntry, ...] | None = None,
    conversation: Conversation | None = None,
    bot: str | None = None,
    chat: str | None = None,
    thread: str | None = None,
    input_text: str = "",
    vars_: Mapping[str, Any] | None = None,
    model: str | None = None,
    run_id: str | None = None,
) -> RunOrder:
    """The order for a run of a heartbeat, hook or scenario of `brain` (`UsageError` for an
    entity the brain does not have, or a `reach` naming a context it does not have).

    `bot`, `chat` and `thread` say where the run speaks, each on its own: one left None is
    the entity's (`keel.runs.plan`), so `--chat` alone keeps the entity's bot. A
    `conversation` names all three at once; a field named on its own wins over it.
    """
    find_run(brain, run)
    if reach is not None:
        check_override(brain, run, reach)
    if conversation is not None:
        bot = bot or conversation.bot
        chat = chat or conversation.chat
        thread = thread or conversation.thread
    return RunOrder(
        id=run_id or new_id(run.kind, run.id),
        kind=run.kind,
        entity_id=run.id,
        at=datetime.now(UTC).isoformat(),
        entity=entity,
        reach=reach,
        vars=dict(vars_ or {}),
        bot=bot,
        chat=chat,
        thread=thread,
        input=input_text,
        model=model,
    )


def hook_orders(
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
    """One order per hook listening to `event`, in id order (none when no hook listens);
    where each speaks as `order_for` has it.

    With `event_id`, each run's id is derived from it: firing the same event again finds
    its runs already there and starts nothing new.
    """
    hooks = sorted(
        (e for e in brain.entities.values() if e.kind == "hook" and e.event == event),
        key=lambda e: e.id,
    )
    orders = []
    for hook in hooks:
        order = order_for(
            brain,
            RunRef(kind="hook", id=hook.id),
            conversation=conversation,
            bot=bot,
            chat=chat,
            thread=thread,
            model=model,
            run_id=f"hook-{hook.id}-{event_id}" if event_id else None,
        )
        orders.append(replace(order, event=event, payload=dict(payload)))
    return orders


def hook_events(brain: Brain) -> list[str]:
    """The events the brain's hooks listen to, sorted."""
    return sorted({e.event for e in brain.entities.values() if e.kind == "hook" and e.event})


def start(order: RunOrder) -> str:
    """Record the run, then start its workflow in this process (`start_all`); its id."""
    start_all([order])
    return order.id


def start_all(orders: Sequence[RunOrder]) -> None:
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


def pending(order: RunOrder, at: datetime, executor: str) -> RunRow:
    """The row of a run asked for and not started: what was asked, and who will run it."""
    return RunRow(
        id=order.id,
        kind=order.kind,
        entity_id=order.entity_id,
        status="pending",
        created_at=datetime.fromisoformat(order.at),
        updated_at=at,
        entity=order.entity,
        reach=order.reach or (),
        bot=order.bot,
        chat=order.chat,
        thread=order.thread,
        model=order.model,
        executor=executor,
        order=order.to_json(),
    )


def _launch(runtime: Runtime, order: RunOrder) -> None:
    from dbos import DBOS, SetWorkflowID

    from keel.runs.workflows import run_workflow

    try:
        with SetWorkflowID(order.id):
            handle = DBOS.start_workflow(run_workflow, order.to_json())
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
    a card just decided, so its `waiting` does not count until it has read the decision."""
    from dbos import DBOS

    deadline = None if timeout_s is None else time.monotonic() + timeout_s
    store = runtime.engine.store
    past_waiting = not waiting_done
    while True:
        seen = runtime.changes
        with store.transaction() as tx:
            row = tx.run(run_id)
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


def decide_and_wake(
    runtime: Runtime, card_id: str, *, approve: bool, by: str | None, note: str | None = None
) -> tuple[CardRow, bool]:
    """Record a decision on a card, wake its run, and take the run over when the process
    that ran it is gone; the card, and whether this process took its run.

    The same decision again, while the card's run still waits, wakes the run again instead
    of being refused: a wake lost after the decision was saved (a crash, a database blip)
    is mended by deciding again. A different decision is refused, as `decide` says.
    """
    store = runtime.engine.store
    try:
        card = decide(store, card_id, approve=approve, by=by, note=note)
    except Refused:
        waiting = _still_waiting(store, card_id, approve=approve)
        if waiting is None:
            raise
        card = waiting
    wake(card)
    taken = recover_dead(runtime)
    return card, card.run_id in taken


def _still_waiting(store: Store, card_id: str, *, approve: bool) -> CardRow | None:
    """The card, when it was decided as `approve` says and its run still waits."""
    with store.transaction() as tx:
        card = tx.card(card_id)
        run = tx.run(card.run_id) if card is not None else None
    wanted = "approved" if approve else "denied"
    if card is None or card.status != wanted or run is None or run.status != "waiting":
        return None
    return card
