"""Approval cards: a tool call that waits, durably, for a person's yes or no.

Which calls wait is the brain's `approvals:` policy (`keel.brain.knobs.approval_required`:
the role's entries over MANIFEST's, a capability over its risk class, `dangerous` by
default). In a run, such a call:

1. posts a card — a message to the run's chat with the run's origin, kept at any age while
   it is pending — and records it (`keel_cards`); the run is `waiting` (step `card`);
2. waits with `DBOS.recv` on the card's topic, until the card's deadline; the wait
   survives a crash, and its deadline is the journal's, not the process's;
3. reads the verdict from the card's row (step `decision`): approved, denied, or, with no
   answer by the deadline, timed out — which denies. A wait that ends early with the
   card still pending waits again for the time left.

A person decides with `decide` (`keel.runtime.cards`): by replying to the card (yes or no), with
`keel approve BRAIN CARD --yes|--no`, or through the service. The card's row takes the
first decision only; the workflow is then woken with `DBOS.send` (the row, not the
message, is what it reads, so a message lost in a crash costs only the wait).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import datetime, timedelta
from typing import Any

from keel.assemble.values import ToolCall
from keel.brain.knobs import approval_required
from keel.brain.people import approvals_chat
from keel.brain.specs import ReachEntry, RoleSpec
from keel.errors import Refused
from keel.link.values import Conversation, Origin, TurnRequest
from keel.runs.app import LEAVE
from keel.runs.context import RunContext
from keel.runs.journal import Done, Json, durable, nothing, now, once
from keel.runtime.loop import Approve, Verdict
from keel.store import Tx
from keel.store.run_values import CardRefusal, CardRow, CardStatus
from keel.store.store import Store
from keel.tools.registry import Registry, Tool
from keel.tools.send import check_pin, origin_of, record_send, send_preview
from keel.tools.send_message import PREVIEW_ID, SEND_CAPABILITY, SEND_MESSAGE

# How much of a call's arguments a card shows.
_SHOWN = 300


def approvals(context: RunContext, tools: Registry, request: TurnRequest) -> Approve:
    """The approval hook of a run's turns: a call the policy holds waits for a card.

    The call is checked first as it would be when it runs (its arguments, the role's
    capability, and what its tool checks, such as a send's origin rules): a call that
    would be refused is refused now, and nobody is asked to approve it.
    """

    def approve(role: RoleSpec, call: ToolCall) -> Verdict | None:
        tool = tools.get(call.name)
        if tool is None or call.problem is not None:
            return None  # the registry refuses it with its reason
        if not approval_required(context.brain, role, tool.capability, tool.risk):
            return None

        def check() -> Json:
            try:
                return {"preview": tools.preview(context.brain, context.store, request, role, call)}
            except Refused as exc:
                return {"refused": str(exc)}

        # A step: a replay (a decision taken in another process resumes the run so) must
        # take the check as it was, not check again what the approved call has since done.
        checked = durable("check", check)
        if "refused" in checked:
            refused(context, call.name, checked["refused"])
            return Verdict(approved=False, said=checked["refused"])
        card = ask(context, tool, call, preview=checked["preview"])
        return wait(context, card)

    return approve


def refused(context: RunContext, tool: str, reason: str) -> None:
    """Record a call refused by its check before any card (a failed step of the run's
    record), so an operator sees what the agent tried — an access_widen above all."""
    seq = context.next_seq()

    def write(_tx: Tx, _: None) -> Done:
        detail = f"{tool} refused before its card: {reason}"
        return Done(output={"refused": reason}, detail=detail, status="failed")

    durable("refused", lambda: once(context.store, context.run_id, seq, "check", nothing, write))


def ask(context: RunContext, tool: Tool, call: ToolCall, *, preview: str | None = None) -> CardRow:
    """Post and record a card for a tool call; the run is `waiting` (a durable step).
    `preview`: what the call will do as its tool shows it, else its arguments are shown."""
    if preview is not None:
        summary, text = preview, f"Approve? {preview}\nReply yes or no."
    else:
        shown = json.dumps(dict(call.arguments), ensure_ascii=False)
        if len(shown) > _SHOWN:
            shown = shown[:_SHOWN] + "…"
        summary = f"{call.name}({shown})"
        text = f"Approve {summary}? Reply yes or no. (risk {tool.risk})"
    return approval_card(
        context,
        text,
        summary=summary,
        tool=call.name,
        arguments=call.arguments,
        risk=tool.risk,
        capability=tool.capability,
    )


def held_send(
    context: RunContext,
    text: str,
    *,
    tool: str,
    conversation: Conversation,
    about_entity: str | None = None,
    about_context: str | None = None,
    reach: tuple[ReachEntry, ...] | None = None,
) -> Verdict | None:
    """A run's own send (its final answer, a pipeline's `send`) under `message:send`'s
    policy, as a `send_message` call is: None when the policy lets it go; else the verdict
    of a card showing the message as it will be sent. The origin rules and the room's pin
    are checked before the card is posted: `Refused` when the send would be refused (no
    card is asked)."""
    plan = context.planned
    if not approval_required(context.brain, plan.role, SEND_CAPABILITY, SEND_MESSAGE.risk):
        return None

    def check() -> Json:
        try:
            origin = origin_of(
                context.brain,
                conversation=conversation,
                message_id=PREVIEW_ID,
                sent_at=now(),
                run=plan.ref,
                reach=plan.reach if reach is None else reach,
                about_entity=about_entity,
                about_context=about_context,
            )
            with context.store.reading() as tx:
                check_pin(tx, context.brain, origin)
        except Refused as exc:
            return str(exc)
        return None

    # A step, as a tool call's check is: a replay takes the check as it was taken.
    why = durable("check", check)
    if why is not None:
        raise Refused(why)
    preview = send_preview(
        conversation,
        text,
        about_entity=about_entity,
        about_context=about_context,
        risk=SEND_MESSAGE.risk,
    )
    about = {"entity": about_entity, "context": about_context}
    arguments: dict[str, Any] = {"text": text, "chat": conversation.chat}
    if conversation.thread:
        arguments["thread"] = conversation.thread
    if about_entity is not None or about_context is not None:
        arguments["about"] = {k: v for k, v in about.items() if v is not None}
    card = approval_card(
        context,
        f"Approve? {preview}\nReply yes or no.",
        conversation=conversation,
        summary=preview,
        tool=tool,
        arguments=arguments,
        risk=SEND_MESSAGE.risk,
        capability=SEND_CAPABILITY,
    )
    return wait(context, card)


def approval_card(
    context: RunContext,
    text: str,
    *,
    conversation: Conversation | None = None,
    summary: str | None = None,
    tool: str = "request_approval",
    arguments: Mapping[str, Any] | None = None,
    risk: str = "",
    capability: str = "",
    about: Mapping[str, Any] | None = None,
) -> CardRow:
    """Post a card asking `text` to the run's chat (or `conversation`) and record it; the
    run is `waiting` until its decision (a durable step). `about` keys the card's origin
    as it keys a send (`{entity}` or `{context}`), under the same rules.

    With an operators' chat (`approvals: {chat:}`), the card goes there instead, naming the
    room it is about; its origin then carries no reach, so a reply in the operators' chat
    never brings the client's contexts into it.
    """
    plan = context.planned
    seq = context.next_seq()
    card_id = context.message_id(seq)
    room = conversation or plan.conversation
    operators = approvals_chat(context.brain, plan.role)
    where = room if operators is None else Conversation(bot=room.bot, chat=operators)
    if operators is not None:
        thread = f" thread {room.thread}" if room.thread else ""
        said = f" — for {room.chat}{thread} (run {plan.ref.key})"
        text += said
        summary = None if summary is None else summary + said

    def write(tx: Tx, _: None) -> Done:
        asked = now()
        card = CardRow(
            id=card_id,
            run_id=context.run_id,
            tool=tool,
            arguments=dict(arguments or {}),
            risk=risk,
            capability=capability,
            summary=summary or text,
            bot=where.bot,
            chat=where.chat,
            thread=where.thread,
            message_id=card_id,
            status="pending",
            asked_at=asked,
            timeout_at=asked + timedelta(seconds=plan.timeout_s),
        )
        if operators is not None:
            origin = Origin(
                bot=where.bot,
                chat=where.chat,
                message_id=card_id,
                sent_at=asked,
                feature=plan.feature,
                run=plan.ref.key,
                pending_card=True,
            )
        elif about:
            origin = origin_of(
                context.brain,
                conversation=where,
                message_id=card_id,
                sent_at=asked,
                run=plan.ref,
                reach=plan.reach,
                about_entity=about.get("entity"),
                about_context=about.get("context"),
                pending_card=True,
            )
        else:  # a card the agent's call raised: its origin is the run's reach, as it stands
            origin = Origin(
                bot=where.bot,
                chat=where.chat,
                thread=where.thread,
                message_id=card_id,
                sent_at=asked,
                feature=plan.feature,
                run=plan.ref.key,
                reach=plan.reach,
                pending_card=True,
            )
        record_send(tx, context.brain, origin, f"{text} [card {card_id}]")
        tx.record_card(card)
        tx.set_run_status(context.run_id, "waiting", asked)
        return Done(output=card_json(card), detail=f"card {card_id}: {card.summary}")

    data = durable("card", lambda: once(context.store, context.run_id, seq, "card", nothing, write))
    return card_of(data)


def wait(context: RunContext, card: CardRow) -> Verdict:
    """Wait for a decision on the card, until its timeout; then read the verdict.

    Only the card's row decides: a wait that ends while the card is still pending and its
    deadline has not passed (a wake meant for someone else, a wait cut short) waits again
    for the rest of the time instead of timing out. Each look is a step of its own, so a
    replay takes the same number of waits. A process that closes wakes its waits to leave
    (`keel.runs.app.Left`): no look follows such a wake, so the run's record shows none.
    """
    from dbos import DBOS

    while True:
        left = max((card.timeout_at - now()).total_seconds(), 0.0)
        with context.runtime.parked(context.run_id, card.id):
            woken = DBOS.recv(topic=card.id, timeout_seconds=left)
        if isinstance(woken, dict) and LEAVE in woken:
            # A closing process woke it to leave (`keel.runs.app.Runtime.leave`): it leaves
            # as it parks again, and a replay, reading this wake back, waits again.
            continue
        status = _decision(context, card, woken=woken is not None)
        if status != "pending":
            return verdict(card, status)


def _decision(context: RunContext, card: CardRow, *, woken: bool) -> str:
    """Step `decision`: the card's status now — timed out when it is still pending at its
    deadline, else `pending` while there is time left."""
    seq = context.next_seq()

    def write(tx: Tx, _: None) -> Done:
        found = tx.card(card.id)
        if found is not None and found.status == "pending":
            if now() < card.timeout_at:
                detail = "still pending: waiting again" + ("" if woken else " (woken early)")
                return Done(output={"status": "pending", "woken": woken}, detail=detail)
            tx.decide_card(card.id, "timed-out", now(), note="nobody answered in time")
            tx.resolve_card(found.bot, found.chat, found.message_id)
            found = tx.card(card.id)
        tx.set_run_status(context.run_id, "running", now())
        status: CardStatus = found.status if found is not None else "timed-out"
        return Done(output={"status": status, "woken": woken}, detail=status)

    data = durable(
        "decision",
        lambda: once(context.store, context.run_id, seq, "decision", nothing, write),
    )
    return str(data["status"])


def verdict(card: CardRow, status: str) -> Verdict:
    """What a card's status means for its call."""
    if status == "approved":
        return Verdict(approved=True, said=f"approved by a person (card {card.id})")
    if status == "denied":
        return Verdict(approved=False, said=f"a person denied this call (card {card.id})")
    return Verdict(
        approved=False,
        said=f"nobody approved this call in time, so it was denied (card {card.id})",
    )


def wake(card: CardRow) -> None:
    """Wake the run waiting on a decided card (in a process with a launched runtime)."""
    from dbos import DBOS

    # One wake per decision: deciding again the same way sends nothing new, and a wake sent
    # before the decision (which finds the card pending) cannot stand in for the real one.
    key = f"{card.id}:{card.status}"
    DBOS.send(card.run_id, {"card": card.id}, topic=card.id, idempotency_key=key)


def wake_decided(store: Store) -> list[str]:
    """Wake every waiting run whose card was decided where no runtime could wake it (a
    reply recorded by a chat turn, the service's turn route); the cards woken.

    Waking is idempotent, so a card woken already, or by two workers at once, wakes its
    run once.
    """
    with store.transaction() as tx:
        waiting = tx.runs(status="waiting", limit=1000)
        decided = [
            card
            for run in waiting
            for card in tx.cards(run_id=run.id)
            if card.status in ("approved", "denied")
        ]
    for card in decided:
        wake(card)
    return [card.id for card in decided]


def card_json(card: CardRow) -> dict[str, Any]:
    """A card as a run's record shows it (and as its step journals it)."""
    return {
        "id": card.id,
        "run_id": card.run_id,
        "status": card.status,
        "tool": card.tool,
        "arguments": dict(card.arguments),
        "risk": card.risk,
        "capability": card.capability,
        "summary": card.summary,
        "bot": card.bot,
        "chat": card.chat,
        "thread": card.thread,
        "message_id": card.message_id,
        "asked_at": card.asked_at.isoformat(),
        "timeout_at": card.timeout_at.isoformat(),
        "decided_at": None if card.decided_at is None else card.decided_at.isoformat(),
        "decided_by": card.decided_by,
        "note": card.note,
        "refused": [{"by": r.by, "at": r.at.isoformat(), "reason": r.reason} for r in card.refused],
    }


def card_of(data: Mapping[str, Any]) -> CardRow:
    """A card from `card_json`."""
    status = data["status"]
    statuses: dict[str, CardStatus] = {
        "pending": "pending",
        "approved": "approved",
        "denied": "denied",
        "timed-out": "timed-out",
    }
    return CardRow(
        id=data["id"],
        run_id=data["run_id"],
        tool=data["tool"],
        arguments=data["arguments"],
        risk=data["risk"],
        capability=data["capability"],
        summary=data["summary"],
        bot=data["bot"],
        chat=data["chat"],
        thread=data["thread"],
        message_id=data["message_id"],
        status=statuses[status],
        asked_at=datetime.fromisoformat(data["asked_at"]),
        timeout_at=datetime.fromisoformat(data["timeout_at"]),
        decided_at=None
        if data["decided_at"] is None
        else datetime.fromisoformat(data["decided_at"]),
        decided_by=data["decided_by"],
        note=data["note"],
        # Steps journaled before refusals were recorded have none.
        refused=tuple(
            CardRefusal(by=r["by"], at=datetime.fromisoformat(r["at"]), reason=r["reason"])
            for r in data.get("refused", ())
        ),
    )


def _time(value: str | None) -> datetime | None:
    return None if value is None else datetime.fromisoformat(value)
