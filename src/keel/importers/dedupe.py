"""One rule once: parallel rule sets (Cursor and Windsurf, CLAUDE.md and AGENTS.md) merged.

Repositories keep the same rules for several tools. Imported as they are, the same
always-on rule rides every turn twice and the catalog carries near-duplicates. Two rules
merge when they apply the same way — the same trigger, and for glob rules the same globs
read the same way — and their texts are the same once whitespace is folded, or nearly
the same (`NEAR` of their characters in common), or one is only an `@`-import of the other
(`CLAUDE.md` holding `@AGENTS.md`, which Claude Code expands). The longer text is kept (it
loses least), and its context names every source it stands for; each other source is
reported as merged, with the reason.
"""

from __future__ import annotations

import dataclasses
import difflib
import posixpath
import re
from collections.abc import Sequence
from dataclasses import dataclass

from keel.importers.globs import Dialect
from keel.importers.rules import Rule

NEAR = 0.95
# Dialects that read the same glob text the same way.
_FAMILY: dict[Dialect, str] = {
    "cursor": "gitignore",
    "windsurf": "gitignore",
    "copilot": "copilot",
    "claude": "claude",
}
_ONLY_IMPORT = re.compile(r"@((?:\./)?[\w.-]+(?:/[\w.-]+)*)")


@dataclass(frozen=True, slots=True)
class Merged:
    """A source folded into another rule's context."""

    source: str
    into: str  # the source of the rule kept
    why: str


def dedupe(rules: Sequence[Rule]) -> tuple[list[Rule], list[Merged]]:
    """The rules with duplicates folded into one (naming the others in `also`), and the
    sources folded, each with its reason."""
    kept: list[Rule] = []
    merged: list[Merged] = []
    by_source = {r.source: r for r in rules}
    # The longest first, so that a kept rule is the one that loses least.
    for rule in sorted(rules, key=lambda r: (-len(r.body), r.source)):
        target = _import_target(rule, by_source)
        for index, other in enumerate(kept):
            why = _same(rule, other, target)
            if why is not None:
                kept[index] = dataclasses.replace(other, also=(*other.also, rule.source))
                merged.append(Merged(source=rule.source, into=other.source, why=why))
                break
        else:
            kept.append(rule)
    return sorted(kept, key=lambda r: r.source), merged


def _same(rule: Rule, other: Rule, target: str | None) -> str | None:
    """Why `rule` is `other` over again, or None."""
    # A skill's files beside it are named by its text: folding one skill into another would
    # lose them, so skills stay apart.
    if _how(rule) != _how(other) or rule.attachments or other.attachments:
        return None
    if target == other.source:
        return f"it only @-imports {other.source}, which Claude Code expands to that text"
    a, b = _folded(rule.body), _folded(other.body)
    if a == b:
        return f"the same text as {other.source}"
    # The lengths alone bound the ratio: most pairs stop here, before any matching.
    if 2 * min(len(a), len(b)) < NEAR * (len(a) + len(b)):
        return None
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    if matcher.quick_ratio() < NEAR:
        return None
    ratio = matcher.ratio()
    if ratio < NEAR:
        return None
    # Floored: a text that differs is never "100 %" the same.
    return f"nearly the same text as {other.source} ({int(ratio * 100)}% in common)"


def _how(rule: Rule) -> tuple[str, str | None, tuple[str, ...]]:
    """When a rule applies: its trigger and, for globs, the globs as they are read."""
    family = _FAMILY[rule.dialect] if rule.dialect is not None else None
    return rule.trigger, family, tuple(sorted(rule.globs))


def _folded(text: str) -> str:
    return " ".join(text.split())


def _import_target(rule: Rule, rules: dict[str, Rule]) -> str | None:
    """The rule file a CLAUDE.md's whole text `@`-imports, when it is one found here."""
    if rule.tool != "claude":
        return None
    found = _ONLY_IMPORT.fullmatch(rule.body.strip())
    if found is None:
        return None
    folder = posixpath.dirname(rule.source)
    target = posixpath.normpath(posixpath.join(folder, found.group(1)))
    return target if target in rules else None
