"""The ledger entries of a prepared turn: each context attached, with its size, or stubbed."""

from __future__ import annotations

from keel.budget.fit import Fitted
from keel.link.values import TurnRequest
from keel.store import LedgerEntry


def ledger_entries(request: TurnRequest, turn: int, role: str, fitted: Fitted) -> list[LedgerEntry]:
    """One entry per context the turn's tail carried: attached (its chars) or stubbed (its knob)."""
    conversation = request.conversation
    rows = [(a.link, a.block.chars, None) for a in fitted.attached] + [
        (s.link, 0, s.knob) for s in fitted.stubs
    ]
    return [
        LedgerEntry(
            bot=conversation.bot,
            chat=conversation.chat,
            thread=conversation.thread,
            turn=turn,
            role=role,
            at=request.now,
            context=link.context,
            feature=link.feature,
            entity=link.entity,
            link=link.kind,
            chars=chars,
            knob=knob,
        )
        for link, chars, knob in rows
    ]
