"""Starting runs and waiting for them; firing events; deciding cards.

What the run commands and the service call, in a process with a launched runtime
(`keel.runs.app`). A run started here runs in this process, now: its workflow is started
under the run's id, and `wait` follows the run's row until it is done, failed or waiting
for a person (woken as a run started here ends or parks, else looking every 0.1 s).
Reading runs back needs no runtime (`keel.runs.records`).
"""

from __future__ import annotations

import secrets
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from keel.brain.snapshot import Brain
from keel.brain.specs import ReachEntry
from keel.errors import Refused
from keel.link.reach import check_override, find_run
from keel.link.values import Conversation, RunRef
from keel.runs.app import Runtime
from keel.runs.approvals import wake
from keel.runs.executors import recover_dead
from keel.runs.values import RunOrder
from keel.runtime.cards import decide
from keel.store.run_values import CardRow, RunStatus
from keel.store.store import Store

# A run is followed until it reaches one of these.
SETTLED: frozenset[RunStatus] = frozenset({"done", "failed", "waiting"})
# A run started in this process wakes `wait` as it ends or parks; one working elsewhere (a
# worker took it over, a recovery) is looked at this often.
_POLL_S = 0.1
_TERMINAL = ("SUCCESS", "ERROR", "CANCELLED", "MAX_RECOVERY_ATTEMPTS_EXCEEDED")


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
    """Start the run's workflow in this process; its id. Starting an id again starts
    nothing: the run under that id goes on (or has ended) as it was."""
    from dbos import DBOS, SetWorkflowID

    from keel.runs.app import active
    from keel.runs.workflows import run_workflow

    with SetWorkflowID(order.id):
        handle = DBOS.start_workflow(run_workflow, order.to_json())
    runtime = active()
    future = getattr(handle, "future", None)  # a workflow DBOS runs here, in a thread
    if runtime is not None and future is not None:
        future.add_done_callback(lambda _: runtime.note_change())
    return order.id


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
        if status is not None and status.status in _TERMINAL:
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
