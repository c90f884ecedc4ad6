"""Every file the import looked at, and what became of it: nothing is lost without a word.

The files are the ones found where a tool reads rules (`keel.importers.discovery`): rule
files, the files beside a skill's SKILL.md, and the strays of rule folders. Each gets one
fate (`keel.importers.report.Fate`), decided in this order: imported (to its context),
refused (a file of its context could not be written), excluded or skipped (with the reason
given for it), named (a file beside a skill, named by path in the skill's context — a text
file that could not be read is named too, but its skip says more).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from keel.importers.dedupe import Merged
from keel.importers.discovery import Found
from keel.importers.report import Fate, ImportedRule, Seen
from keel.importers.rules import Notice, Rule

# A file found where rules live that nothing else spoke for: kept in the accounting rather
# than lost, so a gap in the import shows in the report instead of in silence.
UNSAID = "found, but the import has no word on it — please report this as a bug"


@dataclass(frozen=True, slots=True, kw_only=True)
class Outcomes:
    """What one run did with the rules it mapped, as the accounting needs it."""

    rules: Iterable[Rule]  # every mapped rule
    imported: Iterable[ImportedRule]
    refused: Mapping[str, str]  # rule source -> the brain file that was refused
    merged: Iterable[Merged] = ()
    skipped: Iterable[Notice]  # by source path (strays and excluded files included)
    excluded: frozenset[str]


def account(found: Found, done: Outcomes) -> tuple[Seen, ...]:
    """One `Seen` per file found, sorted by path."""
    fates: dict[str, Seen] = {}
    contexts = {r.source: r.context for r in done.imported}
    for source, context in contexts.items():
        fates[source] = Seen(path=source, fate="imported", context=context)
    for fold in done.merged:
        into = contexts.get(fold.into)
        if into is not None:  # a rule refused or skipped takes its parallels with it
            merged = Seen(path=fold.source, fate="merged", context=into, reason=fold.why)
            fates[fold.source] = merged
        else:
            fates[fold.source] = Seen(
                path=fold.source,
                fate="skipped",
                reason=f"{fold.why}, and {fold.into} was not imported",
            )
    for source, brain_path in done.refused.items():
        fates.setdefault(
            source,
            Seen(path=source, fate="refused", reason=f"{brain_path} could not be written"),
        )
    for notice in done.skipped:
        fate: Fate = "excluded" if notice.path in done.excluded else "skipped"
        fates.setdefault(notice.path, Seen(path=notice.path, fate=fate, reason=notice.message))
    for rule in done.rules:
        owner = contexts.get(rule.source)
        for attached in rule.attachments:
            if owner is not None and attached.source is None:
                named = Seen(path=attached.path, fate="named", context=owner)
                fates.setdefault(attached.path, named)
    for path in _found(found):
        fates.setdefault(path, Seen(path=path, fate="skipped", reason=UNSAID))
    return tuple(sorted(fates.values(), key=lambda s: s.path))


def _found(found: Found) -> list[str]:
    """Every rule file the walk found (the excluded ones are accounted by their notice)."""
    paths = [
        *found.cursor,
        *found.cursorrules,
        *found.memory,
        *found.claude_rules,
        *found.copilot,
        *found.windsurf,
        *found.windsurfrules,
    ]
    for skill in found.skills:
        paths.append(f"{skill.folder}/SKILL.md")
        paths.extend(skill.files)
    return paths
