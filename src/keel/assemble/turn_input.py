"""One turn's model input in one call: Keel's own texts written (`keel.assemble.texts`),
then every section assembled within its budget and checked to fit
(`keel.assemble.assembler`)."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from keel.assemble.assembler import AssemblyInputs, assemble
from keel.assemble.fitting import Budgets
from keel.assemble.texts import turn_texts
from keel.assemble.values import Assembly, Message, ToolSpec
from keel.brain.knobs import ModelLimits
from keel.brain.snapshot import Brain
from keel.budget.rows import ViewRows
from keel.link.values import TurnRequest
from keel.tokens import TokenCounter


@dataclass(frozen=True, slots=True, kw_only=True)
class TurnParts:
    """A prepared turn as assembly takes it: what Keel's own sections are written from
    (the request, the room's pins, the catalog, whether the role ever carries contexts, the
    role's own state views) and the sections that arrive written (the role's prompt and
    skills, its tools, the history, the contexts as (section id, text))."""

    brain: Brain
    request: TurnRequest
    pins: Mapping[str, str | None]
    catalog: tuple[tuple[str, str], ...]
    carries_contexts: bool
    renders: tuple[ViewRows, ...] = ()
    prompt: str = ""
    skills: tuple[str, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    history: tuple[Message, ...] = ()
    history_older: int = 0
    contexts: tuple[tuple[str, str], ...] = ()
    # The widgets a reply answers, numbered as the person saw them, before its input.
    lines: str = ""


def inputs_of(parts: TurnParts) -> AssemblyInputs:
    """The texts of every section of the turn."""
    texts = turn_texts(
        parts.brain,
        parts.request,
        parts.pins,
        parts.catalog,
        carries_contexts=parts.carries_contexts,
        renders=parts.renders,
        lines=parts.lines,
    )
    return AssemblyInputs(
        current=texts.current,
        time=texts.time,
        identity=texts.identity,
        tenancy=texts.tenancy,
        rules=texts.rules,
        prompt=parts.prompt,
        skills=parts.skills,
        catalog=texts.catalog,
        tools=parts.tools,
        renders=texts.renders,
        history=parts.history,
        history_older=parts.history_older,
        contexts=parts.contexts,
    )


def assemble_parts(
    parts: TurnParts,
    *,
    counter: TokenCounter,
    budgets: Budgets,
    limits: ModelLimits,
    refuse_overflow: bool = False,
) -> Assembly:
    """The turn's model input within its budgets, with the fit verdict; with
    `refuse_overflow`, one that does not fit raises `FitOverflow`."""
    return assemble(
        inputs_of(parts),
        counter=counter,
        budgets=budgets,
        limits=limits,
        refuse_overflow=refuse_overflow,
    )
