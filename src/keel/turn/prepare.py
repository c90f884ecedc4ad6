"""Preparing one turn: link, read views, render, fit, and record — before any model call.

This is the edge where the pure stages meet the database. Everything the turn writes (its
number, its input, the links it keeps, its ledger rows, its journal row, a CLI session's
state) goes in one transaction, so a turn refused half way leaves nothing behind; its views
are read in that same transaction. The steps, in order:

1. count the turn and read what the stores hold for this conversation (origins of the
   messages it replies to, bindings, kept links);
2. link it (`keel.link`), and log what was refused;
3. render and fit the linked contexts (`keel.turn.blocks`), and read the role's own state;
4. read the conversation's history, then record this turn's input;
5. for a CLI agent's session, work out what it has not been sent yet;
6. keep the inferred links, expire old ones, and write the ledger;
7. let the caller assemble the turn (`before_commit`), then journal it: what it decided,
   the sections' sizes and the fit, and the view rows a later re-fit needs.

A dry run does all of it, then rolls the transaction back: the counter, history, kept
links, ledger, journal and session state are as they were.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from keel.assemble.values import Assembly, Message
from keel.brain.knobs import turn_knobs
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec, ViewRef
from keel.budget.fit import Fitted
from keel.budget.rows import ViewRows
from keel.code.runner import CodeRunner
from keel.link.bindings import tenant_of
from keel.link.catalog import catalog
from keel.link.gather import link_turn, resolve_role
from keel.link.values import Conversation, LinkResult, Stored, Tenant, TurnRequest
from keel.log import logger
from keel.payload.sessions import session_delta
from keel.state.queries import Queries
from keel.state.views import late_warnings, read_view
from keel.store import Tx
from keel.store.store import Store
from keel.turn.blocks import ViewsRead, fit_read
from keel.turn.code import Asked, Rendered, ask, journaled, render
from keel.turn.journal import journal_of
from keel.turn.ledger import ledger_entries
from keel.turn.prepared import PreparedTurn, Session

LOG = logger("turn")
# Earlier messages read per turn; older ones only count in history's notice.
HISTORY_READ = 200


class _DryRun(Exception):
    """Leaves a dry run's transaction, so the store rolls it back."""

    def __init__(self, prepared: PreparedTurn) -> None:
        super().__init__("dry run")
        self.prepared = prepared


def prepare_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    *,
    session: Session | None = None,
    before_commit: Callable[[PreparedTurn], Assembly | None] | None = None,
    dry_run: bool = False,
    code: CodeRunner | None = None,
) -> PreparedTurn:
    """Prepare and record one turn; raises `LinkError` (recording nothing) when it cannot.

    A `session` matters for a role with `agent: cli` only: its turn sends just what the
    session has not seen (see `keel.payload.sessions`). `before_commit` sees the prepared
    turn inside its transaction; whatever it raises undoes everything the turn wrote, and
    the assembly it returns (if any) is journaled with the turn: its sections and its fit.
    A `dry_run` prepares the same way and records nothing (nor logs its refusals); its
    turn has no id. With a `code` runner, brain code takes part: the chat policy and every
    admitted `match` before linking (outside the transaction: a hung call holds no lock),
    the attached contexts' `render` before fitting.
    """
    asked = Asked()
    if code is not None:
        asked = ask(code, brain, resolve_role(brain, request), request)
        request = replace(request, attach=(*request.attach, *asked.attach))
    try:
        with store.transaction() as tx:
            prepared = _prepare(
                brain, tx, request, session, before_commit, dry_run=dry_run, code=code, asked=asked
            )
            if dry_run:
                raise _DryRun(prepared)
    except _DryRun as done:
        return done.prepared
    return prepared


def _prepare(
    brain: Brain,
    tx: Tx,
    request: TurnRequest,
    session: Session | None,
    before_commit: Callable[[PreparedTurn], Assembly | None] | None,
    *,
    dry_run: bool,
    code: CodeRunner | None,
    asked: Asked,
) -> PreparedTurn:
    conversation = request.conversation
    stored = _stored(tx, request)
    result = link_turn(brain, request, stored)
    if not dry_run:
        _log_link(conversation, stored.turn, result)
    role = brain.roles[result.role]
    tenant = tenant_of(brain, result.pins)
    rendered = Rendered()
    if code is not None:
        rendered = render(code, brain, role, result.links, Queries(tx.connection, tenant))
    fitted, read = fit_read(brain, role, result.links, tx.connection, tenant, rendered.answers)
    renders = _renders(brain, role, tx, tenant)
    history, older = read_history(tx, conversation, stored.turn)
    # A run's input is its own instructions (a beat's prompt, a pipeline's, an event), not
    # something a person said in the chat: later turns there must not read it as history.
    if request.input and request.run is None:
        tx.record_message(
            conversation, turn=stored.turn, at=request.now, speaker="user", text=request.input
        )
    session_text = _session_text(tx, role, fitted, session)
    tx.keep(conversation, result.keep)
    tx.expire(conversation, stored.turn)
    tx.record_ledger(ledger_entries(request, stored.turn, result.role, fitted))
    prepared = PreparedTurn(
        turn=stored.turn,
        role=result.role,
        attached=fitted.attached,
        stubs=fitted.stubs,
        refused=result.refused,
        catalog=catalog(brain, role),
        pins=result.pins,
        log=(
            *result.log,
            *asked.warnings,
            *rendered.warnings,
            *_withheld(tenant),
            *_late(brain, read, renders),
        ),
        engage=asked.engage,
        renders=renders,
        history=history,
        history_older=older,
        session_text=session_text,
        dry_run=dry_run,
    )
    assembly = before_commit(prepared) if before_commit is not None else None
    journal = journal_of(
        brain,
        request,
        stored,
        result,
        fitted,
        read,
        renders=renders,
        session=session.id if session is not None and role.agent == "cli" else None,
        assembly=assembly,
        code=journaled(asked),
        rendered=rendered.answers,
    )
    ident = tx.record_journal(journal)
    if dry_run:
        return replace(prepared, journal=journal)
    return replace(prepared, id=ident, journal=replace(journal, id=ident))


def _withheld(tenant: Tenant | None) -> tuple[str, ...]:
    """The turn's warning when the room withholds its views (MANIFEST did not load)."""
    if tenant is None or tenant.withheld is None:
        return ()
    return (f"every view in this room is {tenant.withheld}",)


# ---------------------------------------------------------------------------------------
# Reading the stores


def _stored(tx: Tx, request: TurnRequest) -> Stored:
    """Count the turn, and read what the stores hold that bears on it."""
    conversation = request.conversation
    origins = (
        tx.origins(conversation.bot, conversation.chat, request.reply_to)
        if request.reply_to
        else ()
    )
    return Stored(
        turn=tx.next_turn(conversation),
        origins=origins,
        bindings=tx.bindings_here(conversation),
        kept=tx.kept(conversation),
    )


def _renders(brain: Brain, role: RoleSpec, tx: Tx, tenant: Tenant | None) -> tuple[ViewRows, ...]:
    """The role's own state views, those no context claims (a claimed view travels with it),
    filtered to the room's tenant like every other view read in the room."""
    rows = turn_knobs(role, brain.manifest).rows
    timeout_ms = brain.manifest.state_read_timeout_ms
    return tuple(
        read_view(
            tx.connection,
            ViewRef(view=view),
            None,
            limit=rows,
            timeout_ms=timeout_ms,
            tenant=tenant,
        )
        for view in role.state
        if view not in brain.claimed_views
    )


def _late(brain: Brain, read: ViewsRead, renders: tuple[ViewRows, ...]) -> tuple[str, ...]:
    """A warning for each view the turn read that ran out of time, and so is a stub."""
    views = (*(rows for link_views in read.values() for rows in link_views), *renders)
    return late_warnings(views, brain.manifest.state_read_timeout_ms)


def read_history(tx: Tx, conversation: Conversation, turn: int) -> tuple[tuple[Message, ...], int]:
    """The newest messages before `turn`, and how many older ones were not even read."""
    history = tx.history(conversation, before_turn=turn, limit=HISTORY_READ)
    if len(history) < HISTORY_READ:
        return history, 0
    return history, tx.history_count(conversation, before_turn=turn) - len(history)


def _session_text(tx: Tx, role: RoleSpec, fitted: Fitted, session: Session | None) -> str | None:
    """For a CLI agent's session: the contexts' delta, with the session's state saved."""
    if session is None or role.agent != "cli":
        return None
    text, state = session_delta(
        tx.session_state(session.id), fitted.attached, compacted=session.compacted
    )
    tx.save_session(session.id, state)
    return text


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
