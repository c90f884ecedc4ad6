"""Finding a repository's rule files: where each coding agent looks, and nothing else.

- Cursor: `.cursor/rules/**/*.mdc` and `*.md`, and `.cursorrules`.
- Claude Code: `CLAUDE.md` (also in `.claude/`), `.claude/skills/*/SKILL.md` with the
  files beside it, `.claude/rules/**/*.md`.
- AGENTS.md: `AGENTS.md` or `agents.md`.
- GitHub Copilot: `.github/copilot-instructions.md`,
  `.github/instructions/**/*.instructions.md`.
- Windsurf: `.windsurf/rules/**/*.md`, `.windsurfrules`.

Each at the root and in any subfolder: a sub-project keeps its own (`api/.github/`,
`api/.cursorrules`), and the mappers scope those to their folder (see
`keel.importers.nested`).

A file that sits in one of those rule folders but is not a rule file the tool reads is
reported, never passed over in silence. The walk skips version control, dependency and
build folders, other hidden folders, and the brain itself when it lives inside the
repository; it follows a symbolic link to a folder inside the repository, and reports one
that leads out of it where a tool reads rules. A rule file whose path is not valid UTF-8
(the file system hands its bytes over as lone surrogates, which no brain file can hold)
is reported with those bytes shown as `\\xNN`, and not read; a name with a newline or any
other character is data like any other (see `keel.importers.quoting`).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from keel.brain.document import is_utf8
from keel.importers.quoting import shown
from keel.importers.rules import Notice

SKIPPED_DIRS = frozenset(
    {
        ".git",
        ".hg",
        ".svn",
        ".keel",
        "node_modules",
        ".venv",
        "venv",
        "__pycache__",
        ".tox",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        "dist",
        "build",
        "target",
    }
)
RULE_DIRS = frozenset({".cursor", ".claude", ".github", ".windsurf"})
MEMORY_NAMES = {"CLAUDE.md": "claude", "AGENTS.md": "agents", "agents.md": "agents"}
NOT_UTF8 = (
    "the name is not valid UTF-8 (its undecodable bytes are shown as \\xNN) — rename it, "
    "then re-run"
)


@dataclass(frozen=True, slots=True, kw_only=True)
class Skill:
    """A Claude Code skill folder: its SKILL.md and every other file in it."""

    folder: str  # `.claude/skills/<name>`
    files: tuple[str, ...]  # relative to the source directory, SKILL.md excluded


@dataclass(frozen=True, slots=True, kw_only=True)
class Found:
    """Every rule file of a repository, by where it was found (paths relative to it)."""

    cursor: tuple[str, ...] = ()
    cursorrules: tuple[str, ...] = ()
    memory: tuple[str, ...] = ()  # CLAUDE.md and AGENTS.md files
    skills: tuple[Skill, ...] = ()
    claude_rules: tuple[str, ...] = ()
    copilot: tuple[str, ...] = ()
    windsurf: tuple[str, ...] = ()
    windsurfrules: tuple[str, ...] = ()
    stray: tuple[Notice, ...] = ()
    # Every file the walk saw (UTF-8 names), rule files or not: what globs can be tried on.
    files: tuple[str, ...] = ()

    @property
    def count(self) -> int:
        """How many files were found that may hold rules."""
        return (
            len(self.cursor)
            + len(self.cursorrules)
            + len(self.memory)
            + len(self.skills)
            + sum(len(s.files) for s in self.skills)
            + len(self.claude_rules)
            + len(self.copilot)
            + len(self.windsurf)
            + len(self.windsurfrules)
        )


def discover(root: Path, *, skip: Path | None = None) -> Found:
    """Walk `root` once and sort its rule files by tool."""
    sorted_files: dict[str, list[str]] = {
        k: [] for k in ("cursor", "cursorrules", "memory", "rules", "copilot", "windsurf", "wsr")
    }
    skills: dict[str, list[str]] = {}
    paths, stray = _walk(root, skip)
    links = _links(root, paths)
    for path in paths:
        kind = _kind(path)
        if kind is not None and not is_utf8(path):
            stray.append(Notice(path=shown(path), message=NOT_UTF8))
            continue
        if kind is not None and path in links:
            stray.append(
                Notice(
                    path=path,
                    message=f"a symbolic link to {links[path]}, which is imported (once) in "
                    "its own right",
                )
            )
            continue
        if kind is None:
            continue
        if kind.startswith("stray:"):
            stray.append(Notice(path=path, message=kind.removeprefix("stray:")))
        elif kind == "skill":
            parts = path.split("/")
            at = _skills_at(parts) or 0
            skills.setdefault("/".join(parts[: at + 3]), []).append(path)
        else:
            sorted_files[kind].append(path)
    found_skills: list[Skill] = []
    for folder, files in sorted(skills.items()):
        if f"{folder}/SKILL.md" not in files:
            stray.extend(
                Notice(
                    path=f,
                    message=f"{folder}/ has no SKILL.md, so Claude Code loads no skill from it "
                    "— add one, or move the file",
                )
                for f in sorted(files)
            )
            continue
        others = tuple(sorted(f for f in files if f != f"{folder}/SKILL.md"))
        found_skills.append(Skill(folder=folder, files=others))
    return Found(
        cursor=tuple(sorted(sorted_files["cursor"])),
        cursorrules=tuple(sorted_files["cursorrules"]),
        memory=tuple(sorted(sorted_files["memory"])),
        skills=tuple(found_skills),
        claude_rules=tuple(sorted(sorted_files["rules"])),
        copilot=tuple(sorted(sorted_files["copilot"])),
        windsurf=tuple(sorted(sorted_files["windsurf"])),
        windsurfrules=tuple(sorted_files["wsr"]),
        stray=tuple(sorted(stray, key=lambda n: n.path)),
        files=tuple(p for p in paths if is_utf8(p)),
    )


def _walk(root: Path, skip: Path | None) -> tuple[list[str], list[Notice]]:
    """Every file under `root`, by its path there; and why a linked folder was not walked.

    A symbolic link to a folder is followed when the folder lies inside `root` (a skill
    kept once and linked into `.claude/skills/`), and each real folder is walked once, so a
    loop ends. A folder already walked where no tool reads rules (`shared-rules/`) and
    linked from where one does (`.cursor/rules/shared`) is listed again under the link, or
    its rules would vanish without a word. A link out of `root` is never followed; when it
    stands where a tool reads rules, that is said.
    """
    found: list[str] = []
    notices: list[Notice] = []
    # os.path.realpath, not Path.resolve: a link that loops must not stop the walk.
    top = os.path.realpath(root)
    skipped = os.path.realpath(skip) if skip is not None else None
    first: dict[str, str] = {top: ""}  # each real folder walked, by its first path
    again: list[tuple[str, str]] = []  # (a link's path, the real folder walked elsewhere)
    for folder, dirs, files in os.walk(root, followlinks=True):
        here = Path(folder)
        rel = here.relative_to(root).as_posix()
        kept: list[str] = []
        for name in sorted(dirs):
            if name in SKIPPED_DIRS or (name.startswith(".") and name not in RULE_DIRS):
                continue
            real = os.path.realpath(here / name)
            path = name if rel == "." else f"{rel}/{name}"
            if real == skipped:
                continue
            if real in first:
                # Not a link to a folder around itself (the root, an ancestor): a loop.
                around = real == top or path.startswith(first[real] + "/")
                if not around and _rule_place(path) and not _rule_place(first[real]):
                    again.append((path, real))
                continue
            if (here / name).is_symlink() and os.path.commonpath([top, real]) != top:
                if _rule_place(path):
                    notices.append(Notice(path=path, message=_LINK_OUT))
                continue
            first[real] = path
            kept.append(name)
        dirs[:] = kept
        found.extend(name if rel == "." else f"{rel}/{name}" for name in files)
    walked = list(found)
    for link, real in again:
        under = first[real] + "/"
        found.extend(link + "/" + p.removeprefix(under) for p in walked if p.startswith(under))
    return sorted(found), notices


def _rule_place(folder: str) -> bool:
    """Whether a tool reads rules from files in this folder."""
    return _kind(f"{folder}/x.md") is not None


def _links(root: Path, paths: list[str]) -> dict[str, str]:
    """Rule files that are symbolic links to another rule file found (`CLAUDE.md -> AGENTS.md`)."""
    real = {
        os.path.realpath(root / p): p
        for p in paths
        if _kind(p) is not None and not (root / p).is_symlink()
    }
    links: dict[str, str] = {}
    for path in paths:
        if (root / path).is_symlink() and os.path.realpath(root / path) in real:
            links[path] = real[os.path.realpath(root / path)]
    return links


@dataclass(frozen=True, slots=True)
class _Folder:
    """A rules folder: where it sits, which files in it are rules, what the others hear."""

    parts: tuple[str, ...]
    anywhere: bool  # also in a subfolder of the repository
    suffixes: tuple[str, ...]
    kind: str
    stray: str


_FOLDERS = (
    _Folder(
        (".cursor", "rules"),
        True,
        (".mdc", ".md"),
        "cursor",
        "Cursor reads only .mdc and .md files in .cursor/rules/ — not imported",
    ),
    _Folder(
        (".windsurf", "rules"),
        True,
        (".md",),
        "windsurf",
        "Windsurf reads only .md files in .windsurf/rules/ — not imported",
    ),
    _Folder(
        (".claude", "rules"),
        True,
        (".md",),
        "rules",
        "Claude Code reads only .md files in .claude/rules/ — not imported",
    ),
    _Folder(
        (".github", "instructions"),
        True,
        (".instructions.md",),
        "copilot",
        "Copilot reads only *.instructions.md files in .github/instructions/ — not imported "
        "(rename it NAME.instructions.md)",
    ),
)
_FILES = {
    ".cursorrules": "cursorrules",
    ".windsurfrules": "wsr",
    ".github/copilot-instructions.md": "copilot",
}
_LINK_OUT = (
    "a symbolic link to a folder outside the repository — not followed, so nothing in it is "
    "imported; copy the folder in, or point the link inside the repository"
)
_LOOSE_SKILL = (
    "a skill is a folder with a SKILL.md (.claude/skills/<name>/SKILL.md); Claude Code loads "
    "no loose files here — not imported"
)


def _kind(path: str) -> str | None:
    """What a path is: a kind of rule file, `stray:<why not>`, or None (not a rule place)."""
    parts = path.split("/")
    for name, kind in _FILES.items():  # at the root, or a sub-project's (`api/.cursorrules`)
        if parts[-name.count("/") - 1 :] == name.split("/"):
            return kind
    skills = _skills_at(parts)
    if skills is not None:
        return "skill" if len(parts) > skills + 3 else f"stray:{_LOOSE_SKILL}"
    for folder in _FOLDERS:
        if _inside(parts, folder):
            return folder.kind if parts[-1].endswith(folder.suffixes) else f"stray:{folder.stray}"
    return "memory" if parts[-1] in MEMORY_NAMES else None


def _skills_at(parts: list[str]) -> int | None:
    """Where a `.claude/skills/` folder starts in a path below it, if it is below one."""
    for at in range(len(parts) - 2):
        if parts[at : at + 2] == [".claude", "skills"]:
            return at
    return None


def _inside(parts: list[str], folder: _Folder) -> bool:
    size = len(folder.parts)
    starts = range(len(parts) - size) if folder.anywhere else range(min(1, len(parts) - size))
    return any(tuple(parts[i : i + size]) == folder.parts for i in starts)
