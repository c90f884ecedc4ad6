"""The report as people read it: by group, then by check, each finding with file:line and fix."""

from __future__ import annotations

from rich.console import Console
from rich.text import Text

from keel.doctor.findings import GROUPS, LEVELS, Finding, Level, Report

_STYLE: dict[Level, str] = {"fail": "bold red", "warn": "yellow", "note": "cyan"}
_HANG = 9  # "    warn ": where a finding's message starts, and its wrapped lines


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
            if console.is_terminal and not console.soft_wrap:
                console.print(_wrapped(finding, console), soft_wrap=True)
            else:  # not even at the console's width (COLUMNS): one line is one finding
                console.print(_line(finding), soft_wrap=True)
    console.print()
    console.print(_summary(report))


def _line(finding: Finding) -> Text:
    """A finding on one line, for a console that does not wrap (a file, a tool's answer)."""
    text = Text("    ")
    text.append(f"{finding.level:<4}", style=_STYLE[finding.level])
    text.append(" ")
    return text.append_text(_said(finding))


def _wrapped(finding: Finding, console: Console) -> Text:
    """A finding for a terminal: a message that wraps stays indented under itself, and no
    line is padded out to the width."""
    hang = " " * _HANG
    lines = _said(finding).wrap(console, max(console.width - _HANG, 20))
    text = Text("    ")
    text.append(f"{finding.level:<4}", style=_STYLE[finding.level])
    text.append(" ")
    for index, line in enumerate(lines):
        line.rstrip()
        text.append_text(line if index == 0 else Text(hang) + line)
        if index < len(lines) - 1:
            text.append("\n")
    return text


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
