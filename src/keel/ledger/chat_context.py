"""`/context` for a chat: what its latest turn carried, the whole window, the kept links.

The window is the model's: what the turn's input used (the journaled fit's estimate), what
is reserved for the model's output, and what is left free; the input allocation is shown
beside it when it is below window minus reserve. Kept links are what later turns of the
conversation will carry without a new link, each with the turns it has left.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from keel.link.values import KeptLink
from keel.store.journal_values import Decision, TurnJournal


@dataclass(frozen=True, slots=True, kw_only=True)
class WindowUse:
    """The model's window for one turn, in tokens: used, reserved for output, free."""

    window: int
    used: int
    reserved: int
    allocation: int
    ok: bool
    counter: str | None = None

    @property
    def free(self) -> int:
        return max(0, self.window - self.used - self.reserved)

    def to_json(self) -> dict[str, Any]:
        return {
            "window": self.window,
            "used": self.used,
            "reserved": self.reserved,
            "free": self.free,
            "allocation": self.allocation,
            "ok": self.ok,
            "counter": self.counter,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class KeptUse:
    """A link kept for the conversation, and how many more turns it will ride."""

    link: KeptLink
    turns_left: int

    def to_json(self) -> dict[str, Any]:
        link = self.link
        return {
            "context": link.context,
            "entity": link.entity,
            "link": link.kind,
            "until_turn": link.until_turn,
            "turns_left": self.turns_left,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class ChatContext:
    """What the chat's latest turn carried and what stays for the next ones."""

    journal: TurnJournal
    window: WindowUse | None
    kept: tuple[KeptUse, ...]

    def to_json(self) -> dict[str, Any]:
        journal = self.journal
        conversation = journal.conversation
        return {
            "id": journal.id,
            "bot": conversation.bot,
            "chat": conversation.chat,
            "thread": conversation.thread,
            "turn": journal.turn,
            "role": journal.role,
            "at": journal.request.now.isoformat(),
            "contexts": [decision_json(d) for d in journal.decisions],
            "window": self.window.to_json() if self.window is not None else None,
            "sections": [
                {"id": s.id, "budget": s.budget, "used": s.used} for s in journal.sections
            ],
            "kept": [k.to_json() for k in self.kept],
        }


def decision_json(decision: Decision) -> dict[str, Any]:
    """One context a turn carried: attached with its size, or stubbed with its knob; a
    kept link reads `kept`, with the link it keeps and the turn that made it."""
    link = decision.link
    return {
        "context": link.context,
        "entity": link.entity,
        "link": link.shown,
        "kept": link.kept_json(),
        "status": "attached" if decision.attached else "stubbed",
        "chars": decision.chars if decision.attached else None,
        "knob": decision.knob,
    }


def chat_context(journal: TurnJournal, kept: Sequence[KeptLink], current_turn: int) -> ChatContext:
    """The `/context` view of a turn, with the conversation's kept links as they are now.

    `current_turn` is the conversation's latest turn number: a link kept up to turn N has
    N - current_turn turns left (those with none left are not shown).
    """
    fit = journal.fit
    window = (
        WindowUse(
            window=fit.window,
            used=fit.estimate,
            reserved=fit.output_reserve,
            allocation=fit.input_allocation,
            ok=fit.ok,
            counter=journal.counter,
        )
        if fit is not None
        else None
    )
    uses = [
        KeptUse(link=link, turns_left=link.until_turn - current_turn)
        for link in kept
        if link.until_turn > current_turn
    ]
    uses.sort(key=lambda k: (-k.turns_left, k.link.context, k.link.entity or ""))
    return ChatContext(journal=journal, window=window, kept=tuple(uses))
