"""Assembling a turn's model input from named sections, within budgets, checked to fit.

Order: `sys.time`, `identity`, `tenancy`, `rules`, `prompt`, `skill.N`, `context.catalog`,
`tool.<id>`, `render.<view>`, `history`, `context.<id>[@<entity>]`, `current`.

Each section has a budget in tokens. `render.*` sections over budget are clipped by rows,
with a notice; history keeps its newest messages within its budget, with a notice; every
other section over budget is kept whole and carries a warning. When the whole still
exceeds the model's input allocation, older history goes first (oldest first), then render
rows (bottom rows first, one level across every view at a time). What cannot be cut — the
system text, tools, headers, the newest exchange, the contexts and the request — is never
cut: if it alone does not fit, the fit check fails before any model call.
"""

from __future__ import annotations

import json
from bisect import bisect_right
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import cache
from itertools import accumulate

from keel.assemble.elastic import (
    MESSAGE_FRAME,
    HistoryCut,
    Measured,
    Meter,
    RenderCut,
    RenderInput,
    cut_rows,
    drop_row_level,
    fit_render_budgets,
    history_notice,
    sendable,
)
from keel.assemble.fit import check_fit
from keel.assemble.tokens import TokenCounter, framed
from keel.assemble.values import Assembly, Message, ModelLimits, Place, Section, ToolSpec

Budgets = Callable[[str], int | None]
PRIMING = 3  # tokens every chat request costs for the reply's start
BYTES_PER_TOKEN = 4  # for the first guess of how much to measure; English runs about so


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
        warnings=(f"{cut.hidden} rows not shown",) if cut.hidden > 0 else (),
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
    return framed(counter.count_each(joined)) + kept + tools


def _first_guess(
    fixed: Measured, renders: Sequence[RenderCut], history: HistoryCut, allocation: int
) -> tuple[int, int]:
    """How many row levels and history messages the first round measures.

    A guess from the texts' lengths at a few bytes a token: a short guess costs another
    round, a long one measures more than needed; neither changes what is kept.
    """
    frame = BYTES_PER_TOKEN * MESSAGE_FRAME  # a message's frame, in the guess's bytes
    messages = [len(text) + frame for text in history.newest.texts]
    room = (
        BYTES_PER_TOKEN * allocation - sum(map(len, fixed.texts)) - sum(messages[: history.floor])
    )
    widths = [list(accumulate(map(len, r.rows.texts), initial=0)) for r in renders]
    top = max((len(w) - 1 for w in widths), default=0)

    def width(level: int) -> int:
        return sum(w[min(level, len(w) - 1)] for w in widths)

    # One more level, or message, than the guess: the round then sees the overflow.
    level = bisect_right(range(top + 1), room, key=width) - 1
    if level < top:
        return level + 1, history.floor + 1
    room -= width(top)  # every row fits the guess: the rest goes to history, newest first
    spent = list(accumulate(messages[history.floor :], initial=0))
    return top, history.floor + bisect_right(spent, room)


def _measure_first(
    fixed: Measured,
    renders: Sequence[RenderCut],
    history: HistoryCut,
    meter: Meter,
    allocation: int,
) -> tuple[int, int]:
    """One round: what is always sent, every notice, and the first guess of the rest.

    Returns the guess (row levels, history messages), for the rounds that may follow.
    """
    frames = Measured([unit for r in renders for unit in r.frame_units()])
    notices = [*(r.notice for r in renders), history.notice]
    notice_texts = Measured([text for notice in notices for text in notice.texts()])
    levels, newest = _first_guess(fixed, renders, history, allocation)
    for always in (fixed, frames, notice_texts):
        meter.ask(always, len(always.texts))
    for render in renders:
        meter.ask(render.rows, levels)
    meter.ask(history.newest, newest)
    meter.run()
    frame_costs = frames.costs()
    for i, render in enumerate(renders):
        render.set_frame(frame_costs[2 * i], frame_costs[2 * i + 1])
    notice_costs = iter(notice_texts.costs())
    for notice in notices:
        notice.know(notice_costs)
    return levels, newest


def _fit_room(
    room: int,
    renders: Sequence[RenderCut],
    history: HistoryCut,
    history_budget: int | None,
    meter: Meter,
    guess: tuple[int, int],
) -> None:
    """Fit rows and history into `room`.

    Older history goes first, then rows level by level: rows are cut only with history
    down to its pinned newest, and history keeps more only when every row is shown.
    """
    levels, newest = guess
    cheapest = history.cheapest(history_budget, meter)
    cut_rows(renders, room - cheapest, meter, levels)
    if all(r.shown == r.cap for r in renders):
        left = room - sum(r.tokens() for r in renders)
        limit = left if history_budget is None else min(left, history_budget)
        history.keep_within(limit, meter, newest)
        return
    history.kept = history.floor  # rows are cut: history is down to its pinned newest
    if history.tokens() > cheapest:  # the rows were cut for a cheaper history: cut again
        cut_rows(renders, room - history.tokens(), meter, levels)


def assemble(
    inputs: AssemblyInputs,
    *,
    counter: TokenCounter,
    budgets: Budgets,
    limits: ModelLimits,
) -> Assembly:
    """The turn's sections, shrunk to the input allocation where they may be."""
    budgets = cache(budgets)  # each id is looked up through the tiers once per turn
    fixed_head, fixed_tail = _fixed(inputs)
    renders = [RenderCut.of(r, counter.count) for r in inputs.renders]
    history = HistoryCut.of(
        sendable(inputs.history), inputs.pinned_history, counter.count, older=inputs.history_older
    )
    fixed = Measured([text for _, _, text, _ in (*fixed_head, *fixed_tail)])
    meter = Meter(counter)
    guess = _measure_first(fixed, renders, history, meter, limits.input_allocation)
    sections = [
        _section(i, p, t, n, budgets, tool)
        for (i, p, t, tool), n in zip((*fixed_head, *fixed_tail), fixed.costs(), strict=True)
    ]
    head, tail = sections[: len(fixed_head)], sections[len(fixed_head) :]
    fit_render_budgets(renders, [budgets(r.section_id) for r in renders], meter)

    # Everything but history and renders is fixed: measured once, then fit by arithmetic.
    chat_messages = (
        int(any(s.place == "system" for s in head))
        + int(any(s.place == "state" for s in head) or bool(renders))
        + 1
    )
    room = limits.input_allocation - sum(s.used_tokens for s in (*head, *tail))
    room -= MESSAGE_FRAME * chat_messages + PRIMING
    _fit_room(room, renders, history, budgets("history"), meter, guess)

    # The verdict counts what is sent; where that is still over, one unit goes at a time.
    while True:
        sections = [*head, *(_render_section(r, budgets(r.section_id)) for r in renders)]
        if inputs.history or inputs.history_older:
            sections.append(_history_section(history, budgets("history")))
        sections += tail
        sent = Assembly(
            sections=tuple(sections), limits=limits, counter=counter.name, fit=check_fit(0, limits)
        )
        fit = check_fit(_as_sent(sent, history, counter), limits)
        if fit.ok or not (history.drop_one() or drop_row_level(renders)):
            return Assembly(sections=sent.sections, limits=limits, counter=counter.name, fit=fit)
