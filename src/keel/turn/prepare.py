"""The turn pipeline: one function runs a turn's stages in order, in one transaction.

This is the edge where the pure stages meet the database. Brain code is asked first
(`consult`: the chat policy and every admitted `match`), outside any transaction, so a
hung call holds no lock. Then `prepare_in` runs the stages, in order, in the caller's
transaction:

1. read (`Tx.read_turn`, one call): count the turn and read its stored state — the
   origins of the messages it replies to, the bindings, the kept links, the history, a
   CLI session's last state;
2. link it (`keel.link`), and log what was refused;
3. fit: render the linked contexts within their budgets (`keel.budget.blocks`, each
   one's views read through the turn's `keel.state.views.TurnViews`, with its code's
   `render`), and read the role's own state views; for a CLI agent's session, work out
   what it has not been sent yet;
4. assemble the model input (`keel.turn.assembly`) and check that it fits — a turn that
   does not raises `FitOverflow`, and so records nothing;
5. record (`Tx.record_turn`, one call): this turn's input, a session's state, the
   inferred links kept and old ones expired, the ledger, and the journal (what it
   decided, the sections' sizes and the fit, the view rows a re-fit needs).

`prepare` wraps them in a transaction of its own; a run writes its step's row in the
same transaction (`keel.runs.agent`). Everything a turn writes goes in that one
transaction, so a turn refused half way leaves nothing behind. A dry run does all of it,
then rolls the transaction back. Without a token counter (`prepare_turn`), step 4 is
skipped: the turn is prepared and journaled without sections or fit.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from keel.assemble.values import Assembly, Message
from keel.assemble.widgets import numbered
from keel.assemble.widgets import replied_lines as replied_lines_of
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.budget.blocks import fit_blocks
from keel.code.runner import CodeRunner
from keel.errors import UsageError
from keel.link.gather import Resolved, link_turn, resolve_turn
from keel.link.values import Conversation, LinkResult, Tenant, TurnRequest
from keel.log import logger
from keel.payload.sessions import held, session_delta
from keel.state.views import TurnViews
from keel.store import Tx
from keel.store.store import Store
from keel.store.turn_io import HISTORY_READ, TurnRecords
from keel.tokens import TokenCounter
from keel.turn.assembly import ToolsFor, assemble_turn
from keel.turn.code import MATCH_LINES, Asked, Rendered, Room, ask, journaled, render
from keel.turn.journal import journal_of
from keel.turn.ledger import ledger_entries
from keel.turn.prepared import PreparedTurn, Session

LOG = logger("turn")
# Before every turn there is: the room's lines so far, whatever the turn's number.
EVERY_TURN = 2**62


def no_tools(_role: RoleSpec) -> tuple[()]:
    """A turn assembled with no tools."""
    return ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Preparation:
    """What a turn is prepared from: the brain snapshot, the request, and the means.

    Without a `counter` the turn is not assembled (its journal has no sections or fit).
    """

    brain: Brain
    request: TurnRequest
    counter: TokenCounter | None = None
    tools: ToolsFor = no_tools
    session: Session | None = None
    code: CodeRunner | None = None


@dataclass(frozen=True, slots=True, kw_only=True)
class Consulted:
    """A preparation resolved and asked: the turn's role, settings and run, resolved once
    for every stage, and the request with brain code's attach."""

    preparation: Preparation
    resolved: Resolved
    request: TurnRequest
    asked: Asked


class _DryRun(Exception):
    """Leaves a dry run's transaction, so the store rolls it back."""

    def __init__(self, done: tuple[PreparedTurn, Assembly | None]) -> None:
        super().__init__("dry run")
        self.done = done


def prepare(
    store: Store, preparation: Preparation, *, dry_run: bool = False
) -> tuple[PreparedTurn, Assembly | None]:
    """Prepare, assemble (with a counter) and record one turn in a transaction of its own.

    Raises `LinkError` or `FitOverflow` recording nothing. A `dry_run` prepares the same
    way and records nothing (nor logs its refusals); its turn has no id.
    """
    consulted = consult(preparation, store)
    try:
        with store.transaction() as tx:
            done = prepare_in(tx, consulted, dry_run=dry_run)
            if dry_run:
                raise _DryRun(done)
    except _DryRun as dry:
        return dry.done
    return done


def consult(preparation: Preparation, store: Store) -> Consulted:
    """What every stage reads, resolved once — the role, its settings, the run and its
    reach — and brain code's say before linking: the chat policy and every `match`
    (which reads the room's last lines from `store`, in a read that holds no lock)."""
    brain, request, code = preparation.brain, preparation.request, preparation.code
    resolved = resolve_turn(brain, request)
    asked = Asked()
    if code is not None:
        asked = ask(code, brain, resolved, request, lambda: _room(store, request))
        if asked.attach:
            request = replace(request, attach=(*request.attach, *asked.attach))
    return Consulted(preparation=preparation, resolved=resolved, request=request, asked=asked)


def _room(store: Store, request: TurnRequest) -> Room:
    """The room's last lines and the messages the turn replies to, as `match` reads them."""
    conversation = request.conversation
    with store.reading() as tx:
        lines = tx.history(conversation, before_turn=EVERY_TURN, limit=MATCH_LINES)
        replied = tx.replied(conversation, request.reply_to)
    return Room(lines=tuple((m.role, m.text) for m in lines), replied=replied)


def prepare_in(
    tx: Tx, consulted: Consulted, *, dry_run: bool = False
) -> tuple[PreparedTurn, Assembly | None]:
    """The turn's stages, in order, in `tx` (see the module docstring)."""
    given, request, asked = consulted.preparation, consulted.request, consulted.asked
    brain, session, code = given.brain, given.session, given.code
    resolved = consulted.resolved
    role, settings = resolved.role, resolved.settings
    conversation = request.conversation
    in_session = session if session is not None and role.agent == "cli" else None
    # 1. read stored state
    state = tx.read_turn(
        conversation,
        reply_to=request.reply_to,
        session=in_session.id if in_session is not None else None,
    )
    stored = state.stored
    # A reply to a widget reads its lines as the person saw them (one more read, only then).
    replied_lines: tuple[tuple[str, str], ...] = ()
    # Only a widget of a context the turn's role admits: its lines are that context's rows.
    widgets = [o for o in stored.origins if o.widget is not None and resolved.role.admits(o.widget)]
    if widgets:
        replied_lines = replied_lines_of(widgets, tx.replied(conversation, request.reply_to))
    # 2. link
    result = link_turn(brain, request, stored, resolved)
    if not dry_run:
        _log_link(conversation, stored.turn, result)
    tenant = result.tenant
    # 3. fit
    rendered = Rendered()
    if code is not None:
        rendered = render(code, brain, settings, result.links, state.views, tenant)
    views = TurnViews(
        connection=state.views,
        contexts=brain.contexts,
        rows=settings.knobs.rows,
        timeout_ms=settings.read_timeout_ms,
        tenant=tenant,
    )
    fitted = fit_blocks(brain, settings, result.links, views.of, rendered.answers)
    renders = views.own(tuple(v for v in role.state if v not in brain.claimed_views))
    session_text, session_state = None, None
    session_held: frozenset[tuple[str, str | None]] = frozenset()
    if in_session is not None and state.sent is not None:
        stubbed = [s.link.pair for s in fitted.stubs]
        session_text, session_state = session_delta(
            state.sent, fitted.attached, compacted=in_session.compacted, stubbed=stubbed
        )
        if not in_session.compacted:
            session_held = held(state.sent, stubbed)
    prepared = PreparedTurn(
        turn=stored.turn,
        role=result.role,
        attached=fitted.attached,
        stubs=fitted.stubs,
        refused=result.refused,
        catalog=settings.catalog,
        pins=result.pins,
        log=(*result.log, *asked.warnings, *rendered.warnings, *_withheld(tenant), *views.late),
        engage=asked.engage,
        renders=renders,
        history=state.history,
        history_older=state.older,
        session_text=session_text,
        replied_lines=replied_lines,
        session_held=session_held,
        dry_run=dry_run,
    )
    # 4. assemble, and check the fit
    assembly = None
    if given.counter is not None:
        assembly = assemble_turn(
            brain,
            request,
            prepared,
            given.counter,
            given.tools,
            contexts=session_text,
            settings=settings,
            carries_contexts=resolved.carries_contexts,
            refuse_overflow=True,
        )
    # 5. record: the input, a session's state, kept links, the ledger and the journal
    journal = journal_of(
        brain,
        request,
        stored,
        result,
        fitted,
        views.read,
        settings=settings,
        reach=resolved.reach,
        catalog=prepared.catalog,
        renders=renders,
        session=in_session.id if in_session is not None else None,
        assembly=assembly,
        code=journaled(asked),
        rendered=rendered.answers,
        widget_lines=tuple((c, numbered(text)) for c, text in replied_lines),
    )
    ident = tx.record_turn(
        TurnRecords(
            conversation=conversation,
            turn=stored.turn,
            at=request.now,
            # A run's input is its own instructions (a beat's prompt, a pipeline's, an
            # event), not something a person said: later turns must not read it as history.
            said=request.input if request.input and request.run is None else None,
            session=(in_session.id, session_state)
            if in_session is not None and session_state is not None
            else None,
            keep=result.keep,
            ledger=tuple(ledger_entries(request, stored.turn, result.role, fitted)),
            journal=journal,
        )
    )
    if dry_run:
        return replace(prepared, journal=journal), assembly
    return replace(prepared, id=ident, journal=replace(journal, id=ident)), assembly


def assembled(done: tuple[PreparedTurn, Assembly | None]) -> tuple[PreparedTurn, Assembly]:
    """A turn prepared with a counter, and so assembled."""
    prepared, assembly = done
    if assembly is None:
        raise UsageError("this turn was prepared without a token counter — give one")
    return prepared, assembly


def prepare_turn(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    *,
    session: Session | None = None,
    dry_run: bool = False,
    code: CodeRunner | None = None,
) -> PreparedTurn:
    """Prepare and record one turn without assembling it (its journal has no sections).

    Raises `LinkError` (recording nothing) when it cannot. A `session` matters for a role
    with `agent: cli` only: its turn sends just what the session has not seen (see
    `keel.payload.sessions`). With a `code` runner, brain code takes part.
    """
    given = Preparation(brain=brain, request=request, session=session, code=code)
    return prepare(store, given, dry_run=dry_run)[0]


def prepare_and_assemble(
    brain: Brain,
    store: Store,
    request: TurnRequest,
    counter: TokenCounter,
    tools: ToolsFor,
    *,
    session: Session | None = None,
    dry_run: bool = False,
    code: CodeRunner | None = None,
) -> tuple[PreparedTurn, Assembly]:
    """Prepare the turn and assemble its input in one transaction, journaled together.

    A turn whose input does not fit raises `FitOverflow` before any model call, and
    records nothing: the same request can be retried once a budget is changed. A `dry_run`
    records nothing either way.
    """
    given = Preparation(
        brain=brain, request=request, counter=counter, tools=tools, session=session, code=code
    )
    return assembled(prepare(store, given, dry_run=dry_run))


def _withheld(tenant: Tenant | None) -> tuple[str, ...]:
    """The turn's warning when the room withholds its views (MANIFEST did not load)."""
    if tenant is None or tenant.withheld is None:
        return ()
    return (f"every view in this room is {tenant.withheld}",)


# ---------------------------------------------------------------------------------------
# Reading the stores


def read_history(tx: Tx, conversation: Conversation, turn: int) -> tuple[tuple[Message, ...], int]:
    """The newest messages before `turn`, and how many older ones were not even read
    (as a turn reads them, for a turn read again later)."""
    history = tx.history(conversation, before_turn=turn, limit=HISTORY_READ)
    if len(history) < HISTORY_READ:
        return history, 0
    return history, tx.history_count(conversation, before_turn=turn) - len(history)


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
