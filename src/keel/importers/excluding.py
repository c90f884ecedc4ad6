"""`keel import --exclude GLOB`: source files the import leaves out, each said so.

A pattern is read as a `.gitignore` line is (the `cursor` dialect of `keel.importers.globs`):
relative to the source directory, a pattern without a `/` matches a name at any depth, a
trailing `/` means that folder and everything under it. The patterns only ever narrow what
the walk found, so they cannot point the import outside the repository; one with a `..`
segment, an empty one or a `!` one is a usage error, since it could never do what it seems
to say. Every excluded file is listed under `skipped` with the pattern that excluded it,
and a pattern that excluded nothing is warned about (a typo must not pass as done).

A skill is excluded whole when its SKILL.md is: the files beside it are that skill's.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass

from keel.errors import UsageError
from keel.importers.discovery import Found, Skill
from keel.importers.globs import Glob, GlobError
from keel.importers.quoting import shown
from keel.importers.rules import Notice

_EXAMPLE = "e.g. --exclude '.cursor/rules/legacy/' or --exclude CLAUDE.md"


@dataclass(frozen=True, slots=True)
class Excluded:
    """What the patterns left out of a walk's findings."""

    found: Found  # the findings without the excluded files
    sources: frozenset[str]  # every excluded rule file, relative to the source
    skipped: tuple[Notice, ...]  # one per excluded file, naming its pattern
    warnings: tuple[Notice, ...]  # one per pattern that excluded nothing


def compile_excludes(patterns: Sequence[str]) -> tuple[Glob, ...]:
    """The `--exclude` patterns compiled; `UsageError` for one that cannot mean anything."""
    compiled: list[Glob] = []
    for pattern in patterns:
        text = pattern.strip()
        if not text:
            raise UsageError(f"--exclude {pattern!r}: an empty pattern — {_EXAMPLE}")
        if text.startswith("!"):
            raise UsageError(
                f"--exclude {pattern!r}: a pattern cannot re-include ('!') — give only what "
                f"to leave out, {_EXAMPLE}"
            )
        if ".." in text.replace("\\", "/").split("/"):
            raise UsageError(
                f"--exclude {pattern!r}: patterns are relative to the source directory and "
                f"cannot leave it ('..') — {_EXAMPLE}"
            )
        if _unclosed_class(text):
            raise UsageError(
                f"--exclude {pattern!r}: a '[' opens a character class that no ']' closes, so "
                f"the pattern cannot match — close it, or write '\\[' for the character itself"
            )
        try:
            compiled.append(Glob.compile(text, "cursor"))
        except GlobError as exc:
            raise UsageError(f"--exclude {pattern!r}: {exc}") from None
    return tuple(compiled)


def _unclosed_class(text: str) -> bool:
    """Whether a '[' (not escaped) opens a class no later ']' closes."""
    at = 0
    while at < len(text):
        if text[at] == "\\":
            at += 2
            continue
        if text[at] == "[":
            # A ']' right after '[' (or '[!') is a member of the class, not its end.
            first = at + 2 if text[at + 1 : at + 2] in ("!", "^") else at + 1
            end = text.find("]", first + 1)
            if end < 0:
                return True
            at = end
        at += 1
    return False


def exclude(found: Found, patterns: Sequence[Glob]) -> Excluded:
    """Leave out of `found` every rule file a pattern matches, and account for each."""
    sieve = _Sieve(patterns)
    kept = dataclasses.replace(
        found,
        cursor=sieve.paths(found.cursor),
        cursorrules=sieve.paths(found.cursorrules),
        memory=sieve.paths(found.memory),
        claude_rules=sieve.paths(found.claude_rules),
        copilot=sieve.paths(found.copilot),
        windsurf=sieve.paths(found.windsurf),
        windsurfrules=sieve.paths(found.windsurfrules),
        skills=tuple(s for skill in found.skills if (s := sieve.skill(skill)) is not None),
    )
    unused = tuple(
        Notice(
            path=f"--exclude {shown(glob.pattern)}",
            message="matched no rule file — nothing was excluded by it; patterns are relative "
            "to the source directory, as in .gitignore",
        )
        for glob in patterns
        if glob.pattern not in sieve.used
    )
    return Excluded(
        found=kept,
        sources=frozenset(n.path for n in sieve.notices),
        skipped=tuple(sieve.notices),
        warnings=unused,
    )


class _Sieve:
    """The patterns, which of them matched, and a notice for each file they took."""

    def __init__(self, patterns: Sequence[Glob]) -> None:
        self.patterns = patterns
        self.used: set[str] = set()
        self.notices: list[Notice] = []

    def paths(self, paths: Sequence[str]) -> tuple[str, ...]:
        """The paths no pattern excludes."""
        return tuple(p for p in paths if not self._takes(p))

    def skill(self, skill: Skill) -> Skill | None:
        """The skill without its excluded files; None when its SKILL.md is excluded."""
        head = f"{skill.folder}/SKILL.md"
        glob = self._hit(head)
        if glob is None:
            return dataclasses.replace(skill, files=self.paths(skill.files))
        self._note(head, glob)
        for path in skill.files:
            self._note(path, glob, f" (its skill's {head})")
        return None

    def _takes(self, path: str) -> bool:
        glob = self._hit(path)
        if glob is not None:
            self._note(path, glob)
        return glob is not None

    def _hit(self, path: str) -> Glob | None:
        for glob in self.patterns:
            if glob.matches(path):
                self.used.add(glob.pattern)
                return glob
        return None

    def _note(self, path: str, glob: Glob, why: str = "") -> None:
        self.notices.append(
            Notice(
                path=path,
                message=f"excluded by --exclude {shown(glob.pattern)!r}{why} — not imported; "
                "files an earlier import made from it are left as they are",
            )
        )
