"""Claude Code's rules: CLAUDE.md and AGENTS.md files, skills, and `.claude/rules/`.

- `CLAUDE.md`, `.claude/CLAUDE.md`, `AGENTS.md` at the root: loaded at launch, every
  session → `when: [always]`.
- `<folder>/CLAUDE.md`, `<folder>/AGENTS.md`: loaded when the agent works on files in
  `<folder>` → `when: [ask]` and `match` on `<folder>/**`.
- `.claude/skills/<name>/SKILL.md`: loaded when the agent picks it by its description →
  `when: [ask]`, the description as its catalog line; with `paths:`, only for matching
  files → `when: [ask]` and `match` on the paths.
- text files beside SKILL.md: read when the skill's text points to them → one `when: [ask]`
  context each, named (with how to open it) at the end of the skill's context.
- `.claude/rules/**/*.md`: loaded at launch → `when: [always]`; with `paths:`, for matching
  files → `when: [ask]` and `match` on the paths.

A skill without a description is listed by its body's first paragraph, as Claude Code
lists it. `paths:` follows Claude Code's documented format, anchored at the project root
(`*.md` is the root's Markdown only). CLAUDE.md's `@path` imports, which Claude Code
expands, are named in a warning: the import keeps them as text.
"""

from __future__ import annotations

import re
from pathlib import Path

from keel.importers.discovery import MEMORY_NAMES, Skill
from keel.importers.frontmatter import SourceFile, Unmappable, read_source
from keel.importers.globs import escape
from keel.importers.ids import slug
from keel.importers.rules import (
    TOOL_NAMES,
    Attachment,
    Mapped,
    Notes,
    Notice,
    Rule,
    Tool,
    Trigger,
    catalog_line,
    first_paragraph,
    generated_description,
    title_of,
)

SKILL_KEYS = (
    "name",
    "description",
    "when_to_use",
    "argument-hint",
    "arguments",
    "disable-model-invocation",
    "user-invocable",
    "allowed-tools",
    "disallowed-tools",
    "model",
    "effort",
    "context",
    "agent",
    "background",
    "hooks",
    "paths",
    "shell",
    "license",
    "metadata",
    "version",
    "compatibility",
)
RULE_KEYS = ("paths", "description")
TEXT_SUFFIXES = (".md", ".markdown", ".mdx", ".txt", ".rst")
_FENCE = re.compile(r"^\s*(```|~~~)")
_IMPORT = re.compile(r"(?<![\w@`/])@((?:~/|\.{1,2}/|/)?[\w.-]+(?:/[\w.-]+)*)")


def map_memory(root: Path, path: str) -> Mapped:
    """A CLAUDE.md or AGENTS.md: always-on at the root, for its own folder below it."""
    parts = path.split("/")
    tool: Tool = "claude" if MEMORY_NAMES[parts[-1]] == "claude" else "agents"
    try:
        doc = read_source(root, path, frontmatter=False)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    notes = Notes(doc)
    if tool == "claude":
        _imports(notes)
    scope = parts[:-1][:-1] if parts[:-1][-1:] == [".claude"] else parts[:-1]
    folder = "/".join(scope)
    name = slug("claude-md" if tool == "claude" else "agents-md", *parts[:-1])
    if not folder:
        rule = Rule(source=path, tool=tool, name=name, trigger="always", body=doc.body)
        return Mapped(rules=(rule,), warnings=tuple(notes.found))
    title = title_of(doc.body, f"{parts[-1]} of {folder}/")
    rule = Rule(
        source=path,
        tool=tool,
        name=name,
        trigger="glob",
        body=doc.body,
        description=generated_description(tool, path, title, f"for work under {folder}/"),
        dialect="claude",
        globs=(f"{escape(folder)}/**",),
    )
    return Mapped(rules=(rule,), warnings=tuple(notes.found))


def map_skill(root: Path, skill: Skill) -> Mapped:
    """A skill folder: SKILL.md as one ask context, each text file beside it as another."""
    path = f"{skill.folder}/SKILL.md"
    folder_name = skill.folder.rsplit("/", 1)[-1]
    try:
        doc = read_source(root, path)
    except Unmappable as exc:
        skipped = [Notice(path=path, message=exc.reason, line=exc.line)]
        skipped.extend(
            Notice(path=f, message=f"its skill's {path} was not imported, so neither is it")
            for f in skill.files
        )
        return Mapped(skipped=tuple(skipped))
    notes = Notes(doc)
    notes.lenient("claude")
    notes.foreign("claude", SKILL_KEYS)
    name = notes.text("name") or folder_name
    description = _skill_description(notes, doc, name)
    paths = notes.globs("paths", "claude")
    trigger: Trigger = "glob" if paths else "description"
    if doc.front.get("disable-model-invocation") is True:
        trigger = "glob" if paths else "manual"
        notes.warn(
            "disable-model-invocation: true — in Claude Code only a person can invoke it; "
            "Keel has no person-only contexts, so it is an ask context the agent may open "
            "(leave it out of a role's contexts: if the agent must not)",
            key="disable-model-invocation",
        )
    companions, attachments, left_out = _companions(root, skill, name)
    rule = Rule(
        source=path,
        tool="claude",
        name=slug("claude-skill", folder_name),
        trigger=trigger,
        body=doc.body,
        description=description,
        dialect="claude" if paths else None,
        globs=paths,
        attachments=attachments,
    )
    return Mapped(rules=(rule, *companions), warnings=tuple(notes.found), skipped=left_out)


def map_claude_rule(root: Path, path: str) -> Mapped:
    """A `.claude/rules/` file: always-on, or for the files its `paths:` match."""
    try:
        doc = read_source(root, path)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    notes = Notes(doc)
    notes.lenient("claude")
    notes.foreign("claude", RULE_KEYS)
    parts = path.split("/")[2:]
    stem = parts[-1].removesuffix(".md")
    name = slug("claude-rule", *parts[:-1], stem)
    paths = notes.globs("paths", "claude")
    description = notes.text("description")
    if description is not None:
        description = catalog_line(description, notes)
    if not paths:
        rule = Rule(
            source=path,
            tool="claude",
            name=name,
            trigger="always",
            body=doc.body,
            description=description,
        )
        return Mapped(rules=(rule,), warnings=tuple(notes.found))
    title = title_of(doc.body, stem)
    how = f"for files matching {', '.join(paths)}"
    rule = Rule(
        source=path,
        tool="claude",
        name=name,
        trigger="glob",
        body=doc.body,
        description=description or generated_description("claude", path, title, how),
        dialect="claude",
        globs=paths,
    )
    return Mapped(rules=(rule,), warnings=tuple(notes.found))


def _skill_description(notes: Notes, doc: SourceFile, name: str) -> str:
    description = notes.text("description")
    if description is None:
        notes.warn(
            "no description: Claude Code lists the skill by its first paragraph, and so does "
            "this import — add a description saying what it is for and when to use it",
            line=1 if doc.has_front else None,
        )
        description = first_paragraph(doc.body) or f"The {name} skill ({doc.path})"
    when = notes.text("when_to_use")
    return catalog_line(f"{description} {when}" if when else description, notes)


def _companions(
    root: Path, skill: Skill, name: str
) -> tuple[tuple[Rule, ...], tuple[Attachment, ...], tuple[Notice, ...]]:
    rules: list[Rule] = []
    attachments: list[Attachment] = []
    skipped: list[Notice] = []
    folder_name = skill.folder.rsplit("/", 1)[-1]
    for path in skill.files:
        inner = path[len(skill.folder) + 1 :]
        if not inner.lower().endswith(TEXT_SUFFIXES):
            attachments.append(Attachment(path=path))
            continue
        try:
            doc = read_source(root, path, frontmatter=False)
        except Unmappable as exc:
            skipped.append(Notice(path=path, message=exc.reason, line=exc.line))
            attachments.append(Attachment(path=path))
            continue
        stem = inner.rsplit(".", 1)[0]
        title = title_of(doc.body, inner)
        rules.append(
            Rule(
                source=path,
                tool="claude",
                name=slug("claude-skill", folder_name, *stem.split("/")),
                trigger="description",
                body=doc.body,
                description=catalog_line(f"{title} — part of the {name} skill ({path})"),
            )
        )
        attachments.append(Attachment(path=path, source=path))
    return tuple(rules), tuple(attachments), tuple(skipped)


def _imports(notes: Notes) -> None:
    """Warn about `@path` imports outside code, which Claude Code would expand."""
    found: list[tuple[int, str]] = []
    fenced = False
    for number, line in enumerate(notes.doc.body.splitlines(), start=1):
        if _FENCE.match(line):
            fenced = not fenced
            continue
        if fenced:
            continue
        prose = re.sub(r"`[^`]*`", "", line)
        found.extend((number, m.group(1)) for m in _IMPORT.finditer(prose) if _pathy(m.group(1)))
    if found:
        names = ", ".join(f"@{p}" for _, p in found)
        notes.warn(
            f"{TOOL_NAMES['claude']} expands @-imports into CLAUDE.md ({names}); Keel keeps "
            "them as text — import those files too (e.g. as .claude/rules/) or paste them in",
            line=notes.doc.body_line + found[0][0] - 1,
        )


def _pathy(text: str) -> bool:
    return "/" in text or "." in text.strip(".")
