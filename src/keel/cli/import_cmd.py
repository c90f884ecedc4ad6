"""`keel import`: a repository's coding-agent rules as one feature of a brain.

Every path and message is printed through `shown`: a file name is data, and a newline or a
control character in one is printed escaped, so no name can forge a line of the report.

Exit status: 0 done (skipped source files are listed, not fatal), 2 a usage error (a path
that is not a directory, a bad feature or role name, an `--exclude` pattern that cannot
match), 3 a refusal (a hand-written file stood where an imported one would go and
`--force` was not given, or the role could not be edited; everything else was still
imported).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from pathlib import Path
from typing import Annotated

import typer
from rich.console import Console
from rich.markup import escape

from keel.cli.root import app, console, emit_json, guard
from keel.cli.status import EXIT_REFUSED
from keel.importers import ImportedRule, ImportReport, RoleChange, import_rules
from keel.importers.quoting import shown
from keel.importers.report import FATES
from keel.importers.rules import SELF_LINKING

SourceArg = Annotated[
    Path,
    typer.Argument(
        help="The repository whose rule files to import (.cursor/rules, CLAUDE.md, ...).",
        show_default=False,
    ),
]
BrainArg = Annotated[Path, typer.Argument(help="The brain directory.", show_default=False)]
FeatureOpt = Annotated[
    str | None,
    typer.Option(
        "--feature",
        help="The feature to import into (default: the source directory's name, as a slug).",
        show_default=False,
    ),
]
RoleOpt = Annotated[
    str | None,
    typer.Option(
        "--role",
        help="Admit the imported contexts in this role (created in the feature if missing).",
        show_default=False,
    ),
]
ExcludeOpt = Annotated[
    list[str] | None,
    typer.Option(
        "--exclude",
        help="Leave out the source files this .gitignore-like glob matches (repeatable), "
        "e.g. --exclude '.cursor/rules/legacy/'.",
        metavar="GLOB",
        show_default=False,
    ),
]
ForceOpt = Annotated[
    bool,
    typer.Option(
        "--force",
        help="Overwrite files in the feature's folder that keel import did not write (imported "
        "files you edited) instead of refusing their rules.",
    ),
]
JsonOpt = Annotated[bool, typer.Option("--json", help="Print JSON for machines.")]

_FATES = {
    "imported": "imported",
    "merged": "merged into another's context",
    "named": "named in a skill's context",
    "excluded": "excluded",
    "skipped": "skipped",
    "refused": "refused",
}
_TRIGGERS = {
    "always": "every turn",
    "description": "opened by its description",
    "manual": "opened by name",
    "glob": "files",
}


@app.command("import")
def import_(
    source: SourceArg,
    brain: BrainArg,
    feature: FeatureOpt = None,
    role: RoleOpt = None,
    exclude: ExcludeOpt = None,
    force: ForceOpt = False,
    as_json: JsonOpt = False,
) -> None:
    """Import Cursor, Claude Code, Copilot and Windsurf rules as contexts of one feature."""

    def run() -> None:
        report = import_rules(
            source, brain, feature=feature, role=role, excludes=exclude or (), force=force
        )
        if as_json:
            emit_json(report.to_json())
        else:
            show(report, console(), brain_arg=str(brain))
        if report.refused:
            raise typer.Exit(EXIT_REFUSED)

    guard(as_json, run)


def show(report: ImportReport, out: Console, *, brain_arg: str | None = None) -> None:
    """The report for people: each rule's context, the files touched, what to look at."""
    folder = f"features/{report.feature}"
    if report.rules:
        count = len(report.rules)
        out.print(f"[bold]{count} rule{'' if count == 1 else 's'}[/] → {folder}/")
        for rule in report.rules:
            how = f"files {', '.join(rule.globs)}" if rule.globs else _TRIGGERS[rule.trigger]
            out.print(
                f"  {escape(shown(rule.source))} → [bold]{rule.context}[/]  "
                f"({', '.join(rule.when)}, {rule.chars} chars; {escape(shown(how))})",
                markup=True,
                highlight=False,
            )
    _seen(report, out)
    counts = [
        f"{len(report.written)} written",
        f"{len(report.updated)} updated",
        f"{len(report.removed)} removed",
        f"{len(report.unchanged)} unchanged",
    ]
    # A blank line after the rules; none above the first line of the report.
    lead = chr(10) if report.rules and not report.seen else ""
    out.print(f"{lead}files: {', '.join(counts)}")
    for path in report.removed:
        out.print(f"  removed {shown(path)}", markup=False)
    if report.role is not None:
        _role(report.role, report.rules, out)
    for title, style, notices in (
        ("warnings", "yellow", report.warnings),
        ("skipped", "yellow", report.skipped),
        ("refused", "bold yellow", report.refused),
    ):
        if notices:
            out.print(f"\n[{style}]{title}[/] ({len(notices)})")
            for notice in notices:
                out.print(f"  {shown(str(notice))}", markup=False)
    if report.hint:
        out.print(f"\n{shown(report.hint)}", markup=False)
    if report.rules:
        # The brain as the user typed it, as `keel init` says it.
        out.print(f"\nNext: [bold]keel doctor {escape(shown(brain_arg or report.brain))}[/]")


def _seen(report: ImportReport, out: Console) -> None:
    """How many source files were looked at and what became of them; the files beside a
    skill by name, since no other part of the report lists them."""
    if not report.seen:
        return
    tally = Counter(s.fate for s in report.seen)
    parts = [f"{tally[fate]} {_FATES[fate]}" for fate in FATES if tally[fate]]
    total = len(report.seen)
    lead = "\n" if report.rules else ""
    out.print(f"{lead}source files: {total} — {', '.join(parts)}", markup=False, highlight=False)
    for seen in report.seen:
        if seen.fate == "named":
            out.print(
                f"  {shown(seen.path)} → named in {seen.context}", markup=False, highlight=False
            )
        elif seen.fate == "merged":
            out.print(
                f"  {shown(seen.path)} → merged into {seen.context}: {shown(seen.reason or '')}",
                markup=False,
                highlight=False,
            )


def _role(role: RoleChange, rules: Sequence[ImportedRule], out: Console) -> None:
    """What happened to the `--role` role: its contexts, and the room it was given."""
    changed = role.added or role.dropped or role.max_active is not None
    changed = changed or role.turn_chars is not None or role.catalog_tokens is not None
    verb = "created" if role.created else "updated" if changed else "unchanged"
    added = f"; added {len(role.added)}" if role.added else ""
    dropped = f"; dropped {', '.join(role.dropped)}" if role.dropped else ""
    out.print(f"role {role.role}: {verb} {shown(role.path)}{added}{dropped}", markup=False)
    linking = [r for r in rules if r.trigger in SELF_LINKING]
    always = sum(r.trigger == "always" for r in linking)
    if role.max_active is not None:
        out.print(
            f"  contexts_budget.maxActive: {role.max_active} — room for {always} always-on and "
            f"{len(linking) - always} file {'rule' if len(linking) - always == 1 else 'rules'} "
            f"at once, and {role.max_active - len(linking)} contexts that opens and bindings "
            "bring",
            markup=False,
        )
    if role.turn_chars is not None:
        chars = sum(r.chars for r in linking)
        out.print(
            f"  contexts_budget.turnChars: {role.turn_chars:,} — the always-on and file rules' "
            f"{chars:,} characters and {role.turn_chars - chars:,} for the rest of a turn",
            markup=False,
        )
    if role.catalog_tokens is not None:
        asks = sum(r.when == ("ask",) for r in rules)
        out.print(
            f"  sections: context.catalog: {role.catalog_tokens:,} tokens — room for the catalog "
            f"lines of {asks} ask {'context' if asks == 1 else 'contexts'}",
            markup=False,
        )
