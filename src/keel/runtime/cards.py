"""A person's decision on an approval card: by a reply that says yes or no, or by name.

With `people:` in the brain, a decision is checked against the person who makes it
(`keel.brain.people.may_decide`), never against the room it came from: one from a person
not allowed is refused with the reason, recorded on the card, and the card stays pending.
The card's row takes the first decision only. Deciding needs no runs runtime: the run
waiting on the card is woken afterwards (`keel.runs.approvals.wake`), by the process that
decided when it can, else by the next worker that looks (`wake_decided`).
"""

from __future__ import annotations

import re
from datetime import UTC, datetime

from keel.brain.people import may_decide, people_of
from keel.brain.snapshot import Brain
from keel.errors import Refused, UsageError
from keel.link.values import Conversation
from keel.store import Tx
from keel.store.run_values import CardRefusal, CardRow, CardStatus
from keel.store.store import Store

_YES = {"yes", "y", "ok", "okay", "approve", "approved", "go", "sure", "ja", "oui", "si"}
_NO = {"no", "n", "deny", "denied", "stop", "cancel", "nee", "non", "nein"}
_WORD = re.compile(r"[\w']+")


def now() -> datetime:
    return datetime.now(UTC)


def decide(
    store: Store,
    card_id: str,
    *,
    approve: bool,
    by: str | None = None,
    note: str | None = None,
    brain: Brain | None = None,
    person: str | None = None,
) -> CardRow:
    """Record a person's decision on a pending card; `Refused` when it was decided already
    or `person` may not decide it under `brain`'s `people:` (that refusal is recorded on
    the card, which stays pending), `UsageError` for a card no run asked. The decision is
    recorded as `person`'s when named, else as `by`'s. Wake its run with `wake` afterwards.
    `brain` None checks no one (a caller that holds no brain)."""
    status: CardStatus = "approved" if approve else "denied"
    refusal: CardRefusal | None = None
    with store.transaction() as tx:
        found = tx.card(card_id)
        if found is None:
            raise UsageError(
                f"no approval card {card_id!r} — `keel runs <brain>` lists the runs; "
                "`keel runs <brain> show RUN` shows a run's cards"
            )
        refusal = None if brain is None else _refusal(tx, brain, found, person)
        if refusal is not None:
            # Committed with the transaction, then refused: the record outlives the refusal.
            tx.refuse_decision(card_id, refusal)
            decided = None
        else:
            if not tx.decide_card(card_id, status, now(), by=person or by, note=note):
                raise Refused(f"card {card_id} was {found.status} already")
            tx.resolve_card(found.bot, found.chat, found.message_id)
            decided = tx.card(card_id)
    if refusal is not None:
        raise Refused(f"card {card_id} stays pending: {refusal.reason}")
    if decided is None:  # the row was just updated in this transaction
        raise UsageError(f"card {card_id!r} vanished while it was decided")
    return decided


def _refusal(tx: Tx, brain: Brain, card: CardRow, person: str | None) -> CardRefusal | None:
    """Why `person` may not decide `card` (a refusal to record), or None when they may."""
    if card.status != "pending":
        return None  # deciding says it was decided already
    run = tx.run(card.run_id)
    people = people_of(brain, run.role if run is not None else None)
    allowed = may_decide(people, card.capability, person, card.risk)
    return None if allowed is True else CardRefusal(by=person, at=now(), reason=allowed)


def reply_verdict(text: str) -> bool | None:
    """A reply's yes (True) or no (False), from its first word; None when it says neither."""
    words = _WORD.findall(text.casefold())
    if not words:
        return None
    if words[0] in _YES:
        return True
    if words[0] in _NO:
        return False
    return None


def answer_reply(
    store: Store,
    conversation: Conversation,
    reply_to: tuple[str, ...],
    text: str,
    *,
    brain: Brain | None = None,
    sender: str | None = None,
) -> CardRow | None:
    """Route a reply to the pending card it quotes, if it says yes or no; None otherwise.

    The caller wakes the card's run with `wake`. A reply to a card that is not pending, or
    that says neither yes nor no, is an ordinary turn. With `brain`, the reply's `sender`
    must be allowed to decide (`decide` raises `Refused`, recorded, when not).
    """
    approve = reply_verdict(text)
    if approve is None:
        return None
    with store.transaction() as tx:
        cards = [tx.card_for_message(conversation.bot, conversation.chat, m) for m in reply_to]
        elsewhere = [tx.card(m) for m in reply_to]
    pending = [c for c in cards if c is not None and c.status == "pending"]
    if not pending:
        for card in elsewhere:
            if card is not None and card.status == "pending" and card.chat == conversation.chat:
                # A yes to another bot's card would pass for an ordinary turn: say so.
                raise Refused(
                    f"card {card.id} was posted by bot '{card.bot}': reply to it through "
                    f"that bot (--bot {card.bot}) — this reply, through bot "
                    f"'{conversation.bot}', decides nothing"
                )
        return None
    who = f"{conversation.bot}/{conversation.chat}"
    return decide(
        store,
        pending[0].id,
        approve=approve,
        by=f"reply in {who}",
        note=text[:200],
        brain=brain,
        person=sender,
    )
