"""Preparing one turn: link, read views, render, fit, and record — before any model call.

This is the edge where the pure stages meet the database. Everything the turn writes (its
number, the links it keeps, its ledger rows) goes in one transaction, so a turn refused
half way leaves nothing behind; its views are read in that same transaction.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec
from keel.budget.fit import Attached, Fitted, Stub, fit_turn
from keel.budget.knobs import context_chars, turn_knobs
from keel.budget.render import Block, render_block
from keel.link.catalog import catalog
from keel.link.gather import link_turn
from keel.link.values import Link, LinkResult, Refusal, Stored, TurnRequest
from keel.state.views import read_view
from keel.store import LedgerEntry, Store


@dataclass(frozen=True, slots=True, kw_only=True)
class PreparedTurn:
    """What one turn carries: attached blocks, stubs, refusals, the catalog."""

    turn: int
    role: str
    attached: tuple[Attached, ...]
    stubs: tuple[Stub, ...]
    refused: tuple[Refusal, ...]
    catalog: tuple[tuple[str, str], ...]
    pins: dict[str, str | None]
    log: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        """The `keel turn --json` shape."""
        return {
            "turn": self.turn,
            "role": self.role,
            "attached": [
                {
                    "context": a.link.context,
                    "feature": a.link.feature,
                    "entity": a.link.entity,
                    "link": a.link.kind,
                    "chars": a.block.chars,
                }
                for a in self.attached
            ],
            "stubbed": [
                {
                    "context": s.link.context,
                    "entity": s.link.entity,
                    "link": s.link.kind,
                    "knob": s.knob,
                    "text": s.text,
                }
                for s in self.stubs
            ],
            "refused": [
                {"context": r.context, "entity": r.entity, "link": r.kind, "reason": r.reason}
                for r in self.refused
            ],
            "catalog": [{"context": c, "description": d} for c, d in self.catalog],
            "blocks": [
                {"context": a.link.context, "entity": a.link.entity, "text": a.block.text}
                for a in self.attached
            ],
        }


def render_link(
    brain: Brain, role: RoleSpec, link: Link, reader: Connection, rows: int
) -> Block | None:
    """One linked context's block, its views read now, within its chars (None: too big)."""
    context: ContextSpec = brain.contexts[link.context]
    views = [read_view(reader, ref, link.entity, limit=rows) for ref in context.data]
    return render_block(
        feature=context.feature,
        context=context.id,
        entity=link.entity,
        link=link.kind,
        instructions=context.instructions,
        views=views,
        chars=context_chars(context, role, brain.manifest),
    )


def fit_links(brain: Brain, role: RoleSpec, links: Sequence[Link], reader: Connection) -> Fitted:
    """Render every link's block and fit them into the turn's budgets."""
    knobs = turn_knobs(role, brain.manifest)
    blocks = {link.pair: render_link(brain, role, link, reader, knobs.rows) for link in links}
    chars_of = {
        link.context: context_chars(brain.contexts[link.context], role, brain.manifest)
        for link in links
    }
    return fit_turn(links, blocks, knobs, can_open=role.can("context:read"), chars_of=chars_of)


def prepare_turn(brain: Brain, store: Store, request: TurnRequest) -> PreparedTurn:
    """Prepare and record one turn; raises `LinkError` (recording nothing) when it cannot."""
    conversation = request.conversation
    with store.transaction() as tx:
        turn = tx.next_turn(conversation)
        origins = (
            tx.origins(conversation.bot, conversation.chat, request.reply_to)
            if request.reply_to
            else ()
        )
        stored = Stored(
            turn=turn,
            origins=origins,
            bindings=tx.bindings(conversation.chat),
            kept=tx.kept(conversation),
        )
        result: LinkResult = link_turn(brain, request, stored)
        role = brain.roles[result.role]
        fitted = fit_links(brain, role, result.links, tx.connection)
        tx.keep(conversation, result.keep)
        tx.expire(conversation, turn)
        tx.record_ledger(_ledger(request, turn, result.role, fitted))
    return PreparedTurn(
        turn=turn,
        role=result.role,
        attached=fitted.attached,
        stubs=fitted.stubs,
        refused=result.refused,
        catalog=catalog(brain, role),
        pins=result.pins,
        log=result.log,
    )


def _ledger(request: TurnRequest, turn: int, role: str, fitted: Fitted) -> list[LedgerEntry]:
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
