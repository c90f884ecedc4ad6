"""Assembling a turn's model input from named sections, within budgets, checked to fit.

Order: `sys.time`, `identity`, `tenancy`, `rules`, `prompt`, `skill.N`, `context.catalog`,
`tool.<id>`, `render.<view>`, `history`, `context.<id>[@<entity>]`, `current`.

Each section has a budget in tokens. `render.*` sections over budget are clipped by rows,
with a notice; history keeps its newest messages within its budget, with a notice; every
other section over budget is kept whole and carries a warning. When the whole still
exceeds the model's input allocation, the cut policy of `keel.assemble.fitting` applies:
older history gives way first, then render rows. What cannot be cut — the
system text, tools, headers, the newest exchange, the contexts and the request — is never
cut: if it alone does not fit, the fit check fails before any model call.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from functools import cache

from keel.assemble.fit import check_fit, ensure_fits
from keel.assemble.fitting import Budgets, fit, give_way, measure_first
from keel.assemble.history_cuts import HistoryCut, history_notice, sendable
from keel.assemble.measure import Measured, Meter
from keel.assemble.row_cuts import RenderCut, RenderInput
from keel.assemble.values import Assembly, Message, Place, Section, ToolSpec
from keel.brain.knobs import ModelLimits
from keel.tokens import MESSAGE_FRAME_TOKENS, REPLY_PRIMING_TOKENS, TokenCounter


@dataclass(frozen=True, slots=True, kw_only=True)
class AssemblyInputs:
    """The texts a turn's sections are made of, already rendered, before budgets apply."""

    current: str
    time: str = ""
    identity: str = ""
    tenancy: str = ""
    rules: str = ""
    prompt: str = ""
    skills: tuple[str, ...] = ()
    catalog: str = ""
    tools: tuple[ToolSpec, ...] = ()
    renders: tuple[RenderInput, ...] = ()
    history: tuple[Message, ...] = ()
    history_older: int = 0  # earlier messages not even read: they only count in the notice
    contexts: tuple[tuple[str, str], ...] = ()
    pinned_history: int = 2


def tool_text(tool: ToolSpec) -> str:
    """A tool as it is measured: its name, description and parameters."""
    params = json.dumps(dict(tool.parameters), sort_keys=True, separators=(",", ":"))
    return f"{tool.name}: {tool.description}\n{params}"


def _section(
    section_id: str,
    place: Place,
    text: str,
    used: int,
    budgets: Budgets,
    tool: ToolSpec | None = None,
) -> Section:
    budget = budgets(section_id)
    warnings: tuple[str, ...] = ()
    if budget is not None and used > budget:
        warnings = (
            f"{used} tokens, over its budget of {budget} — shorten it or raise "
            f"sections.{section_id}",
        )
    return Section(
        id=section_id,
        place=place,
        text=text,
        used_tokens=used,
        budget_tokens=budget,
        warnings=warnings,
        tool=tool,
    )


Piece = tuple[str, Place, str, ToolSpec | None]


def _fixed(inputs: AssemblyInputs) -> tuple[list[Piece], list[Piece]]:
    """The sections that are never cut: those before the renders, and the tail."""
    texts: list[tuple[str, Place, str]] = [
        ("sys.time", "state", inputs.time),
        ("identity", "system", inputs.identity),
        ("tenancy", "state", inputs.tenancy),
        ("rules", "system", inputs.rules),
        ("prompt", "system", inputs.prompt),
        *((f"skill.{i}", "system", text) for i, text in enumerate(inputs.skills)),
        ("context.catalog", "system", inputs.catalog),
    ]
    head: list[Piece] = [(i, p, t, None) for i, p, t in texts if t]
    head += [(f"tool.{t.name}", "tool", tool_text(t), t) for t in inputs.tools]
    tail: list[Piece] = [
        *((i, "tail", t, None) for i, t in inputs.contexts),
        ("current", "tail", inputs.current, None),
    ]
    return head, tail


def _render_section(cut: RenderCut, budget: int | None) -> Section:
    return Section(
        id=cut.section_id,
        place="state",
        text=cut.text(),
        used_tokens=cut.tokens(),
        budget_tokens=budget,
        clipped=cut.hidden > 0,
        warnings=(
            (f"{cut.hidden} rows not shown — raise sections.{cut.section_id}",)
            if cut.hidden > 0
            else ()
        ),
    )


def _history_section(cut: HistoryCut, budget: int | None) -> Section:
    messages = cut.shown()
    used = cut.tokens()
    warnings: tuple[str, ...] = ()
    if budget is not None and used > budget:
        warnings = (f"{used} tokens, over its budget of {budget}: the newest exchange is kept",)
    return Section(
        id="history",
        place="history",
        text="\n\n".join(f"{m.role}: {m.text}" for m in messages),
        used_tokens=used,
        budget_tokens=budget,
        clipped=cut.hidden > 0,
        warnings=warnings,
        messages=messages,
    )


def _as_sent(assembly: Assembly, history: HistoryCut, counter: TokenCounter) -> int:
    """The request's tokens exactly as `count_messages` counts what is sent, tools added.

    Each chat message is counted on its own (its text, 4 for its frame, 3 for the reply),
    so the history's kept messages, already measured with their frames, are reused; only
    the joined system, state and tail texts and the history's notice are counted here.
    """
    joined = [t for t in (assembly.system_text, assembly.state_text) if t]
    joined.append(assembly.tail_text)
    kept = history.newest.sums[history.kept]
    if history.hidden:
        joined.append(history_notice(history.hidden))
    tools = sum(s.used_tokens for s in assembly.place("tool"))
    costs = counter.count_each(joined)
    framed = sum(costs) + MESSAGE_FRAME_TOKENS * len(costs) + REPLY_PRIMING_TOKENS
    return framed + kept + tools


def assemble(
    inputs: AssemblyInputs,
    *,
    counter: TokenCounter,
    budgets: Budgets,
    limits: ModelLimits,
    refuse_overflow: bool = False,
) -> Assembly:
    """The turn's sections, shrunk to the input allocation where they may be.

    With `refuse_overflow` (an opening request, before any model call), one that still
    does not fit raises `FitOverflow` (`keel.assemble.fit.ensure_fits`).
    """
    budgets = cache(budgets)  # each id is looked up through the tiers once per turn
    fixed_head, fixed_tail = _fixed(inputs)
    renders = [RenderCut.of(r, counter.count) for r in inputs.renders]
    history = HistoryCut.of(
        sendable(inputs.history), inputs.pinned_history, counter.count, older=inputs.history_older
    )
    fixed = Measured([text for _, _, text, _ in (*fixed_head, *fixed_tail)])
    meter = Meter(counter)
    guess = measure_first(fixed, renders, history, meter, limits.input_allocation)
    sections = [
        _section(i, p, t, n, budgets, tool)
        for (i, p, t, tool), n in zip((*fixed_head, *fixed_tail), fixed.costs(), strict=True)
    ]
    head, tail = sections[: len(fixed_head)], sections[len(fixed_head) :]
    room = limits.input_allocation - _fixed_cost(head, tail, bool(renders))
    fit(room, renders, history, budgets, meter, guess)
    assembly = _verdict(inputs, head, tail, renders, history, budgets, counter, limits)
    if refuse_overflow:
        ensure_fits(assembly)
    return assembly


def _fixed_cost(head: list[Section], tail: list[Section], renders: bool) -> int:
    """What the sections that are never cut cost as sent: their texts, frames, priming.

    Everything but history and renders is fixed, so it is measured once and the rest is
    fitted by arithmetic.
    """
    chat_messages = (
        int(any(s.place == "system" for s in head))
        + int(any(s.place == "state" for s in head) or renders)
        + 1
    )
    texts = sum(s.used_tokens for s in (*head, *tail))
    return texts + MESSAGE_FRAME_TOKENS * chat_messages + REPLY_PRIMING_TOKENS


def _verdict(
    inputs: AssemblyInputs,
    head: list[Section],
    tail: list[Section],
    renders: list[RenderCut],
    history: HistoryCut,
    budgets: Budgets,
    counter: TokenCounter,
    limits: ModelLimits,
) -> Assembly:
    """The assembly and its fit, counted as sent; still over, one unit gives way at a time
    (`keel.assemble.fitting.give_way`)."""
    while True:
        sections = [*head, *(_render_section(r, budgets(r.section_id)) for r in renders)]
        if inputs.history or inputs.history_older:
            sections.append(_history_section(history, budgets("history")))
        sections += tail
        sent = Assembly(
            sections=tuple(sections), limits=limits, counter=counter.name, fit=check_fit(0, limits)
        )
        verdict = check_fit(_as_sent(sent, history, counter), limits)
        if verdict.ok or not give_way(renders, history):
            return Assembly(
                sections=sent.sections, limits=limits, counter=counter.name, fit=verdict
            )
