"""Run orders: what a run is asked to do, made from the brain before anything starts.

An order names the heartbeat, hook or scenario, the entity and reach, where the run speaks
and which model answers; `pending` is the row that records it before its workflow starts.
Making an order reads the brain only: no database, no DBOS.
"""

from __future__ import annotations

import secrets
import threading
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from keel.brain.loader import inline_hooks
from keel.brain.problems import did_you_mean
from keel.brain.snapshot import Brain
from keel.brain.specs import EntitySpec, ReachEntry
from keel.errors import UsageError
from keel.link.reach import check_override, find_run
from keel.link.values import Conversation, RunRef
from keel.runs.values import RunOrder
from keel.store.run_values import RunRow

# The ids this process made and no execution has taken yet: a run with one of these can
# have no rows, so its first execution skips the look for them (one read transaction
# fewer per run). A recovery, a twin or a run made elsewhere is not here, and looks.
# Runs made here and run by another process never take theirs: past the bound the set
# starts afresh, which costs those runs only their skipped look.
_minted: set[str] = set()
_minting = threading.Lock()
_MINTED_BOUND = 10_000


def new_id(kind: str, ident: str) -> str:
    """A new run's id: what it is a run of, and a random tail."""
    made = f"{kind}-{ident}-{secrets.token_hex(4)}"
    with _minting:
        if len(_minted) >= _MINTED_BOUND:
            _minted.clear()
        _minted.add(made)
    return made


def first_taken(run_id: str) -> bool:
    """True once for an id this process made, when the first execution takes it: no
    execution of that run has written anything yet (a later one may have; it looks)."""
    with _minting:
        if run_id not in _minted:
            return False
        _minted.discard(run_id)
        return True


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


def unheard(brain: Brain, event: str) -> UsageError:
    """The error of firing an event no hook listens to: a misspelt event would otherwise
    run nothing without a word."""
    for clash in _clashing_inline_hooks(brain, event):
        held = brain.entities[clash.key]
        return UsageError(
            f"no hook listens to {event!r}: the inline hook '{clash.id}' of scenario "
            f"'{clash.scenario}' ({clash.path}) would, but its id is {held.path}'s — "
            "give it another `id:` (keel doctor lists it)"
        )
    events = hook_events(brain)
    hint = did_you_mean(event, events) if events else " — the brain has no hooks"
    return UsageError(f"no hook listens to {event!r}{hint}")


def _clashing_inline_hooks(brain: Brain, event: str) -> list[EntitySpec]:
    """Scenarios' inline hooks for `event` that the loader skipped: their id was taken."""
    return [
        hook
        for scenario in brain.entities.values()
        if scenario.kind == "scenario" and scenario.hooks
        for hook in inline_hooks(scenario)
        if hook.event == event
        and hook.key in brain.entities
        and brain.entities[hook.key].scenario != scenario.id
    ]
