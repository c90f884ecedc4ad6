"""The report as people read it: by group, then by check, each finding with file:line and fix."""

from __future__ import annotations

from rich.console import Console
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
            console.print(_line(finding))
    console.print()
    console.print(_summary(report))


def _line(finding: Finding) -> Text:
    # Text, not markup: messages quote YAML such as `[run, ask]`, which markup would eat.
    text = Text("    ")
    text.append(f"{finding.level:<4}", style=_STYLE[finding.level])
    text.append(" ")
    text.append(f"{finding.where or finding.subject}: ", style="bold")
    text.append(finding.message)
    return text


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
