"""Glob patterns read the way each coding agent reads them, and the file paths a text names.

`keel import` turns a glob-triggered rule into a context whose generated code links a turn
when its input names a file the rule's globs match. The globs must mean what they meant in
the tool that owned the rule, and the tools disagree about the same text:

| dialect    | `*.py`                        | `src/*.py`                      | case    |
|------------|-------------------------------|---------------------------------|---------|
| `cursor`   | at any depth (gitignore-like) | from the repository root        | exact   |
| `windsurf` | at any depth (gitignore-like) | from the repository root        | exact   |
| `copilot`  | at any depth                  | a `src/` folder at any depth    | ignored |
| `claude`   | the repository root only      | from the repository root        | exact   |

Copilot is read as VS Code reads `applyTo` (`computeAutomaticInstructions.ts`): a pattern
that does not start with `**/` or `/` gets `**/` put in front, paths match without regard
to case, and `*`, `**` and `**/*` match every file. Claude Code's `paths:` are anchored
at the project root (its docs: "`*.md` — Markdown files in the project root"). Cursor and
Windsurf publish no matcher; a pattern without a `/` matches a file name at any depth, as
in `.gitignore` and as the rule tools that emulate Cursor do (minimatch `matchBase`).

The syntax all dialects share: `*` any run of characters inside one path segment, `?` one
character, `[abc]` `[a-z]` `[!abc]` a class, `{a,b}` alternatives (nested, expanded before
matching, at most 1000 expansions), `**` as a whole segment any number of segments
(none included), `\\` escapes the next character. A leading `/` anchors a pattern at the
root, a trailing `/` means that directory and everything under it, a leading `!` excludes
what it matches. `*` matches names that start with a dot.

Paths are POSIX and relative to the repository root. A text names a path when one of its
words contains a `/` or ends in a file extension (`src/app.ts`, `./x.py:12`, `@a/b.md`,
`` `setup.cfg` ``); a bare word (`Makefile`) counts only for a glob whose last segment is
that literal name, and a folder written with its trailing `/` (`frontend/`) for a glob that
takes every file in it (`frontend/**`). An absolute path, a `../` path or a URL is tried
by every tail, since where the repository root sits inside it cannot be known.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Literal

Dialect = Literal["cursor", "windsurf", "copilot", "claude"]
DIALECTS: tuple[Dialect, ...] = ("cursor", "windsurf", "copilot", "claude")

MAX_EXPANSIONS = 1000
# What VS Code treats as "every file" in `applyTo`, attached even when no file is.
COPILOT_EVERYTHING = frozenset({"*", "**", "**/*"})


class GlobError(ValueError):
    """A pattern that cannot be matched as written: empty, or too many alternatives."""


@dataclass(frozen=True, slots=True)
class Glob:
    """One pattern as its source wrote it, compiled for its dialect."""

    pattern: str
    dialect: Dialect
    negated: bool
    everything: bool
    regex: re.Pattern[str]
    # The alternatives whose last segment is a literal name, for bare words (`Makefile`).
    bare: re.Pattern[str] | None

    @classmethod
    def compile(cls, pattern: str, dialect: Dialect) -> Glob:
        """Compile `pattern`; a `GlobError` says why it cannot be matched."""
        text = pattern.strip()
        negated = text.startswith("!")
        text = text[1:].strip() if negated else text
        if not text:
            raise GlobError(f"{pattern!r} is an empty pattern — remove it")
        flags = re.IGNORECASE if dialect == "copilot" else 0
        if dialect == "copilot" and text in COPILOT_EVERYTHING:
            everything = re.compile(".*", flags)
            return cls(pattern, dialect, negated, True, everything, everything)
        anchored = _anchor(text, dialect)
        sources = [_regex(p) for p in anchored]
        literal = [_regex(p) for p in anchored if not _WILD.search(p.rsplit("/", 1)[-1])]
        bare = re.compile("|".join(literal), flags) if literal else None
        return cls(pattern, dialect, negated, False, re.compile("|".join(sources), flags), bare)

    def matches(self, path: str, *, bare: bool = False) -> bool:
        """Whether the normalised relative `path` matches (ignoring negation)."""
        regex = self.bare if bare else self.regex
        return regex is not None and regex.fullmatch(path) is not None


@dataclass(frozen=True, slots=True)
class GlobSet:
    """A rule's globs: a path matches when some pattern does and no `!` pattern does."""

    dialect: Dialect
    globs: tuple[Glob, ...]

    @classmethod
    def of(cls, dialect: str, patterns: Iterable[str]) -> GlobSet:
        """Compile `patterns` in `dialect` (`cursor`, `windsurf`, `copilot` or `claude`)."""
        found = [d for d in DIALECTS if d == dialect]
        if not found:
            raise GlobError(f"unknown glob dialect {dialect!r} — use one of {', '.join(DIALECTS)}")
        return cls(found[0], tuple(Glob.compile(p, found[0]) for p in patterns))

    @property
    def everything(self) -> bool:
        """Whether some pattern matches every file (Copilot's `**`)."""
        return any(g.everything and not g.negated for g in self.globs)

    def matches_path(self, path: str) -> bool:
        """Whether a file path (relative, absolute or a URL) matches the set."""
        candidate = _candidate(path, in_text=False)
        return candidate is not None and self._matches(candidate)

    def matches_text(self, text: str) -> bool:
        """Whether any file path the text names matches the set."""
        return any(self._matches(c) for c in _candidates(text))

    def matching_paths(self, text: str) -> tuple[str, ...]:
        """The paths the text names that match, in the order written, once each."""
        found = [c.path for c in _candidates(text) if self._matches(c)]
        return tuple(dict.fromkeys(found))

    def _matches(self, candidate: _Candidate) -> bool:
        for variant in candidate.variants():
            bare = candidate.bare
            if any(g.matches(variant, bare=bare) for g in self.globs if not g.negated) and not any(
                g.matches(variant, bare=bare) for g in self.globs if g.negated
            ):
                return True
        return False


def split_globs(text: str) -> tuple[str, ...]:
    """A comma-separated pattern list as its patterns; commas inside `{}` or `[]` stay."""
    items: list[str] = []
    current: list[str] = []
    depth = 0
    escaped = False
    for char in text:
        if escaped:
            current.append(char)
            escaped = False
            continue
        if char == "\\":
            escaped = True
        elif char in "{[":
            depth += 1
        elif char in "}]" and depth:
            depth -= 1
        elif char == "," and depth == 0:
            items.append("".join(current))
            current = []
            continue
        current.append(char)
    items.append("".join(current))
    return tuple(item.strip() for item in items if item.strip())


def escape(text: str) -> str:
    """`text` as a literal inside a glob (a folder named `app/[id]` stays that folder)."""
    return "".join("\\" + c if c in "\\*?[]{}!" else c for c in text)


def within(folder: str, pattern: str) -> str:
    """A glob of a rules folder below the root (`backend/.cursor/rules/`), anchored at the
    repository root: a pattern with a `/` from `folder`, one without at any depth under it."""
    if not folder:
        return pattern
    negated = pattern.startswith("!")
    body = pattern[1:] if negated else pattern
    while body.startswith("./"):
        body = body[2:]
    inner = body.lstrip("/").rstrip("/")
    anchored = body.startswith("/") or "/" in inner
    prefix = f"/{escape(folder)}/" if anchored else f"/{escape(folder)}/**/"
    return ("!" if negated else "") + prefix + body.lstrip("/")


def expand_braces(pattern: str) -> list[str]:
    """`a{b,c}d` as `abd`, `acd` (nested too); a `{}` without a top-level comma stays."""
    found = _expand(pattern)
    if len(found) > MAX_EXPANSIONS:
        raise GlobError(
            f"{pattern!r} expands to more than {MAX_EXPANSIONS} patterns — write fewer alternatives"
        )
    return found


# ---- translation --------------------------------------------------------------------

_WILD = re.compile(r"(?<!\\)[*?\[]")


def _anchor(text: str, dialect: Dialect) -> list[str]:
    """The pattern's alternatives as root-anchored patterns without a leading `/`."""
    if dialect == "copilot":
        text = _strip_dot(text)
        if text.startswith("/"):
            text = text.lstrip("/")
        elif not text.startswith("**/"):
            text = "**/" + text
        return [_directory(_tidy(p))[0] for p in expand_braces(text)]
    anchored: list[str] = []
    for alternative in expand_braces(text):
        pattern = _tidy(_strip_dot(alternative))
        rooted = pattern.startswith("/")
        pattern, has_slash = _directory(pattern.lstrip("/"))
        if dialect in ("cursor", "windsurf") and not rooted and not has_slash:
            pattern = "**/" + pattern
        anchored.append(pattern)
    return anchored


def _strip_dot(text: str) -> str:
    while text.startswith("./"):
        text = text[2:]
    return text


def _tidy(text: str) -> str:
    return re.sub(r"/{2,}", "/", text)


def _directory(pattern: str) -> tuple[str, bool]:
    """`dir/` as `dir/**`, and whether a `/` sits before the end (gitignore's anchor)."""
    inner = pattern.rstrip("/")
    has_slash = "/" in inner
    return (inner + "/**" if pattern.endswith("/") and inner else inner), has_slash


def _regex(pattern: str) -> str:
    """The regex of one brace-free, root-anchored pattern over a relative POSIX path."""
    segments: list[str] = []
    for segment in pattern.split("/"):
        if segment != "**" or segments[-1:] != ["**"]:  # `**/**` is one `**`
            segments.append(segment)
    out: list[str] = []
    for index, segment in enumerate(segments):
        last = index == len(segments) - 1
        if segment == "**" and last:
            if out:
                out[-1] = out[-1].removesuffix("/")
                out.append("(?:/.*)?")
            else:
                out.append(".*")
        elif segment == "**":
            out.append("(?:[^/]+/)*")
        else:
            out.append(_segment(segment) + ("" if last else "/"))
    return "".join(out)


def _segment(segment: str) -> str:
    out: list[str] = []
    index = 0
    while index < len(segment):
        char = segment[index]
        if char == "\\" and index + 1 < len(segment):
            out.append(re.escape(segment[index + 1]))
            index += 2
        elif char == "*":
            while index < len(segment) and segment[index] == "*":
                index += 1
            out.append("[^/]*")
        elif char == "?":
            out.append("[^/]")
            index += 1
        elif char == "[" and (end := _class_end(segment, index)) is not None:
            out.append(_class(segment[index + 1 : end]))
            index = end + 1
        else:
            out.append(re.escape(char))
            index += 1
    return "".join(out)


def _class_end(segment: str, start: int) -> int | None:
    index = start + 1
    if index < len(segment) and segment[index] in "!^":
        index += 1
    if index < len(segment) and segment[index] == "]":
        index += 1
    end = segment.find("]", index)
    return None if end < 0 else end


def _class(body: str) -> str:
    negated = body[:1] in ("!", "^")
    body = body[1:] if negated else body
    inner = "".join("\\" + c if c in "\\^[]" else c for c in body)
    return f"[^{inner}/]" if negated else f"[{inner}]"


def _expand(pattern: str) -> list[str]:
    start = _brace_start(pattern)
    if start is None:
        return [pattern]
    open_at, close_at, options = start
    head, tail = pattern[:open_at], pattern[close_at + 1 :]
    results: list[str] = []
    tails = _expand(tail)
    for option in options:
        for middle in _expand(option):
            results.extend(head + middle + end for end in tails)
            if len(results) > MAX_EXPANSIONS:
                return results
    return results


def _brace_start(pattern: str) -> tuple[int, int, list[str]] | None:
    """The first `{...}` holding a top-level comma: where it opens, closes, its options."""
    index = 0
    while index < len(pattern):
        char = pattern[index]
        if char == "\\":
            index += 2
            continue
        if char == "{":
            found = _brace_options(pattern, index)
            if found is not None:
                return index, found[0], found[1]
        index += 1
    return None


def _brace_options(pattern: str, open_at: int) -> tuple[int, list[str]] | None:
    depth = 0
    options: list[str] = []
    current: list[str] = []
    index = open_at + 1
    while index < len(pattern):
        char = pattern[index]
        if char == "\\" and index + 1 < len(pattern):
            current.append(pattern[index : index + 2])
            index += 2
            continue
        if char == "{":
            depth += 1
        elif char == "}" and depth:
            depth -= 1
        elif char == "}":
            options.append("".join(current))
            return (index, options) if len(options) > 1 else None
        elif char == "," and depth == 0:
            options.append("".join(current))
            current = []
            index += 1
            continue
        current.append(char)
        index += 1
    return None


# ---- the paths a text names -----------------------------------------------------------

_WORD = re.compile(r"[^\s`'\"<>()\[\]{}|,;]+")
_EXTENSION = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_+-]{0,15}$")
_LOCATION = re.compile(r"(?:#L\d+(?:-L?\d+)?|(?::\d+){1,2})$")
_SCHEME = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://[^/]*")
_DRIVE = re.compile(r"^[A-Za-z]:/")
_BARE = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]*")
_ANY_NAME = "\x00"


@dataclass(frozen=True, slots=True)
class _Candidate:
    path: str
    tails: bool  # absolute, `../` or a URL: try every tail
    bare: bool  # a word without `/` or extension: only literal names may match it
    folder: bool = False  # written with a trailing `/` (`frontend/`): a folder, by its files

    def variants(self) -> Iterator[str]:
        for path in self._paths():
            yield path
            if self.folder:
                # Any file of the folder: a NUL is in no real name, so only a pattern that
                # takes every name there (`frontend/**`, `frontend/*`) matches it.
                yield f"{path}/{_ANY_NAME}"

    def _paths(self) -> Iterator[str]:
        yield self.path
        if self.tails:
            parts = self.path.split("/")
            for index in range(1, len(parts)):
                yield "/".join(parts[index:])


def _candidates(text: str) -> Iterator[_Candidate]:
    for word in _WORD.findall(text):
        candidate = _candidate(word, in_text=True)
        if candidate is not None:
            yield candidate


def _candidate(word: str, *, in_text: bool) -> _Candidate | None:
    path = word.strip()
    if in_text:
        path = _LOCATION.sub("", path.lstrip("@*").rstrip(".:;!?*"))
    folder = in_text and path.endswith("/") and not path.endswith("//")
    path, tails = _relative(path)
    if not path:
        return None
    if not in_text or "/" in path or _EXTENSION.search(path) or folder:
        return _Candidate(path, tails, bare=False, folder=folder)
    if _BARE.fullmatch(path):
        return _Candidate(path, tails, bare=True)
    return None


def _relative(path: str) -> tuple[str, bool]:
    """The path without scheme, drive, root or `../`, and whether it had one (try its tails)."""
    tails = False
    if _SCHEME.match(path):
        path, tails = _SCHEME.sub("", path), True
    if "\\" in path and "/" not in path:
        path = path.replace("\\", "/")
    if _DRIVE.match(path):
        path, tails = path[3:], True
    if path.startswith(("/", "~/", "../")):
        tails = True
        path = path.lstrip("~")
        while path.startswith(("/", "../")):
            path = path.removeprefix("../").lstrip("/")
    return _tidy(_strip_dot(path)).rstrip("/"), tails
