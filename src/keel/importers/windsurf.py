"""Windsurf's rules: `.windsurf/rules/**/*.md` by their `trigger`, and `.windsurfrules`.

- `always_on`: every message → `when: [always]`.
- `model_decision`: when the model picks it by its description → `when: [ask]`, the
  description as its catalog line.
- `glob`: when a file matching `globs` is in use → `when: [ask]` and `match` on the globs.
- `manual`: when someone @-mentions it → `when: [ask]`, a generated description.
- no trigger → `when: [ask]`, with a warning.
- `.windsurfrules` (legacy, at the root): every message → `when: [always]`.

A `.windsurf/rules/` folder below the root (`backend/.windsurf/rules/`) applies to its own
folder, as Cursor's does: its always-on rules link for files under `backend/`, its globs
are read from there.

A `trigger` Windsurf does not know keeps the file out (with the nearest real one). `globs`
is a comma-separated text or a list, read like Cursor's (see `keel.importers.globs`).
Windsurf reads only the first 12,000 characters of a rule; a longer one is imported whole,
with a warning.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
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

KEYS = ("trigger", "description", "globs")
TRIGGERS: Mapping[str, Trigger] = {
    "always_on": "always",
    "model_decision": "description",
    "glob": "glob",
    "manual": "manual",
}
WINDSURF_LIMIT = 12_000


def map_windsurf(root: Path, path: str) -> Mapped:
    """One `.windsurf/rules/` file as one rule."""
    try:
        doc = read_source(root, path)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    written = doc.front.get("trigger")
    if written is not None and (not isinstance(written, str) or written not in TRIGGERS):
        return Mapped(skipped=(_unknown(doc.path, written, doc.line("trigger")),))
    notes = Notes(doc)
    notes.lenient("windsurf")
    notes.foreign("windsurf", KEYS)
    parts = path.split("/")
    at = len(parts) - 1 - parts[::-1].index(".windsurf")
    stem = parts[-1].removesuffix(".md")
    folder = "/".join(parts[:at])
    trigger, globs = _scoped(folder, *_trigger(notes, written))
    given = notes.text("description")
    title = title_of(doc.body, stem)
    if given is None and trigger == "glob" and written == "always_on":
        given = generated_description("windsurf", path, title, f"for files under {folder}/")
    if given is None and trigger == "description":
        notes.warn(
            "trigger: model_decision without a description — the model has nothing to decide "
            "by; a description was generated, write one in the source",
            key="trigger",
        )
        given = generated_description("windsurf", path, title, "picked by the model")
    description = describe(
        notes,
        tool="windsurf",
        trigger=trigger,
        given=given,
        title=title,
        globs=globs,
        manual=f"applied by @{stem}",
    )
    if len(doc.body) > WINDSURF_LIMIT:
        notes.warn(
            f"{len(doc.body)} characters — Windsurf reads only the first {WINDSURF_LIMIT:,}; "
            "the whole text is imported",
        )
    rule = Rule(
        source=path,
        tool="windsurf",
        name=slug("windsurf", *parts[:at], *parts[at + 2 : -1], stem),
        trigger=trigger,
        body=doc.body,
        description=description,
        dialect="windsurf" if globs else None,
        globs=globs,
    )
    return Mapped(rules=(rule,), warnings=tuple(notes.found))


def _scoped(
    folder: str, trigger: Trigger, globs: tuple[str, ...]
) -> tuple[Trigger, tuple[str, ...]]:
    """A subfolder's rule as applying to that folder: always-on for the files under it,
    its globs read from it; the root's rules as they are."""
    if not folder:
        return trigger, globs
    if trigger == "always":
        return "glob", (f"/{escape(folder)}/**",)
    return trigger, tuple(within(folder, g) for g in globs)


def _unknown(path: str, written: object, line: int | None) -> Notice:
    near = difflib.get_close_matches(str(written), list(TRIGGERS), n=1, cutoff=0.6)
    hint = f" — did you mean '{near[0]}'?" if near else ""
    return Notice(
        path=path,
        message=f"unknown trigger {written!r}{hint} Windsurf reads always_on, model_decision, "
        "glob or manual, so it never applies this rule — fix the trigger, then re-run",
        line=line,
    )


def _trigger(notes: Notes, written: object) -> tuple[Trigger, tuple[str, ...]]:
    """The rule's trigger and globs, as Windsurf would apply them."""
    if not isinstance(written, str):
        notes.warn(
            "no trigger — imported as manual (an ask context); set trigger: always_on, "
            "model_decision, glob or manual to say when it applies",
            line=1 if notes.doc.has_front else None,
        )
    trigger = TRIGGERS[written] if isinstance(written, str) else "manual"
    globs = notes.globs("globs", "windsurf")
    if trigger != "glob":
        # Windsurf writes an empty `globs:` into every rule it creates: no glob, no word.
        if globs:
            notes.warn(
                f"globs is set but trigger is {written} — ignored, as Windsurf ignores it",
                key="globs",
            )
        return trigger, ()
    if not globs:
        notes.warn(
            "trigger: glob without globs — Windsurf never applies it; imported as manual",
            key="trigger",
        )
        return "manual", ()
    return trigger, globs


def map_windsurfrules(root: Path, path: str) -> Mapped:
    """The legacy `.windsurfrules` file: one always-on rule."""
    try:
        doc = read_source(root, path, frontmatter=False)
    except Unmappable as exc:
        return Mapped(skipped=(Notice(path=path, message=exc.reason, line=exc.line),))
    rule = Rule(source=path, tool="windsurf", name="windsurfrules", trigger="always", body=doc.body)
    return Mapped(rules=(rule,))
