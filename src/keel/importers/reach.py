"""Globs that match no file of the repository: a rule that may never link, said so.

A rule whose globs name no file the walk saw is still imported — the files may come later,
or live in a folder the walk skips (dependencies, builds) — but a typo in a glob would
otherwise pass unnoticed: the rule would simply never reach a turn. Each such pattern gets
a warning for its rule's source. Patterns are tried as the rule's tool reads them (see
`keel.importers.globs`); `!` patterns and Copilot's "every file" are not tried.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from keel.importers.globs import Dialect, Glob, GlobError
from keel.importers.rules import Notice, Rule


def unmatched(rules: Iterable[Rule], paths: Sequence[str]) -> list[Notice]:
    """A warning for each glob rule with patterns that match none of `paths`, naming them."""
    found: list[Notice] = []
    for rule in rules:
        if rule.trigger != "glob" or rule.dialect is None:
            continue
        idle = [p for p in rule.globs if _idle(p, rule.dialect, paths)]
        if not idle:
            continue
        which = "its globs match" if len(idle) == len(rule.globs) else "some of its globs match"
        found.append(
            Notice(
                path=rule.source,
                message=f"{which} no file in the repository: {', '.join(map(repr, idle))} "
                "(dependency, build and hidden folders not counted) — imported all the same, "
                "it links when a turn names such a file; check for a typo",
            )
        )
    return found


def _idle(pattern: str, dialect: Dialect, paths: Sequence[str]) -> bool:
    """Whether a pattern that can match files matches none of `paths`."""
    try:
        glob = Glob.compile(pattern, dialect)
    except GlobError:
        return False  # the mapper keeps no such pattern; nothing to try
    return not (glob.negated or glob.everything or any(glob.matches(p) for p in paths))
