"""Brain code in a turn: the chat policy's attach, each admitted context's `match`, then the
attached contexts' `render` — all through one `CodeRunner`, each call bounded and checked.

The turn's calls of one kind go to the runner at once, so code adds at most about twice
the longest timeout to a turn (matches, then renders; the chat policy's verdicts with the
matches). Whatever fails — a module that does not load, a call that raises, hangs or
answers the wrong shape — links nothing and renders nothing, and says why in the turn's
warnings; the turn goes on.

What the code printed or passed to `ctx.log` joins the warnings too, one line each
(`features/x/t.context.py: match said: ...`): that is how its author, debugging with
`keel turn`, sees it. Keel's log has the same lines.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection

from keel.assemble.texts import current_text
from keel.brain.knobs import TurnSettings
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, ReachEntry, RoleSpec
from keel.code.runner import CodeRunner
from keel.code.values import (
    EngageAnswer,
    EngageCall,
    Envelope,
    MatchAnswer,
    MatchCall,
    RenderAnswer,
    RenderCall,
    RunView,
    TurnView,
)
from keel.link.gather import Resolved
from keel.link.values import Link, Tenant, TurnRequest
from keel.log import shown
from keel.state.queries import Queries
from keel.store.journal_values import CodeAnswer

Pair = tuple[str, str | None]
# The room's lines before a chat turn that `match` reads with its message.
MATCH_LINES = 6


@dataclass(frozen=True, slots=True, kw_only=True)
class Room:
    """What a chat turn's `match` reads besides the message: the room's last lines
    (speaker, text), oldest first, and the text of each message it replies to, by id."""

    lines: tuple[tuple[str, str], ...] = ()
    replied: Mapping[str, str] = field(default_factory=dict)


@dataclass(frozen=True, slots=True, kw_only=True)
class Asked:
    """What brain code answered before linking: the code links, the chat policy's verdict."""

    attach: tuple[ReachEntry, ...] = ()
    engage: bool | None = None
    matches: tuple[MatchAnswer, ...] = ()
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True, kw_only=True)
class Rendered:
    """The attached contexts' code sections, by (context, entity)."""

    answers: Mapping[Pair, RenderAnswer] = field(default_factory=dict)
    warnings: tuple[str, ...] = ()


def ask(
    runner: CodeRunner,
    brain: Brain,
    resolved: Resolved,
    request: TurnRequest,
    room: Callable[[], Room] = Room,
) -> Asked:
    """Run the bot's chat policy on each incoming message and every admitted `match`;
    `room` reads what a chat turn's matches see besides the message (only when one runs)."""
    role, settings = resolved.role, resolved.settings
    coded = [(c, c.code_path) for c in _coded(brain, role) if c.code_path is not None]
    calls: list[MatchCall] = []
    if coded:  # the view is built only for code that will see it
        view = _turn_view(brain, resolved, request, room)
        calls = [
            MatchCall(
                context=context.id,
                path=path,
                keyed=context.keyed,
                turn=view,
                timeout_ms=settings.code_timeout_ms[context.id],
            )
            for context, path in coded
        ]
    matches = runner.match_all(calls) if calls else ()
    policy, verdicts = _engage(runner, brain, settings, request)
    attach = [ReachEntry(context=m.context, entity=m.entity) for m in matches if m.linked]
    attach += [entry for answer in verdicts for entry in answer.attach]
    warnings: list[str] = []
    for call, match in zip(calls, matches, strict=True):
        warnings += said(call.path, "match", match.log)
        warnings += [str(match.failure)] if match.failure is not None else []
    for verdict in verdicts:
        warnings += said(policy, "engage", verdict.log)
        warnings += [str(verdict.failure)] if verdict.failure is not None else []
        warnings += verdict.dropped
    decided = [a.engage for a in verdicts if a.engage is not None]
    return Asked(
        attach=tuple(attach),
        engage=any(decided) if decided else None,
        matches=matches,
        warnings=tuple(warnings),
    )


def render(
    runner: CodeRunner,
    brain: Brain,
    settings: TurnSettings,
    links: Sequence[Link],
    reader: Connection | None = None,
    tenant: Tenant | None = None,
) -> Rendered:
    """Every `render` of the contexts that may attach (the strongest `maxActive` links);
    their `ctx.query` statements run on `reader` (the turn's transaction), pinned to the
    room's `tenant`."""
    may_attach = links[: settings.knobs.max_active]
    calls = [
        RenderCall(
            context=context.id,
            path=context.code_path,
            entity=link.entity,
            views=tuple(ref.view for ref in context.data),
            timeout_ms=settings.code_timeout_ms[context.id],
        )
        for link in may_attach
        if (context := brain.contexts[link.context]).code_path is not None
    ]
    if not calls:
        return Rendered()
    queries = Queries(reader, tenant) if reader is not None else None
    answers = runner.render_all(calls, reader=queries)
    warnings: list[str] = []
    for call, answer in zip(calls, answers, strict=True):
        warnings += said(call.path, "render", answer.log)
        warnings += [str(answer.failure)] if answer.failure is not None else []
    return Rendered(answers={(a.context, a.entity): a for a in answers}, warnings=tuple(warnings))


def said(path: str, function: str, log: Sequence[str]) -> list[str]:
    """What a call printed or logged, as warnings naming its file and function; each line
    on one line and bounded, as the log writes it (it is brain code's own text)."""
    return [f"{path}: {function} said: {shown(line)}" for line in log]


def journaled(asked: Asked) -> tuple[CodeAnswer, ...]:
    """What each context's code answered, for the turn's journal (and `keel explain`)."""
    return tuple(
        CodeAnswer(
            context=m.context,
            entity=m.entity,
            answer=None if m.failure is not None else "yes" if m.linked else "no",
            # Whole, with its file and line: `keel explain` shows it as it is.
            failure=None if m.failure is None else str(m.failure),
        )
        for m in asked.matches
    )


def _turn_view(
    brain: Brain, resolved: Resolved, request: TurnRequest, room: Callable[[], Room]
) -> TurnView:
    conversation = request.conversation
    role, subject = resolved.role.id, conversation.thread or conversation.chat
    surface = "run" if request.run is not None else "dm" if request.dm else "chat"
    if request.run is not None or not request.input:
        # A run's turn reads its prompt (a hook's: rendered with its event).
        run = None
        if resolved.run is not None:
            run = RunView(feature=resolved.run.feature, reach=resolved.reach)
        text = current_text(brain, request)
        return TurnView(input=text, role=role, surface=surface, subject_id=subject, run=run)
    found = room()
    envelope = Envelope(
        chat=conversation.chat,
        thread=conversation.thread,
        time=request.now.isoformat(),
        sender=request.sender,
        reply_to=tuple((ident, found.replied.get(ident, "")) for ident in request.reply_to),
    )
    return TurnView(
        input=read_as_agent(request.input, envelope, found.lines),
        role=role,
        surface=surface,
        subject_id=subject,
        message=request.input,
        envelope=envelope,
        lines=found.lines,
    )


def read_as_agent(message: str, envelope: Envelope, lines: Sequence[tuple[str, str]]) -> str:
    """A chat message as `match` reads it: the room's lines before it, then the message
    under a line saying who sent it, where, when, and what it replies to."""
    said = [f"{speaker}: {text}" for speaker, text in lines]
    earlier = ["[earlier in this chat]", *said] if said else []
    where = [f"chat {envelope.chat}"]
    if envelope.thread is not None:
        where.append(f"thread {envelope.thread}")
    if envelope.sender is not None:
        where.insert(0, f"from {envelope.sender}")
    where.append(envelope.time)
    where += [
        f'replying to {ident}: "{text}"' if text else f"replying to {ident}"
        for ident, text in envelope.reply_to
    ]
    return "\n".join([*earlier, f"[this message, {' · '.join(where)}]", message])


def _coded(brain: Brain, role: RoleSpec) -> Iterator[ContextSpec]:
    """The contexts the role admits that have a code half (a code link needs no `when`)."""
    listed = role.contexts or ()
    idents = brain.with_code if "*" in listed else sorted(set(listed) & set(brain.with_code))
    return (brain.contexts[i] for i in idents)


def _engage(
    runner: CodeRunner, brain: Brain, settings: TurnSettings, request: TurnRequest
) -> tuple[str, tuple[EngageAnswer, ...]]:
    """The bot's chat policy file, and its verdict on each message (none without one)."""
    conversation = request.conversation
    path = brain.engage.get(conversation.bot)
    texts = request.messages or ((request.input,) if request.input else ())
    if path is None or not texts:
        return "", ()
    timeout = settings.knobs.code_timeout_ms
    keyed = _Keyed(brain)
    calls = [
        EngageCall(
            bot=conversation.bot,
            path=path,
            message={
                "text": text,
                "chat": conversation.chat,
                "thread": conversation.thread,
                "dm": request.dm,
                "reply_to": list(request.reply_to),
            },
            contexts=keyed,
            timeout_ms=timeout,
        )
        for text in texts
    ]
    return path, runner.engage_all(calls)


class _Keyed(Mapping[str, bool]):
    """Context id → keyed, read from the brain when asked (not a copy of every context)."""

    __slots__ = ("_contexts",)

    def __init__(self, brain: Brain) -> None:
        self._contexts = brain.contexts

    def __getitem__(self, ident: str) -> bool:
        return self._contexts[ident].keyed

    def __iter__(self) -> Iterator[str]:
        return iter(self._contexts)

    def __len__(self) -> int:
        return len(self._contexts)
