"""Preparing one turn: link, read views, render, fit, and record — before any model call.

This is the edge where the pure stages meet the database. Everything the turn writes (its
number, the links it keeps, its ledger rows) goes in one transaction, so a turn refused
half way leaves nothing behind; its views are read in that same transaction.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection

from keel.assemble.sessions import session_delta
from keel.assemble.values import Message
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, RoleSpec, ViewRef
from keel.budget.fit import Attached, Fitted, Stub, fit_turn
from keel.budget.knobs import context_chars, turn_knobs
from keel.budget.render import Block, render_block
from keel.link.catalog import catalog
from keel.link.gather import link_turn
from keel.link.values import Conversation, Link, LinkResult, Refusal, Stored, TurnRequest
from keel.state.views import ViewRows, read_view
from keel.store import LedgerEntry, Store

LOG = logging.getLogger("keel.turn")
# Earlier messages read per turn; older ones only count in history's notice.
HISTORY_READ = 200


@dataclass(frozen=True, slots=True, kw_only=True)
class Session:
    """A CLI agent's session: it keeps what it was sent, until it compacts its context."""

    id: str
    compacted: bool = False


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
    # The role's own state views (those no context claims), read for this turn.
    renders: tuple[ViewRows, ...] = ()
    # The conversation's earlier messages, oldest first, and how many older ones were not read.
    history: tuple[Message, ...] = ()
    history_older: int = 0
    # For a CLI agent's session: what this turn sends of its contexts (None: everything).
    session_text: str | None = None

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
            "warnings": list(self.log),
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
    """Render the links that may attach and fit them into the turn's budgets."""
    knobs = turn_knobs(role, brain.manifest)
    chars_of = {
        link.context: context_chars(brain.contexts[link.context], role, brain.manifest)
        for link in links
    }
    return fit_turn(
        links,
        lambda link: render_link(brain, role, link, reader, knobs.rows),
        knobs,
        can_open=role.can("context:read"),
        chars_of=chars_of,
    )


def prepare_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    *,
    session: Session | None = None,
    before_commit: Callable[[PreparedTurn], None] | None = None,
) -> PreparedTurn:
    """Prepare and record one turn; raises `LinkError` (recording nothing) when it cannot.

    A `session` matters for a role with `agent: cli` only: its turn sends just what the
    session has not seen (see `keel.assemble.sessions`). `before_commit` sees the prepared
    turn inside its transaction; whatever it raises undoes everything the turn wrote.
    """
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
            bindings=tx.bindings_here(conversation),
            kept=tx.kept(conversation),
        )
        result: LinkResult = link_turn(brain, request, stored)
        _log_link(conversation, turn, result)
        role = brain.roles[result.role]
        fitted = fit_links(brain, role, result.links, tx.connection)
        rows = turn_knobs(role, brain.manifest).rows
        renders = tuple(
            read_view(tx.connection, ViewRef(view=view), None, limit=rows)
            for view in role.state
            if view not in brain.claimed_views
        )
        history = tx.history(conversation, before_turn=turn, limit=HISTORY_READ)
        older = (
            tx.history_count(conversation, before_turn=turn) - len(history)
            if len(history) == HISTORY_READ
            else 0
        )
        if request.input:
            tx.record_message(
                conversation, turn=turn, at=request.now, speaker="user", text=request.input
            )
        session_text = None
        if session is not None and role.agent == "cli":
            state = tx.session_state(session.id)
            session_text, state = session_delta(state, fitted.attached, compacted=session.compacted)
            tx.save_session(session.id, state)
        tx.keep(conversation, result.keep)
        tx.expire(conversation, turn)
        tx.record_ledger(_ledger(request, turn, result.role, fitted))
        prepared = PreparedTurn(
            turn=turn,
            role=result.role,
            attached=fitted.attached,
            stubs=fitted.stubs,
            refused=result.refused,
            catalog=catalog(brain, role),
            pins=result.pins,
            log=result.log,
            renders=renders,
            history=history,
            history_older=older,
            session_text=session_text,
        )
        if before_commit is not None:
            before_commit(prepared)
    return prepared


def _log_link(conversation: Conversation, turn: int, result: LinkResult) -> None:
    """Refused links (another tenant's key, a bad attach) and dropped entries, for operators."""
    where = f"{conversation.bot}/{conversation.chat}" + (
        f"/{conversation.thread}" if conversation.thread else ""
    )
    for refusal in result.refused:
        key = f"@{refusal.entity}" if refusal.entity is not None else ""
        LOG.warning(
            "turn %s in %s: %s link to %s%s refused: %s",
            turn,
            where,
            refusal.kind,
            refusal.context,
            key,
            refusal.reason,
        )
    for line in result.log:
        LOG.info("turn %s in %s: %s", turn, where, line)


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
