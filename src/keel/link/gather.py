"""Deciding which (context, entity) pairs a turn carries, and under which link.

`link_turn` is pure: it takes the brain snapshot, the request and what the stores hold
for this conversation, and returns the links, the refusals, and the inferred links to keep.
`resolve_turn` finds, once for every stage of a turn, its role with the role's settings
and its run with the run's reach.
Each candidate passes the same gates in order — its `when` word (for the links that need
one), role admission (for inferred links), the entity shape, then the room's pin — and
each pair is kept once, under its strongest link.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field, replace
from datetime import timedelta

from keel.brain.access import role_line
from keel.brain.constitution import ChatRule, Room
from keel.brain.knobs import TurnSettings, turn_settings
from keel.brain.problems import did_you_mean, suggest
from keel.brain.snapshot import Brain
from keel.brain.specs import ContextSpec, EntitySpec, ReachEntry, RoleSpec
from keel.errors import Refused, UsageError
from keel.link.bindings import (
    another_bots_pin,
    effective_bindings,
    for_bot,
    pin,
    pins_of,
    tenant_of,
)
from keel.link.reach import find_run, no_role, run_reach
from keel.link.reachable import roles_carrying_contexts
from keel.link.values import (
    STICKY,
    STRENGTH,
    Binding,
    Kept,
    KeptLink,
    Link,
    LinkKind,
    LinkResult,
    Origin,
    Refusal,
    Stored,
    TurnRequest,
    entity_problem,
)


def resolve_role(brain: Brain, request: TurnRequest) -> RoleSpec:
    """The role the caller names, else the run's `agent:`, else access.yaml's rule's role.

    Raises `Refused` first when access.yaml refuses this bot in this chat (the file, the
    chat's rule or the governing template failed to load): access fails closed, whatever
    role or run the turn names, so a broken rule never lets a room run without its pin.
    """
    room = _room(brain, request)
    run = find_run(brain, request.run) if request.role is None and request.run else None
    return _role(brain, request, run, room)


def _room(brain: Brain, request: TurnRequest) -> Room:
    """What access.yaml says of the turn's bot and chat; raises `Refused` when it refuses."""
    conversation = request.conversation
    room = brain.access.room(conversation.bot, conversation.chat, dm=request.dm)
    if room.refusal is not None:
        raise Refused(str(room.refusal))
    return room


def _role(brain: Brain, request: TurnRequest, run: EntitySpec | None, room: Room) -> RoleSpec:
    conversation = request.conversation
    name = request.role
    if name is None and run is not None:
        name = run.agent
    if name is None:
        rule = room.rule
        if rule is None or rule.role is None:
            near = _near_bot(brain, conversation.bot)
            raise UsageError(
                f"no role given and access.yaml has no rule with a role for bot "
                f"'{conversation.bot}' in chat '{conversation.chat}'{near} "
                "— name a role (--role on the command line, `role` in POST /v1/turns or the "
                "dashboard's try form) or add a rule for the chat in access.yaml"
            )
        role = brain.roles.get(rule.role)
        if role is None:
            raise no_role(brain, rule.role, given_at=_given_at(brain, rule))
        return role
    role = brain.roles.get(name)
    if role is None:
        raise no_role(brain, name)
    return role


def _near_bot(brain: Brain, bot: str) -> str:
    """` (did you mean bot 'x'?)` when access.yaml has no rule for `bot` but one for a
    bot of a close name: a misspelt --bot reads as a room with no rule."""
    bots = brain.access.named_bots
    if bot in bots:
        return ""
    near = suggest(bot, bots)
    return f" (did you mean bot '{near}'?)" if near is not None else ""


def _given_at(brain: Brain, rule: ChatRule) -> str | None:
    """`constitution/access.yaml:LINE` of the rule's `role:`, as doctor points at it."""
    path = brain.access.path
    if path is None:
        return None
    line = role_line(brain.root, path, rule)
    return path if line is None else f"{path}:{line}"


@dataclass(frozen=True, slots=True, kw_only=True)
class Resolved:
    """Who a turn is for, resolved once at its top: what access.yaml says of its room, its
    role and the role's settings, whether the role ever carries contexts (what its rules
    section says), and for a run, the entity it is a run of and the reach it carries."""

    room: Room
    role: RoleSpec
    settings: TurnSettings
    carries_contexts: bool
    run: EntitySpec | None = None
    reach: tuple[ReachEntry, ...] = ()


def resolve_turn(brain: Brain, request: TurnRequest) -> Resolved:
    """The turn's role with its settings, and its run with its reach; raises what linking
    would (`Refused`, `UsageError`, `LinkError`), in the same order, before anything is
    read or written."""
    room = _room(brain, request)
    run = find_run(brain, request.run) if request.role is None and request.run else None
    role = _role(brain, request, run, room)
    settings = turn_settings(brain, role)
    carries = role.id in roles_carrying_contexts(brain)
    if request.run is None:
        if request.entity is not None or request.reach is not None:
            raise UsageError("an entity or reach needs a run — add --run KIND:ID")
        return Resolved(room=room, role=role, settings=settings, carries_contexts=carries)
    run = run or find_run(brain, request.run)
    reach = run_reach(brain, run, override=request.reach, key=request.entity)
    return Resolved(
        room=room, role=role, settings=settings, carries_contexts=carries, run=run, reach=reach
    )


@dataclass
class _Collector:
    role: RoleSpec
    keeps: Mapping[str, int]  # turns an inferred link sticks, by context id
    pins: dict[str, str | None]
    turn: int
    # The binding that pins each context, and the turn's bot: a refusal names who pins it.
    bindings: Mapping[str, Binding]
    bot: str
    chosen: dict[tuple[str, str | None], Link] = field(default_factory=dict)
    order: dict[tuple[str, str | None], int] = field(default_factory=dict)
    refused: list[Refusal] = field(default_factory=list)
    keep: list[KeptLink] = field(default_factory=list)

    def refuse(self, context: str, entity: str | None, kind: LinkKind, reason: str) -> None:
        refusal = Refusal(context=context, entity=entity, kind=kind, reason=reason)
        # Two sources may offer the same link (an engage policy and a context's match both
        # name a ticket): its refusal is one fact, listed once.
        if refusal not in self.refused:
            self.refused.append(refusal)

    def offer(
        self,
        context: ContextSpec,
        entity: str | None,
        kind: LinkKind,
        *,
        explicit: bool,
        kept: KeptLink | None = None,
        restarted: bool = False,
    ) -> None:
        """Consider one candidate; keep it if it passes every gate."""
        if not explicit and not self.role.admits(context.id):
            self.refuse(
                context.id,
                entity,
                kind,
                f"role '{self.role.id}' does not list '{context.id}' in its contexts:",
            )
            return
        if entity is not None and not context.keyed:
            self.refuse(
                context.id,
                entity,
                kind,
                f"'{context.id}' names no entity, so it takes no key ('{entity}' given)",
            )
            return
        verdict = pin(
            context.id,
            entity,
            self.pins,
            kind=kind,
            held=self.bindings.get(context.id),
            bot=self.bot,
        )
        if verdict.refusal is not None:
            self.refuse(context.id, entity, kind, verdict.refusal)
            return
        held = None
        if kept is not None and not restarted:
            keep = self.keeps[context.id]
            held = Kept(from_turn=kept.until_turn - keep, turns_left=kept.until_turn - self.turn)
        link = Link(
            context=context.id,
            entity=verdict.entity,
            kind=kind,
            feature=context.feature,
            kept=held,
        )
        current = self.chosen.get(link.pair)
        if current is None or STRENGTH[kind] < STRENGTH[current.kind]:
            # The stronger link ranks it; an open of the same pair still delivers it whole.
            if current is not None and (current.kind == "ask" or current.asked):
                link = replace(link, asked=True)
            self.chosen[link.pair] = link
            self.order.setdefault(link.pair, len(self.order))
        elif kind == "ask" and current.kind != "ask" and not current.asked:
            self.chosen[link.pair] = replace(current, asked=True)
        # A fresh inferred link sticks for `keep` turns; a kept one only when restarted.
        if (kind in STICKY and kept is None) or restarted:
            keep = self.keeps[context.id]
            self.keep.append(
                KeptLink(
                    context=context.id,
                    entity=verdict.entity,
                    kind=kind,
                    feature=context.feature,
                    until_turn=self.turn + keep,
                )
            )

    def links(self) -> tuple[Link, ...]:
        return tuple(
            sorted(self.chosen.values(), key=lambda k: (STRENGTH[k.kind], self.order[k.pair]))
        )


def link_turn(
    brain: Brain, request: TurnRequest, stored: Stored, resolved: Resolved | None = None
) -> LinkResult:
    """Every link of one turn: run, chat, reply, code, ask and always, pinned and admitted.

    `resolved` is the turn's role and run as `resolve_turn` found them (resolved here
    when not given).
    """
    resolved = resolved if resolved is not None else resolve_turn(brain, request)
    role = resolved.role
    bindings = effective_bindings(brain, request.conversation, stored.bindings, room=resolved.room)
    collector = _Collector(
        role=role,
        keeps=resolved.settings.keep,
        pins=pins_of(brain, bindings),
        turn=stored.turn,
        bindings=bindings,
        bot=request.conversation.bot,
    )
    log = [
        f"role '{role.id}' lists '{ident}', whose file did not load — {skip}"
        for ident in role.contexts or ()
        if (skip := brain.failed_contexts.get(ident)) is not None
    ]
    reach = _run_links(brain, resolved, collector, log)
    _chat_links(brain, request, collector, bindings, log)
    restart = _reply_links(brain, request, stored.origins, collector, log)
    _code_links(brain, request.attach, collector)
    _ask_links(brain, request.open, reach, bindings, collector, may_open=resolved.settings.opens)
    _kept_links(brain, stored, restart, collector, _can_open(role, reach, bindings))
    for ident in resolved.settings.always:
        collector.offer(brain.contexts[ident], None, "always", explicit=True)
    return LinkResult(
        role=role.id,
        links=collector.links(),
        refused=tuple(collector.refused),
        keep=tuple(collector.keep),
        restart_features=frozenset(restart),
        pins=collector.pins,
        log=tuple(log),
        tenant=tenant_of(brain, collector.pins),
    )


def _run_links(
    brain: Brain, resolved: Resolved, collector: _Collector, log: list[str]
) -> tuple[ReachEntry, ...]:
    entity, reach = resolved.run, resolved.reach
    if entity is None:
        return ()
    for entry in reach:
        context = brain.contexts.get(entry.context)
        if context is None:
            log.append(f"{entity.key}: reach names '{entry.context}', which does not exist")
            continue
        if "run" in context.when:
            # A run entry of the run's own feature is explicit: the feature named this role.
            own = context.feature == entity.feature
            collector.offer(context, entry.entity, "run", explicit=own)
    return reach


def _chat_links(
    brain: Brain,
    request: TurnRequest,
    collector: _Collector,
    bindings: dict[str, Binding],
    log: list[str],
) -> None:
    bot = request.conversation.bot
    for ident, binding in bindings.items():
        context = brain.contexts.get(ident)
        if context is None or "chat" not in context.when:
            continue
        # Another bot's binding pins the room but links only that bot's turns.
        if binding.source == "access" and binding.bot == bot:
            collector.offer(context, binding.entity, "chat", explicit=True)
        elif binding.source == "tool" and for_bot(binding, request.conversation):
            collector.offer(context, binding.entity, "chat", explicit=False)
        elif ident in collector.pins:
            log.append(another_bots_pin(binding))


def _reply_links(
    brain: Brain,
    request: TurnRequest,
    origins: tuple[Origin, ...],
    collector: _Collector,
    log: list[str],
) -> set[str]:
    restart: set[str] = set()
    retention = brain.manifest.retention_days
    known = {origin.message_id for origin in origins}
    log.extend(
        f"reply to {message_id}: not a message this bot sent here, links nothing"
        for message_id in request.reply_to
        if message_id not in known
    )
    for origin in origins:
        if origin.message_id not in request.reply_to:
            continue
        too_old = retention > 0 and request.now - origin.sent_at > timedelta(days=retention)
        if too_old and not origin.pending_card and origin.widget is None:
            log.append(f"reply to {origin.message_id}: older than {retention} days, links nothing")
            continue
        if origin.feature is None:
            log.append(f"reply to {origin.message_id}: not sent by a feature run, links nothing")
            continue
        restart.add(origin.feature)
        for entry in origin.reach:
            context = brain.contexts.get(entry.context)
            if context is not None and "reply" in context.when:
                collector.offer(context, entry.entity, "reply", explicit=False)
    return restart


def _entry_problem(brain: Brain, entry: ReachEntry) -> str | None:
    """Why an attach or open entry is malformed, or None when it is well formed."""
    if not entry.context:
        return "an entry needs a context id"
    if (problem := entity_problem(entry.entity)) is not None:
        return problem
    if entry.context not in brain.contexts:
        if entry.context in brain.switched_off:
            feature = brain.switched_off[entry.context]
            return f"'{entry.context}' belongs to feature '{feature}', which is switched off"
        return f"no context '{entry.context}'{did_you_mean(entry.context, brain.contexts)}"
    return None


def _code_links(brain: Brain, attach: tuple[ReachEntry, ...], collector: _Collector) -> None:
    for entry in attach:
        problem = _entry_problem(brain, entry)
        if problem is not None:
            collector.refuse(entry.context, entry.entity, "code", f"attach dropped: {problem}")
            continue
        context = brain.contexts[entry.context]
        collector.offer(context, entry.entity, "code", explicit=False)


def _ask_links(
    brain: Brain,
    opens: tuple[ReachEntry, ...],
    reach: tuple[ReachEntry, ...],
    bindings: dict[str, Binding],
    collector: _Collector,
    *,
    may_open: bool,
) -> None:
    role = collector.role
    for entry in opens:
        problem = _entry_problem(brain, entry)
        if entry.context and entry.context not in brain.contexts:
            # The agent asked for a name it made up or misspelt: suggest only what it may
            # open, never the names of every feature's contexts.
            problem = _unknown_open(brain, entry.context, role, reach, bindings)
        if problem is None and not may_open:
            problem = (
                f"role '{role.id}' cannot call context_open — add context:read to its capabilities:"
            )
        if problem is not None:
            collector.refuse(entry.context, entry.entity, "ask", problem)
            continue
        context = brain.contexts[entry.context]
        reached = any(r.context == context.id for r in reach)
        binding = bindings.get(context.id)
        bound = binding is not None and binding.source == "access"
        if not (role.admits(context.id) or reached or bound):
            collector.refuse(
                context.id,
                entry.entity,
                "ask",
                f"'{context.id}' is not open to role '{role.id}': its contexts: does not list "
                "it, this turn's run does not reach it and no access.yaml rule binds it here",
            )
            continue
        collector.offer(context, entry.entity, "ask", explicit=True)


def _can_open(
    role: RoleSpec, reach: tuple[ReachEntry, ...], bindings: dict[str, Binding]
) -> Callable[[str], bool]:
    """Whether this role may open a context in this turn: admitted, reached by its run, or
    bound here by access.yaml."""
    reached = {r.context for r in reach}
    bound = {c for c, b in bindings.items() if b.source == "access"}
    return lambda ident: role.admits(ident) or ident in reached or ident in bound


def _unknown_open(
    brain: Brain,
    ident: str,
    role: RoleSpec,
    reach: tuple[ReachEntry, ...],
    bindings: dict[str, Binding],
) -> str:
    if ident in brain.switched_off and role.admits(ident):
        return f"'{ident}' belongs to feature '{brain.switched_off[ident]}', which is switched off"
    can_open = _can_open(role, reach, bindings)
    return f"no context '{ident}'{did_you_mean(ident, [c for c in brain.contexts if can_open(c)])}"


def _kept_links(
    brain: Brain,
    stored: Stored,
    restart: set[str],
    collector: _Collector,
    can_open: Callable[[str], bool],
) -> None:
    for kept in stored.kept:
        context = brain.contexts.get(kept.context)
        if context is None or kept.until_turn < stored.turn:
            continue
        # Kept for the conversation, whatever role made it: a link of a context this role
        # could not have made (not admitted; for an open, not openable here either) is
        # another role's, and this turn asked for nothing to refuse. Left out, it stays
        # kept for that role's next turns.
        made = can_open(context.id) if kept.kind == "ask" else collector.role.admits(context.id)
        if not made:
            continue
        # A new reply to the same feature restarts the count of its kept reply links.
        restarted = kept.kind == "reply" and kept.feature in restart
        # An open was the agent's explicit ask; it stays explicit while it is held.
        collector.offer(
            context,
            kept.entity,
            kept.kind,
            explicit=kept.kind == "ask",
            kept=kept,
            restarted=restarted,
        )
