"""From a prepared turn to its model input: the sections, their budgets, the fit."""

from __future__ import annotations

from collections.abc import Callable

from keel.assemble.assembler import AssemblyInputs
from keel.assemble.turn_input import TurnParts, assemble_parts, inputs_of
from keel.assemble.values import Assembly, ToolSpec
from keel.assemble.widgets import lines_note
from keel.brain.knobs import TurnSettings, turn_settings
from keel.brain.snapshot import Brain
from keel.brain.specs import RoleSpec
from keel.link.reachable import roles_carrying_contexts
from keel.link.values import Link, TurnRequest
from keel.tokens import TokenCounter
from keel.turn.prepared import PreparedTurn

# The tools a role may see: the registry's filter (`keel.tools.Registry.for_role`).
ToolsFor = Callable[[RoleSpec], tuple[ToolSpec, ...]]


def context_section_id(link: Link) -> str:
    """`context.<id>`, or `context.<id>@<entity>` for a keyed one."""
    return f"context.{link.context}" + (f"@{link.entity}" if link.entity is not None else "")


def turn_parts(
    brain: Brain,
    request: TurnRequest,
    prepared: PreparedTurn,
    tools: ToolsFor,
    *,
    contexts: str | None = None,
    carries_contexts: bool | None = None,
) -> TurnParts:
    """What assembly takes of this turn.

    `contexts` replaces the attached blocks with one text (a CLI session's delta);
    `carries_contexts` is whether the role ever carries contexts, as the turn resolved it
    (worked out from the brain when not given).
    """
    role = brain.roles[prepared.role]
    blocks = [(context_section_id(a.link), a.block.text) for a in prepared.attached]
    held = prepared.session_held  # a session's held contexts stand as sent: no stub line
    stubs = [
        (context_section_id(s.link), s.text) for s in prepared.stubs if s.link.pair not in held
    ]
    if contexts is not None:
        blocks = [("context.session", contexts)] if contexts else []
    if carries_contexts is None:
        carries_contexts = role.id in roles_carrying_contexts(brain)
    return TurnParts(
        brain=brain,
        request=request,
        pins=prepared.pins,
        catalog=prepared.catalog,
        carries_contexts=carries_contexts,
        renders=prepared.renders,
        prompt=role.persona,
        skills=tuple(brain.skills[s].text for s in role.skills if s in brain.skills),
        tools=tools(role),
        history=prepared.history,
        history_older=prepared.history_older,
        contexts=(*blocks, *stubs),
        # Only a reply to a widget enters the widgets module: a plain turn's walk skips it.
        lines=lines_note(prepared.replied_lines) if prepared.replied_lines else "",
    )


def turn_inputs(
    brain: Brain,
    request: TurnRequest,
    prepared: PreparedTurn,
    tools: ToolsFor,
    *,
    contexts: str | None = None,
) -> AssemblyInputs:
    """The texts of every section of this turn (`contexts`: as `turn_parts`)."""
    return inputs_of(turn_parts(brain, request, prepared, tools, contexts=contexts))


def assemble_turn(
    brain: Brain,
    request: TurnRequest,
    prepared: PreparedTurn,
    counter: TokenCounter,
    tools: ToolsFor,
    *,
    contexts: str | None = None,
    settings: TurnSettings | None = None,
    carries_contexts: bool | None = None,
    refuse_overflow: bool = False,
) -> Assembly:
    """The turn's model input, within its budgets, with the fit verdict; `settings` are
    the role's (read from the brain when not given). With `refuse_overflow`, an input that
    does not fit raises `FitOverflow`."""
    if settings is None:
        settings = turn_settings(brain, brain.roles[prepared.role])
    parts = turn_parts(
        brain, request, prepared, tools, contexts=contexts, carries_contexts=carries_contexts
    )
    return assemble_parts(
        parts,
        counter=counter,
        budgets=settings.budgets.__getitem__,
        limits=settings.limits,
        refuse_overflow=refuse_overflow,
    )
