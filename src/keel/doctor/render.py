"""The report as people read it: by group, then by check, each finding with file:line and fix."""

from __future__ import annotations

from rich.console import Console
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from keel.doctor.findings import GROUPS, LEVELS, Finding, Level, Report

_STYLE: dict[Level, str] = {"fail": "bold red", "warn": "yellow", "note": "cyan"}


def render(report: Report, console: Console) -> None:
    """Print the report; every group is shown, so a clean group reads as checked."""
    for group in GROUPS:
        console.print(Text(group, style="bold"))
        mine = [f for f in report.findings if f.group == group]
        if not mine:
            console.print(Text("  ok", style="green"))
            continue
        check: str | None = None
        for finding in mine:
            if finding.check != check:
                check = finding.check
                console.print(Text(f"  {check}", style="bold"))
            # A terminal gets findings wrapped under their message; a pipe or a tool's
            # answer one line each, with nothing padded, for grep and for models.
            wraps = console.is_terminal and not console.soft_wrap
            console.print(_wrapped(finding) if wraps else _line(finding))
    console.print()
    console.print(_summary(report))


def _line(finding: Finding) -> Text:
    """A finding on one line, for a console that does not wrap (a file, a tool's answer)."""
    text = Text("    ")
    text.append(f"{finding.level:<4}", style=_STYLE[finding.level])
    text.append(" ")
    return text.append_text(_said(finding))


def _wrapped(finding: Finding) -> Padding:
    """A finding for a terminal: a message that wraps stays indented under itself."""
    grid = Table.grid(padding=(0, 1))
    grid.add_column(width=4, no_wrap=True)
    grid.add_column()
    grid.add_row(Text(finding.level, style=_STYLE[finding.level]), _said(finding))
    return Padding(grid, (0, 0, 0, 4))


def _said(finding: Finding) -> Text:
    # Text, not markup: messages quote YAML such as `[run, ask]`, which markup would eat.
    text = Text()
    text.append(f"{finding.where or finding.subject}: ", style="bold")
    return text.append(finding.message)


def _summary(report: Report) -> Text:
    counts = report.counts()
    if not counts["fail"] and not counts["warn"]:
        extra = f" ({counts['note']} note)" if counts["note"] else ""
        return Text(f"No problems found{extra}.", style="bold green")
    text = Text()
    for index, level in enumerate(LEVELS):
        if index:
            text.append(", ")
        text.append(f"{counts[level]} {level}", style=_STYLE[level] if counts[level] else "")
    return text
