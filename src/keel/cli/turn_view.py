"""How `keel turn` shows a turn to a person: what it carries, its sections, its input.

The tables and notes wrap at the terminal's width. The model input does not: it is printed
as the model gets it, each line whole, and the terminal folds what is too long for it —
re-wrapping it would break hard-wrapped prose and view rows in the middle.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from keel.assemble.values import Assembly, Section
from keel.cli.root import console
from keel.turn.prepared import PreparedTurn

BAR = 24
# Below this width the sections table drops its bars and keeps the share as a number.
BAR_WIDTH = 100
# Between what a note says happened and what to do about it (Keel's messages use it so).
ADVICE = " — "


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
            a.link.shown,
            str(a.block.chars),
            "[green]attached[/]",
        )
    for s in prepared.stubs:
        table.add_row(
            s.link.context, s.link.entity or "", s.link.shown, "", f"[yellow]stub ({s.knob})[/]"
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
            # Verbatim (a Text: no markup, no emoji codes; control characters stripped).
            out.print(Text(text), soft_wrap=True)


def grouped_notes(notes: Sequence[str]) -> list[tuple[tuple[str, ...], str | None]]:
    """The turn's notes, those that end in the same advice together: (what each said,
    the advice they share), in the order of each group's first note.

    Six hanging matches are six lines naming their file and line, and one line of advice;
    a note whose advice is its own stays whole (advice None). A note repeated word for word
    in a group is shown once.
    """
    tails = [note.partition(ADVICE)[2] for note in notes]
    shared = {t for t, n in Counter(tails).items() if t and n > 1}
    heads: dict[str, list[str]] = {}
    order: list[tuple[str, bool]] = []  # (a note that stays whole, False), (advice, True)
    for note, tail in zip(notes, tails, strict=True):
        if tail not in shared:
            order.append((note, False))
            continue
        if tail not in heads:
            heads[tail] = []
            order.append((tail, True))
        head = note.partition(ADVICE)[0]
        if head not in heads[tail]:
            heads[tail].append(head)
    found: list[tuple[tuple[str, ...], str | None]] = []
    for item, grouped in order:
        said = heads[item] if grouped else [item]
        if grouped and len(said) > 1:
            found.append((tuple(said), item))
        else:
            found.append(((said[0] + ADVICE + item if grouped else item,), None))
    return found


def print_notes(out: Console, notes: Sequence[str]) -> None:
    """The turn's notes, one line per file and line, each advice once (`grouped_notes`)."""
    for said, advice in grouped_notes(notes):
        for line in said:
            out.print(Text(f"note: {line}", style="yellow"))
        if advice is not None:
            what = f"↳ each of these {len(said)}: {advice}"
            out.print(Padding(Text(what, style="yellow"), (0, 0, 0, 6)))


def print_turn(prepared: PreparedTurn, assembly: Assembly) -> None:
    out = console()
    out.print(f"[bold]turn {prepared.turn}[/] · role [cyan]{prepared.role}[/]")
    print_notes(out, prepared.log)
    _links(out, prepared)
    out.print()
    _sections(out, assembly)
    out.print()
    _input(out, assembly)
