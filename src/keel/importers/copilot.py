"""GitHub Copilot's instructions: `.github/copilot-instructions.md` and `*.instructions.md`.

- `.github/copilot-instructions.md`: every request → `when: [always]`.
- `applyTo: "**"` (or `*`, `**/*`): every request, files or not → `when: [always]`.
- `applyTo: "src/**/*.ts, **/*.tsx"`: when a matching file is in use → `when: [ask]` and
  `match` on the globs.
- no `applyTo` but a `description`: when the agent picks it → `when: [ask]`, the
  description as its catalog line.
- neither: when someone attaches it by hand → `when: [ask]`, a generated description.

`applyTo` is one comma-separated text, split as VS Code splits it (commas inside `{}` stay);
its globs are read as VS Code reads them (see `keel.importers.globs`, dialect `copilot`).
A YAML list is accepted with a warning, and so is a pattern starting with `/`, which VS Code
matches against absolute paths (where it matches nothing) and this import anchors at the
repository root.
"""

from __future__ import annotations

from pathlib import Path

from keel.importers.frontmatter import Unmappable, read_source
from keel.importers.globs import COPILOT_EVERYTHING
from keel.importers.ids import slug
from keel.importers.rules import (
    Mapped,
    Notes,
    Notice,
    Rule,
    Trigger,
    describe,
    title_of,
)

KEYS = ("applyTo", "description", "name", "excludeAgent", "model", "tools")
REPOSITORY_WIDE = ".github/copilot-instructions.md"


def map_copilot(root: Path, path: str) -> Mapped:
    """One Copilot instructions file as one rule."""
    try:
        doc = read_source(root, path)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    notes = Notes(doc)
    notes.lenient("copilot")
    rule = _repository_wide(notes) if path == REPOSITORY_WIDE else _instructions(notes)
    return Mapped(rules=(rule,), warnings=tuple(notes.found))


def _repository_wide(notes: Notes) -> Rule:
    if notes.doc.front:
        notes.warn(
            "copilot-instructions.md applies to every request; its frontmatter is ignored",
            line=2,
        )
    return Rule(
        source=notes.doc.path,
        tool="copilot",
        name="copilot-instructions",
        trigger="always",
        body=notes.doc.body,
    )


def _instructions(notes: Notes) -> Rule:
    doc = notes.doc
    notes.foreign("copilot", KEYS)
    inner = doc.path.removeprefix(".github/instructions/").removesuffix(".instructions.md")
    globs = _apply_to(notes)
    given = notes.text("description")
    trigger: Trigger
    if any(p.strip() in COPILOT_EVERYTHING for p in globs):
        trigger, globs = "always", ()
    else:
        trigger = "glob" if globs else "description" if given is not None else "manual"
    description = describe(
        notes,
        tool="copilot",
        trigger=trigger,
        given=given,
        title=title_of(doc.body, inner),
        globs=globs,
        manual="attached by hand",
    )
    return Rule(
        source=doc.path,
        tool="copilot",
        name=slug("copilot", *inner.split("/")),
        trigger=trigger,
        body=doc.body,
        description=description,
        dialect="copilot" if globs else None,
        globs=globs,
    )


def _apply_to(notes: Notes) -> tuple[str, ...]:
    """`applyTo`'s patterns, with warnings for what VS Code would read otherwise."""
    if isinstance(notes.doc.front.get("applyTo"), list):
        notes.warn(
            "applyTo is a YAML list; VS Code reads one comma-separated text — read as the "
            'list\'s patterns; write applyTo: "a/**, b/**" to be sure',
            key="applyTo",
        )
    globs = notes.globs("applyTo", "copilot", split_lists=True)
    for pattern in globs:
        if pattern.lstrip("!").startswith("/"):
            notes.warn(
                f"applyTo pattern {pattern!r} starts with '/': VS Code matches it against "
                "absolute paths, where it matches nothing; this import anchors it at the "
                "repository root — drop the leading '/'",
                key="applyTo",
            )
    return globs
