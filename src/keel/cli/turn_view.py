"""How `keel turn` shows a turn to a person: what it carries, its sections, its input."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table
from rich.text import Text

from keel.assemble.values import Assembly, Section
from keel.cli.app import console
from keel.turn.prepared import PreparedTurn

BAR = 24
# Below this width the sections table drops its bars and keeps the share as a number.
BAR_WIDTH = 100


def _table(*columns: str) -> Table:
    """A borderless table whose ids fold onto a second line rather than lose characters."""
    table = Table(box=None, pad_edge=False)
    for name in columns:
        table.add_column(name, overflow="fold")
    return table


def _links(out: Console, prepared: PreparedTurn) -> None:
    table = _table("context", "entity", "link", "chars", "status")
    for a in prepared.attached:
        table.add_row(
            a.link.context,
            a.link.entity or "",
            a.link.kind,
            str(a.block.chars),
            "[green]attached[/]",
        )
    for s in prepared.stubs:
        table.add_row(
            s.link.context, s.link.entity or "", s.link.kind, "", f"[yellow]stub ({s.knob})[/]"
        )
    for r in prepared.refused:
        table.add_row(r.context, r.entity or "", r.kind, "", f"[red]refused[/]: {r.reason}")
    if table.row_count:
        out.print(table)
    else:
        out.print("no feature contexts linked to this turn")


def bar(section: Section, *, width: int = BAR) -> Text:
    """A usage bar: the share of its budget a section uses; red past it. Width 0 keeps
    only the share."""
    if not section.budget_tokens:
        return Text("")
    share = section.used_tokens / section.budget_tokens
    filled = min(width, round(share * width))
    style = "red" if share > 1 else "yellow" if section.clipped else "green"
    text = Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")
    return text + Text(f" {share:.0%}" if width else f"{share:.0%}", style="" if width else style)


def _sections(out: Console, assembly: Assembly) -> None:
    table = _table("section", "budget", "used", "share", "notes")
    width = BAR if out.width >= BAR_WIDTH else 0
    for s in assembly.sections:
        notes = "clipped" if s.clipped else ""
        notes = "; ".join(filter(None, [notes, *s.warnings]))
        table.add_row(
            s.id,
            f"{s.budget_tokens:,}" if s.budget_tokens else "-",
            f"{s.used_tokens:,}",
            bar(s, width=width),
            Text(notes, style="yellow") if notes else "",
        )
    out.print(table)
    fit = assembly.fit
    verdict = "[green]fits[/]" if fit.ok else "[red]does not fit[/]"
    out.print(
        f"{verdict}: {fit.estimate:,} tokens ({assembly.counter}) of {fit.input_allocation:,} "
        f"allowed; window {fit.window:,} with {fit.output_reserve:,} reserved for output"
    )


def _input(out: Console, assembly: Assembly) -> None:
    parts = [
        ("system (stable, cached)", assembly.system_text),
        ("system (this turn)", assembly.state_text),
        ("tools", ", ".join(t.name for t in assembly.tools)),
        *((f"history · {m.role}", m.text) for m in assembly.history),
        ("user (this turn)", assembly.tail_text),
    ]
    for title, text in parts:
        if text:
            out.rule(title, align="left", style="dim")
            out.print(text, markup=False, highlight=False)


def print_turn(prepared: PreparedTurn, assembly: Assembly) -> None:
    out = console()
    out.print(f"[bold]turn {prepared.turn}[/] · role [cyan]{prepared.role}[/]")
    for line in prepared.log:
        out.print(Text(f"note: {line}", style="yellow"))
    _links(out, prepared)
    out.print()
    _sections(out, assembly)
    out.print()
    _input(out, assembly)
