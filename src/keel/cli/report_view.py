"""How the ledger's reports read in a terminal: tables that fit 80 columns, and bars.

`keel report`, `keel context`, `keel explain` and `keel what-if` print through these; their
`--json` forms are the reports' own `to_json()`.
"""

from __future__ import annotations

from collections.abc import Mapping

from rich.console import Console
from rich.table import Table
from rich.text import Text

from keel.brain.problems import plural
from keel.cli.terminal import terminal
from keel.ledger import AgentContext, ChatContext, ExplainRow, Explanation, WhatIf, WindowUse
from keel.store.journal_values import Decision

WINDOW_BAR = 48


def report_console() -> Console:
    """A console that wraps long lines at the terminal's width (the reports' tables and
    notes read at 80 columns)."""
    return terminal()


_STATUS = {"attached": "green", "stubbed": "yellow", "refused": "red", "not linked": "dim"}


def _table(*columns: str) -> Table:
    return Table(*columns, box=None, pad_edge=False)


def _name(context: str, entity: str | None) -> str:
    return context + (f"@{entity}" if entity is not None else "")


def _knob(knob: str | None) -> str:
    """`contexts.maxActive` → `maxActive`: the short name fits a column."""
    return (knob or "").removeprefix("contexts.")


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{_knob(k)} {n}" for k, n in counts.items())


def print_report(out: Console, report: AgentContext) -> None:
    """`agent_context`: one row per context the role's turns carried or were offered."""
    out.print(
        f"role [cyan]{report.role}[/] · {plural(report.turns, 'turn')} from "
        f"{report.since:%Y-%m-%d %H:%M} to {report.until:%Y-%m-%d %H:%M} UTC"
    )
    if not report.contexts:
        out.print("no feature contexts in this window")
        return
    table = _table("context", "turns", "stubbed", "mean", "max", "links", "opened")
    for use in report.contexts:
        stubbed = str(use.stubbed) + (f" ({_counts(use.stubbed_by)})" if use.stubbed else "")
        opened = f"{use.opened}/{use.offered}" if use.offered is not None else ""
        table.add_row(
            use.context,
            str(use.attached),
            Text(stubbed, style="yellow") if use.stubbed else stubbed,
            f"{use.mean_chars:,}",
            f"{use.max_chars:,}",
            ", ".join(f"{k} {n}" for k, n in use.links.items()),
            opened,
        )
    out.print(table)
    out.print(
        Text(
            "turns: turns it attached to · mean, max: its size in chars\n"
            "opened: turns it rode an ask link / turns the catalog offered it",
            style="dim",
        )
    )


def _decision_row(table: Table, decision: Decision) -> None:
    link = decision.link
    if decision.attached:
        status = Text("attached", style="green")
    else:
        status = Text(f"stub ({_knob(decision.knob)})", style="yellow")
    chars = f"{decision.chars:,}" if decision.attached else ""
    table.add_row(_name(link.context, link.entity), link.shown, chars, status)


def window_bar(use: WindowUse, width: int = WINDOW_BAR) -> Text:
    """The whole window: used (█), free (░), reserved for the model's output (▒)."""
    if use.window <= 0:
        return Text("")
    used = min(width, round(use.used / use.window * width))
    if use.used and not used:
        used = 1  # a turn that used anything shows at least one cell
    reserved = min(width - used, round(use.reserved / use.window * width))
    free = width - used - reserved
    return (
        Text("█" * used, style="red" if not use.ok else "cyan")
        + Text("░" * free, style="dim")
        + Text("▒" * reserved, style="magenta")
    )


def print_chat_context(out: Console, view: ChatContext) -> None:
    """`/context`: the latest turn's contexts, the window bar, the kept links."""
    journal = view.journal
    conversation = journal.conversation
    where = conversation.chat + (f" thread {conversation.thread}" if conversation.thread else "")
    out.print(
        f"[bold]turn {journal.turn}[/] (id {journal.id}) · bot {conversation.bot} · "
        f"role [cyan]{journal.role}[/] · {where} · {journal.request.now:%Y-%m-%d %H:%M} UTC"
    )
    if journal.decisions:
        table = _table("context", "link", "chars", "status")
        for decision in journal.decisions:
            _decision_row(table, decision)
        out.print(table)
    else:
        out.print("no feature contexts on this turn")
    out.print()
    use = view.window
    if use is None:
        out.print("window: not recorded for this turn")
    else:
        out.print(Text("window ") + window_bar(use) + Text(f" {use.window:,}"))
        line = (
            f"used {use.used:,} · free {use.free:,} · reserved for output {use.reserved:,} "
            f"(tokens, {use.counter or 'estimate'})"
        )
        if use.allocation < use.window - use.reserved:
            line += f"\ninput allowed up to {use.allocation:,}"
        out.print(Text(line, style="dim"))
    out.print()
    if not view.kept:
        out.print("kept: none")
        return
    table = _table("kept", "link", "turns left")
    for kept in view.kept:
        link = kept.link
        table.add_row(_name(link.context, link.entity), link.kind, str(kept.turns_left))
    out.print(table)


def print_explanation(out: Console, explanation: Explanation) -> None:
    """`explain`: one row per context of the brain, and why."""
    ident = "dry run, nothing recorded" if explanation.dry_run else f"id {explanation.id}"
    out.print(f"[bold]turn {explanation.turn}[/] ({ident}) · role [cyan]{explanation.role}[/]")
    for context, lines in explanation.replied_lines:
        out.print(f"replied to widget {context}: its {plural(lines, 'line')}, numbered as shown")
    table = _table("context", "status", "why")
    for row in explanation.rows:
        status = row.status
        table.add_row(
            _name(row.context, row.entity), Text(status, style=_STATUS[status]), Text(_why(row))
        )
    out.print(table)


def _why(row: ExplainRow) -> str:
    """An explain row's why: its link and size or knob, and the reason, when it has one."""
    link = f"{row.link} link" if row.kept is None else f"{row.link} link {row.kept}"
    if row.status == "attached":
        # A linked context's reason is its render's failure.
        return "; ".join(filter(None, (f"{link}, {row.chars:,} chars", row.reason)))
    if row.status == "stubbed":
        return "; ".join(filter(None, (f"{link}, kept out by {row.knob}", row.reason)))
    if row.status == "refused":
        # One pair may be refused for two links (an open and an attach): each says which.
        return f"{link}: {row.reason}"
    return row.reason or ""


def print_what_if(out: Console, report: WhatIf) -> None:
    """`what-if`: per context before → after, then the turns that changed."""
    out.print(
        f"{plural(len(report.turns), 'turn')} since {report.since:%Y-%m-%d %H:%M} UTC, "
        f"with {' '.join(report.overrides) or 'no change'} (nothing recorded)"
    )
    if not report.contexts:
        out.print("no feature contexts in these turns")
        return
    table = _table("context", "attached", "stubbed", "stubbed by (after)")
    for counts in report.contexts:
        table.add_row(
            counts.context,
            _arrow(*counts.attached),
            _arrow(*counts.stubbed),
            _counts(counts.stubbed_by[1]),
        )
    out.print(table)
    changed = [t for t in report.turns if t.changed or t.fit_after != t.journal.fit]
    out.print()
    if not changed:
        out.print("no turn's contexts or fit changed")
        return
    turns = _table("id", "turn", "changed", "fit (tokens)")
    for shift in changed:
        before = shift.journal.fit
        after = shift.fit_after
        fit = _arrow(
            before.estimate if before is not None else None,
            after.estimate if after is not None else None,
        )
        if after is not None and not after.ok:
            fit = Text(f"{fit} does not fit", style="red")
        turns.add_row(str(shift.journal.id), str(shift.journal.turn), ", ".join(shift.changed), fit)
    out.print(turns)
    for shift in report.turns:
        for note in shift.notes:
            out.print(Text(f"note: turn {shift.journal.id}: {note}", style="yellow"))


def _arrow(before: int | None, after: int | None) -> Text:
    shown = [f"{n:,}" if n is not None else "?" for n in (before, after)]
    if before == after:
        return Text(shown[0])
    return Text(f"{shown[0]} → {shown[1]}", style="bold")
