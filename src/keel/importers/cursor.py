"""Cursor's rules: `.cursor/rules/**/*.mdc` (and `.md`, and `<name>/RULE.md`), `.cursorrules`.

Cursor picks a rule's mode from three frontmatter keys, and the import follows it:

- `alwaysApply: true`: every request → `when: [always]`.
- `globs` (not always): when a matching file is in use → `when: [ask]` and `match` on the
  globs.
- `description` only: when the agent asks for it → `when: [ask]`, the description as its
  catalog line.
- none of them: when someone types `@rule` → `when: [ask]`, a generated description.
- `.cursorrules` (legacy, at the root): every request → `when: [always]`.

A `.cursor/rules/` folder below the root (`backend/.cursor/rules/`) applies to its own
folder: its always-on rules link for files under `backend/`, its globs are read from there.

What Cursor accepts without a word is warned about and read as Cursor reads it: `globs`
as one comma-separated text; `alwaysApply: "true"` in quotes, which is text, not the
boolean, so the rule is not always-on; `alwaysApply: true` beside `globs`, where the globs
are ignored; unquoted `globs: *.ts`, which YAML refuses and Cursor reads line by line.
"""

from __future__ import annotations

from pathlib import Path

from keel.importers.frontmatter import Unmappable, read_source
from keel.importers.globs import escape, within
from keel.importers.ids import slug
from keel.importers.rules import (
    Mapped,
    Notes,
    Notice,
    Rule,
    Trigger,
    describe,
    generated_description,
    title_of,
)

KEYS = ("description", "globs", "alwaysApply")


def map_cursor(root: Path, path: str) -> Mapped:
    """One `.mdc`/`.md` file of a `.cursor/rules/` folder as one rule."""
    try:
        doc = read_source(root, path)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    notes = Notes(doc)
    notes.lenient("cursor")
    notes.foreign("cursor", KEYS)
    folder, name, mention = _place(path)
    given = notes.text("description")
    globs = notes.globs("globs", "cursor")
    if isinstance(doc.front.get("globs"), str) and len(globs) > 1:
        notes.warn(
            f"globs is one comma-separated text; Cursor reads it as {len(globs)} patterns "
            f"({', '.join(globs)}), and so does this import — a YAML list says it plainly",
            key="globs",
        )
    trigger, patterns = _mode(notes, folder, globs, given)
    title = title_of(doc.body, mention)
    if given is None and trigger == "glob" and not globs:
        given = generated_description("cursor", path, title, f"for files under {folder}/")
    description = describe(
        notes,
        tool="cursor",
        trigger=trigger,
        given=given,
        title=title,
        globs=globs,
        manual=f"applied by @{mention}",
    )
    rule = Rule(
        source=path,
        tool="cursor",
        name=name,
        trigger=trigger,
        body=doc.body,
        description=description,
        dialect="cursor" if patterns else None,
        globs=patterns,
    )
    return Mapped(rules=(rule,), warnings=tuple(notes.found))


def _mode(
    notes: Notes, folder: str, globs: tuple[str, ...], description: str | None
) -> tuple[Trigger, tuple[str, ...]]:
    """Cursor's mode for the rule, and its globs anchored at the repository root."""
    if _always(notes):
        if globs:
            notes.warn(
                "alwaysApply: true and globs are both set — Cursor applies the rule to every "
                "request and ignores the globs, and so does this import; drop one of them",
                key="alwaysApply",
            )
        return ("glob", (f"/{escape(folder)}/**",)) if folder else ("always", ())
    if globs:
        return "glob", tuple(within(folder, g) for g in globs)
    return ("description" if description is not None else "manual"), ()


def map_cursorrules(root: Path, path: str, *, beside_rules: bool) -> Mapped:
    """The legacy `.cursorrules` file: one always-on rule."""
    try:
        doc = read_source(root, path, frontmatter=False)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    warnings: tuple[Notice, ...] = ()
    if beside_rules:
        warnings = (
            Notice(
                path=path,
                message=".cursorrules is Cursor's legacy file and .cursor/rules/ exists too; "
                "both are imported (.cursorrules as always-on) — fold it into .cursor/rules/ "
                "if they overlap",
            ),
        )
    rule = Rule(source=path, tool="cursor", name="cursorrules", trigger="always", body=doc.body)
    return Mapped(rules=(rule,), warnings=warnings)


def _place(path: str) -> tuple[str, str, str]:
    """The folder a rules folder applies to, the rule's id, and its `@` name."""
    parts = path.split("/")
    at = len(parts) - 1 - parts[::-1].index(".cursor")
    folder, sub = parts[:at], parts[at + 2 : -1]
    stem = parts[-1].rsplit(".", 1)[0]
    if stem.upper() == "RULE" and sub:
        stem, sub = sub[-1], sub[:-1]
    return "/".join(folder), slug("cursor", *folder, *sub, stem), stem


def _always(notes: Notes) -> bool:
    value = notes.doc.front.get("alwaysApply")
    if value is None or isinstance(value, bool):
        return value is True
    if isinstance(value, str) and value.strip().lower() == "true":
        notes.warn(
            f"alwaysApply is the text {value!r}, not the boolean true — Cursor does not treat "
            "the rule as always-on, and neither does this import; write alwaysApply: true "
            "without quotes if it should be",
            key="alwaysApply",
        )
    elif not isinstance(value, str) or value.strip().lower() != "false":
        notes.warn(
            f"alwaysApply is {value!r}, not true or false — read as false, as Cursor does",
            key="alwaysApply",
        )
    return False
