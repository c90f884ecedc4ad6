"""The corpus of real rule trees, the prompts asked of it, and what each tool would load.

`tests/fixtures/agent_rules/<repo>/` holds the rule files of public repositories (their
sources and licences in SOURCES.md there). Each repository has a few prompts that name a
file of it, and one that names none. For a prompt, `tool_rules` says which rule files each
agent tool would load by its own rule — a small model of each tool, written here from the
tools' documentation and independent of Keel's importer:

- Cursor: `.cursorrules`, and each `.cursor/rules/` rule with `alwaysApply: true` or with
  a glob that matches the file (a pattern without `/` matches the file's name at any
  depth); a rule with only a description waits for the agent to ask for it;
- Claude Code: the root `CLAUDE.md` (or `.claude/CLAUDE.md`), the `CLAUDE.md` of each
  folder above the file, the files those `@`-import, and each `.claude/rules/` file with no
  `paths:` or with a path (anchored at the root) that matches; skills wait to be picked;
- AGENTS.md: the root one and the one of each folder above the file;
- GitHub Copilot: `.github/copilot-instructions.md`, and each `.instructions.md` whose
  `applyTo` matches (a pattern not starting with `**/` or `/` gets `**/` in front; case is
  ignored; `*`, `**` and `**/*` apply to every request);
- Windsurf: `.windsurfrules`, and each `.windsurf/rules/` rule that is `always_on` or a
  `glob` rule whose globs match.

`measure_repo` imports a corpus repository into a new brain with `--role coder` (as
`keel import` does), runs the prompt hook once per prompt in a new session each, and
compares what the hook sent with the union of what the tools would load. The benchmark
`bench/agent_rules.py` reports it; `tests/importers/test_corpus.py` holds it to account.
Rule files are keyed by their real path in the repository, so a `CLAUDE.md` that is a link
to `AGENTS.md` is the one rule it is.
"""

from __future__ import annotations

import os
import re
import shutil
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "agent_rules"
ROLE = "coder"
TOOLS = ("cursor", "claude", "agents", "copilot", "windsurf")


@dataclass(frozen=True, slots=True)
class Prompt:
    text: str
    file: str | None  # the repository file the prompt names; None: it names none


# Per repository: prompts that name a file each glob or folder rule covers, and one that
# names no file. Each named file exists in the corpus as an empty placeholder, so the
# import sees the globs match something.
PROMPTS: dict[str, tuple[Prompt, ...]] = {
    "trigger.dev": (
        Prompt(
            "Why does apps/webapp/app/v3/services/triggerTask.server.ts retry twice?",
            "apps/webapp/app/v3/services/triggerTask.server.ts",
        ),
        Prompt(
            "Add an index to internal-packages/database/prisma/schema.prisma for runs by tag",
            "internal-packages/database/prisma/schema.prisma",
        ),
        Prompt(
            "The task in references/hello-world/src/trigger/example.ts never finishes",
            "references/hello-world/src/trigger/example.ts",
        ),
        Prompt("Bump zod in packages/core/package.json", "packages/core/package.json"),
        Prompt(
            "Reword the intro of docs/introduction.mdx for new users",
            "docs/introduction.mdx",
        ),
        Prompt("How do I run the whole test suite before a release?", None),
    ),
    "langfuse": (
        Prompt(
            "web/src/features/evals/components/EvalForm.tsx crashes on an empty template",
            "web/src/features/evals/components/EvalForm.tsx",
        ),
        Prompt(
            "Rename the handler in web/src/features/evals/v2/router.ts",
            "web/src/features/evals/v2/router.ts",
        ),
        Prompt(
            "worker/src/queues/evalQueue.ts drops jobs under load",
            "worker/src/queues/evalQueue.ts",
        ),
        Prompt(
            "Seed more traces in packages/shared/scripts/seeder/seed.ts",
            "packages/shared/scripts/seeder/seed.ts",
        ),
        Prompt("How do I start the dev server?", None),
    ),
    "graphiti": (
        Prompt(
            "Why does graphiti_core/search/search.py return duplicates?",
            "graphiti_core/search/search.py",
        ),
        Prompt(
            "Add a tool to mcp_server/src/graphiti_mcp_server.py",
            "mcp_server/src/graphiti_mcp_server.py",
        ),
        Prompt("Which graph databases are supported?", None),
    ),
    "browser-use": (
        Prompt(
            "browser_use/agent/service.py loops when the page never loads",
            "browser_use/agent/service.py",
        ),
        Prompt(
            "Speed up browser_use/dom/serializer.py on large pages",
            "browser_use/dom/serializer.py",
        ),
        Prompt("How do I run the tests?", None),
    ),
}

# Files of the corpus that are not rule files: licences and the prompts' placeholders.
NOT_RULES = {"LICENSE"}

# Where the tools read rule files (a path relative to the repository root).
RULE_PLACES = (
    re.compile(r"(^|.*/)(CLAUDE|AGENTS)\.md$"),
    re.compile(r"(^|.*/)\.cursor/rules/.+"),
    re.compile(r"(^|.*/)\.claude/(CLAUDE\.md|rules/.+|skills/.+)$"),
    re.compile(r"(^|.*/)\.github/(copilot-instructions\.md|instructions/.+)$"),
    re.compile(r"(^|.*/)\.windsurf/rules/.+"),
    re.compile(r"(^|.*/)\.(cursorrules|windsurfrules)$"),
)


def repos() -> list[str]:
    return sorted(PROMPTS)


# --- the tools' own loading rules -----------------------------------------------------


def files_of(repo: Path) -> list[str]:
    """Every file and link to a file under `repo`, relative, `/`-separated, sorted."""
    found: list[str] = []
    for folder, dirs, names in os.walk(repo):
        dirs.sort()
        found.extend((Path(folder) / name).relative_to(repo).as_posix() for name in names)
    return sorted(found)


def rule_files(repo: Path) -> list[str]:
    """The files of `repo` that sit where a tool reads rules."""
    return [
        f
        for f in files_of(repo)
        if f not in NOT_RULES and any(p.match(f) for p in RULE_PLACES) and not _hidden(f)
    ]


def _hidden(path: str) -> bool:
    """Inside a hidden folder that is no tool's (`.agents/`): no tool reads it directly."""
    tool_dirs = {".cursor", ".claude", ".github", ".windsurf"}
    return any(p.startswith(".") and p not in tool_dirs for p in path.split("/")[:-1])


def real(repo: Path, path: str) -> str:
    """`path` with its links resolved, relative to the repository."""
    root = os.path.realpath(repo)
    return Path(os.path.relpath(os.path.realpath(repo / path), root)).as_posix()


def front(text: str) -> tuple[dict[str, str | list[str]], str]:
    """A rule file's frontmatter, read line by line as the tools read it, and its body."""
    lines = text.splitlines()
    if not lines or lines[0].strip() != "---":
        return {}, text
    end = next((i for i in range(1, len(lines)) if lines[i].strip() == "---"), None)
    if end is None:
        return {}, text
    meta: dict[str, str | list[str]] = {}
    key = None
    for line in lines[1:end]:
        pair = re.match(r"^([A-Za-z_][\w-]*):\s*(.*)$", line)
        if pair:
            key, value = pair[1], pair[2].strip()
            meta[key] = _items(value[1:-1]) if value.startswith("[") else value
            if not value:
                meta[key] = []
        elif key is not None and line.strip().startswith("- "):
            held = meta.get(key)
            items = held if isinstance(held, list) else []
            items.append(_unquote(line.strip()[2:]))
            meta[key] = items
    return meta, "\n".join(lines[end + 1 :])


def _unquote(text: str) -> str:
    text = text.strip()
    if len(text) >= 2 and text[0] == text[-1] and text[0] in "\"'":
        return text[1:-1]
    return text


def _items(text: str) -> list[str]:
    return [_unquote(part) for part in _split(text) if part.strip()]


def _split(text: str) -> list[str]:
    """`text` split at commas outside `{}`."""
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        depth += ch == "{"
        depth -= ch == "}" and depth > 0
        if ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return parts


def patterns(value: str | list[str] | None) -> list[str]:
    """A `globs:`/`paths:`/`applyTo:` value as its patterns."""
    if value is None:
        return []
    texts = value if isinstance(value, list) else [_unquote(value)]
    return [p.strip() for t in texts for p in _split(t) if p.strip()]


def glob_match(pattern: str, path: str, *, ignore_case: bool = False) -> bool:
    """Whether a root-anchored glob matches `path` (`*` in one segment, `**` any)."""
    pattern = pattern.lstrip("/")
    if pattern.endswith("/"):
        pattern += "**"
    flags = re.IGNORECASE if ignore_case else 0
    return any(re.fullmatch(_regex(p), path, flags) for p in _braces(pattern))


def _braces(pattern: str) -> list[str]:
    start = pattern.find("{")
    if start < 0:
        return [pattern]
    depth = 0
    for end in range(start, len(pattern)):
        depth += pattern[end] == "{"
        depth -= pattern[end] == "}"
        if depth == 0:
            head, inner, tail = pattern[:start], pattern[start + 1 : end], pattern[end + 1 :]
            return [x for alt in _split(inner) for x in _braces(head + alt + tail)]
    return [pattern]


def _regex(pattern: str) -> str:
    out, i = [], 0
    while i < len(pattern):
        if pattern.startswith("**/", i):
            out.append("(?:[^/]+/)*")
            i += 3
        elif pattern.startswith("**", i):
            out.append(".*")
            i += 2
        elif pattern[i] == "*":
            out.append("[^/]*")
            i += 1
        elif pattern[i] == "?":
            out.append("[^/]")
            i += 1
        elif pattern[i] == "[" and "]" in pattern[i + 1 :]:
            end = pattern.index("]", i + 1)
            inner = pattern[i + 1 : end]
            out.append("[" + ("^" + inner[1:] if inner.startswith("!") else inner) + "]")
            i = end + 1
        else:
            out.append(re.escape(pattern[i]))
            i += 1
    return "".join(out)


def _cursor_match(pattern: str, path: str) -> bool:
    """Cursor and Windsurf: a pattern without `/` is a file name at any depth."""
    if "/" not in pattern.rstrip("/"):
        if pattern.endswith("/"):
            return glob_match(pattern, path)
        return glob_match(pattern, path.rsplit("/", 1)[-1])
    return glob_match(pattern, path)


def _copilot_match(pattern: str, path: str) -> bool:
    if not pattern.startswith(("**/", "/")):
        pattern = "**/" + pattern
    return glob_match(pattern, path, ignore_case=True)


def _folders(file: str | None) -> list[str]:
    """The folders above `file`, the root ('') first."""
    if file is None:
        return [""]
    parts = file.split("/")[:-1]
    return [""] + ["/".join(parts[: i + 1]) + "/" for i in range(len(parts))]


def tool_rules(repo: Path, file: str | None) -> dict[str, list[str]]:
    """Per tool, the rule files (real paths) it would load for a prompt naming `file`."""
    files = set(files_of(repo))
    visible = [path for path in sorted(files) if not _hidden(path)]
    loads = {
        "cursor": _cursor(repo, visible, file),
        "claude": _claude(repo, visible, files, file),
        "agents": [p for p in visible if _name(p) == "AGENTS.md" and _folder(p) in _folders(file)],
        "copilot": _copilot(repo, visible, file),
        "windsurf": _windsurf(repo, visible, file),
    }
    return {tool: _unique([real(repo, p) for p in paths]) for tool, paths in loads.items()}


def _name(path: str) -> str:
    return path.rsplit("/", 1)[-1]


def _folder(path: str) -> str:
    return path[: -len(_name(path))]


def _meta(repo: Path, path: str) -> dict[str, str | list[str]]:
    return front((repo / path).read_text(encoding="utf-8"))[0]


def _cursor(repo: Path, visible: list[str], file: str | None) -> list[str]:
    loads = [p for p in visible if p == ".cursorrules"]
    for path in visible:
        if path.startswith(".cursor/rules/") and path.endswith((".mdc", ".md")):
            meta = _meta(repo, path)
            globs = patterns(meta.get("globs"))
            if meta.get("alwaysApply") == "true" or (
                file is not None and any(_cursor_match(g, file) for g in globs)
            ):
                loads.append(path)
    return loads


def _claude(repo: Path, visible: list[str], files: set[str], file: str | None) -> list[str]:
    loads = []
    for path in visible:
        if path in ("CLAUDE.md", ".claude/CLAUDE.md") or (
            _name(path) == "CLAUDE.md" and _folder(path) in _folders(file)
        ):
            loads.extend([path, *_imports(repo, path, files)])
        elif path.startswith(".claude/rules/") and path.endswith(".md"):
            paths = patterns(_meta(repo, path).get("paths"))
            if not paths or (file is not None and any(glob_match(p, file) for p in paths)):
                loads.append(path)
    return loads


def _copilot(repo: Path, visible: list[str], file: str | None) -> list[str]:
    loads = [p for p in visible if p == ".github/copilot-instructions.md"]
    for path in visible:
        if path.startswith(".github/instructions/") and path.endswith(".instructions.md"):
            apply = patterns(_meta(repo, path).get("applyTo"))
            if any(p in ("*", "**", "**/*") for p in apply) or (
                file is not None and any(_copilot_match(p, file) for p in apply)
            ):
                loads.append(path)
    return loads


def _windsurf(repo: Path, visible: list[str], file: str | None) -> list[str]:
    loads = [p for p in visible if p == ".windsurfrules"]
    for path in visible:
        if path.startswith(".windsurf/rules/") and path.endswith(".md"):
            meta = _meta(repo, path)
            globs = patterns(meta.get("globs"))
            if meta.get("trigger") == "always_on" or (
                meta.get("trigger") == "glob"
                and file is not None
                and any(_cursor_match(g, file) for g in globs)
            ):
                loads.append(path)
    return loads


def _imports(repo: Path, path: str, files: set[str], depth: int = 0) -> list[str]:
    """The files a `CLAUDE.md` pulls in with `@path`, as Claude Code expands them."""
    if depth > 4:
        return []
    found = []
    folder = path.rsplit("/", 1)[0] + "/" if "/" in path else ""
    body = (repo / path).read_text(encoding="utf-8")
    for word in re.findall(r"(?:^|\s)@([\w./-]+)", body):
        target = os.path.normpath(folder + word).replace(os.sep, "/")
        if target in files:
            found.extend([target, *_imports(repo, target, files, depth + 1)])
    return found


def _unique(items: list[str]) -> list[str]:
    return list(dict.fromkeys(items))


def body_chars(repo: Path, path: str) -> int:
    """What a tool adds for a rule file: its text after the frontmatter."""
    return len(front((repo / path).read_text(encoding="utf-8"))[1].strip())


# --- what Keel delivers ---------------------------------------------------------------

_BLOCK = re.compile(r'^<context name="([^"]+)"', re.MULTILINE)
_STUB = re.compile(r'^<context-stub name="([^"]+)"', re.MULTILINE)
_CATALOG = re.compile(r"<context-catalog>.*?</context-catalog>", re.DOTALL)


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptResult:
    prompt: str
    file: str | None
    expected: dict[str, list[str]]  # per tool, the rules it would load
    delivered: list[str]  # contexts sent whole
    stubbed: list[str]  # contexts sent as a stub line
    covered: list[str]  # expected rules a context sent whole stands for
    stubbed_rules: list[str]  # expected rules only a stub stands for
    missing: list[str]  # expected rules nothing sent stands for
    twice: list[str]  # rules two sent contexts stand for, or a context sent twice
    always_stubbed: list[str]  # always-on contexts sent as stubs
    extra: list[str]  # contexts sent whole that stand for no expected rule
    keel_chars: int  # the hook's added context, without its catalog block
    catalog_chars: int
    tools_chars: int  # what the tools would add, each tool's set counted
    union_chars: int  # the distinct rule files among them, each counted once

    @property
    def expected_rules(self) -> list[str]:
        return _unique([r for tool in TOOLS for r in self.expected[tool]])

    def to_json(self) -> dict[str, Any]:
        return {
            "prompt": self.prompt,
            "file": self.file,
            "expected": {t: r for t, r in self.expected.items() if r},
            "delivered": self.delivered,
            "stubbed": self.stubbed,
            "covered": self.covered,
            "stubbed_rules": self.stubbed_rules,
            "missing": self.missing,
            "twice": self.twice,
            "always_stubbed": self.always_stubbed,
            "extra": self.extra,
            "keel_chars": self.keel_chars,
            "catalog_chars": self.catalog_chars,
            "tools_chars": self.tools_chars,
            "union_chars": self.union_chars,
        }


@dataclass(frozen=True, slots=True, kw_only=True)
class RepoResult:
    repo: str
    rule_files: int
    seen: dict[str, int]  # fate -> files
    unaccounted: list[str]  # rule files the import's report does not list
    prompts: list[PromptResult] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {
            "repo": self.repo,
            "rule_files": self.rule_files,
            "seen": self.seen,
            "unaccounted": self.unaccounted,
            "prompts": [p.to_json() for p in self.prompts],
        }


def copy_repo(name: str, into: Path) -> Path:
    """A copy of corpus repository `name` under `into`, links kept as links."""
    target = into / name
    shutil.copytree(CORPUS / name, target, symlinks=True)
    return target


def measure_repo(name: str, workdir: Path) -> RepoResult:
    """Import corpus repository `name` into a new brain under `workdir` and ask the hook
    each of its prompts, in a new session each."""
    from keel.brain.scaffold import scaffold_files
    from keel.importers import import_rules

    repo = copy_repo(name, workdir)
    brain = workdir / f"{name}-brain"
    for rel, content in scaffold_files(name).items():
        (brain / rel).parent.mkdir(parents=True, exist_ok=True)
        (brain / rel).write_text(content, encoding="utf-8")
    report = import_rules(repo, brain, role=ROLE)
    sources: dict[str, set[str]] = {}
    always: set[str] = set()
    for rule in report.rules:
        sources[rule.context] = {real(repo, s) for s in (rule.source, *rule.also)}
        if "always" in rule.when:
            always.add(rule.context)
    seen_paths = {s.path for s in report.seen}
    fates: dict[str, int] = {}
    for s in report.seen:
        fates[s.fate] = fates.get(s.fate, 0) + 1
    rules = rule_files(repo)
    unaccounted = [f for f in rules if f not in seen_paths]
    results = [
        compare(repo, prompt, answer_text, sources, always)
        for prompt, answer_text in zip(PROMPTS[name], _ask(brain, name), strict=True)
    ]
    return RepoResult(
        repo=name, rule_files=len(rules), seen=fates, unaccounted=unaccounted, prompts=results
    )


def _ask(brain: Path, name: str) -> Iterator[str]:
    """The hook's added context for each prompt of `name`, each in a new session."""
    from keel.link.values import Conversation
    from keel.mcp.hook import HookInput, answer
    from keel.mcp.room import Room
    from keel.runtime.engine import Engine

    room = Room(conversation=Conversation(bot="cli", chat="cli"), role=ROLE)
    engine = Engine(brain, None, watch=False)
    try:
        for i, prompt in enumerate(PROMPTS[name]):
            payload = HookInput(
                session_id=f"corpus-{name}-{i}",
                hook_event_name="UserPromptSubmit",
                prompt=prompt.text,
            )
            said = answer(engine, room, payload)
            yield said.text
    finally:
        engine.close()


def compare(
    repo: Path, prompt: Prompt, text: str, sources: dict[str, set[str]], always: set[str]
) -> PromptResult:
    """What the hook's added context `text` sent of the rules the tools would load for
    `prompt`; `sources` gives each context's rule files, `always` the always-on ones."""
    expected = tool_rules(repo, prompt.file)
    wanted = _unique([r for tool in TOOLS for r in expected[tool]])
    catalog = "".join(_CATALOG.findall(text))
    sent = _BLOCK.findall(text)
    stubs = _STUB.findall(text)
    covered = [r for r in wanted if any(r in sources.get(c, ()) for c in sent)]
    stubbed_rules = [
        r for r in wanted if r not in covered and any(r in sources.get(c, ()) for c in stubs)
    ]
    missing = [r for r in wanted if r not in covered and r not in stubbed_rules]
    twice = sorted({c for c in sent if sent.count(c) > 1})
    twice += [r for r in wanted if sum(r in sources.get(c, ()) for c in set(sent)) > 1]
    extra = [c for c in _unique(sent) if not sources.get(c, set()) & set(wanted)]
    return PromptResult(
        prompt=prompt.text,
        file=prompt.file,
        expected=expected,
        delivered=_unique(sent),
        stubbed=_unique(stubs),
        covered=covered,
        stubbed_rules=stubbed_rules,
        missing=missing,
        twice=twice,
        always_stubbed=[c for c in _unique(stubs) if c in always],
        extra=extra,
        keel_chars=len(text) - len(catalog),
        catalog_chars=len(catalog),
        tools_chars=sum(body_chars(repo, r) for tool in TOOLS for r in expected[tool]),
        union_chars=sum(body_chars(repo, r) for r in wanted),
    )
