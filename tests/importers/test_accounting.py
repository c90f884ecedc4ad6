"""Every file the import looked at is accounted for: imported, named, excluded, skipped, refused."""

from __future__ import annotations

import json
import os
from pathlib import Path

from typer.testing import CliRunner

from keel.cli import app
from keel.importers import import_rules
from tests.importers.conftest import write_files

runner = CliRunner()
# Where the fixture keeps files that are no rules and lie outside every rule folder.
NOT_RULE_PLACES = {"README.md", "src/app.ts"}


def fixture_files(root: Path) -> set[str]:
    """Every file of the fixture a tool could read rules from, found without the importer."""
    found: set[str] = set()
    for folder, dirs, files in os.walk(root):
        dirs[:] = [d for d in dirs if d != "node_modules"]
        for name in files:
            found.add((Path(folder) / name).relative_to(root).as_posix())
    return found - NOT_RULE_PLACES


def test_every_file_of_the_fixture_has_one_fate(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain)
    paths = [s.path for s in report.seen]
    assert len(paths) == len(set(paths)), "one entry per file"
    assert set(paths) == fixture_files(shop)
    fates = {s.path: s for s in report.seen}
    for rule in report.rules:
        assert (fates[rule.source].fate, fates[rule.source].context) == ("imported", rule.context)
    for notice in report.skipped:
        assert (fates[notice.path].fate, fates[notice.path].reason) == ("skipped", notice.message)
    assert sum(s.fate == "imported" for s in report.seen) == len(report.rules)
    assert all(s.reason is None or "report this as a bug" not in s.reason for s in report.seen)


def test_a_file_beside_a_skill_is_named_by_the_skill_s_context(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain)
    (fill,) = [s for s in report.seen if s.path == ".claude/skills/pdf/scripts/fill.py"]
    assert (fill.fate, fill.context) == ("named", "claude-skill-pdf")


def test_a_refused_rule_names_the_brain_file_in_the_way(shop: Path, brain: Path) -> None:
    write_files(brain, {"features/shop/cursor-api.context.md": "---\nwhen: [always]\n---\nMine.\n"})
    report = import_rules(shop, brain)
    (api,) = [s for s in report.seen if s.path == ".cursor/rules/api.mdc"]
    assert (api.fate, api.context) == ("refused", None)
    assert api.reason == "features/shop/cursor-api.context.md could not be written"


def test_an_excluded_file_is_accounted_as_excluded(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain, excludes=["/.cursorrules", "pdf/"])
    fates = {s.path: s.fate for s in report.seen}
    assert set(fates) == fixture_files(shop)
    assert {p for p, f in fates.items() if f == "excluded"} == {
        ".cursorrules",
        ".claude/skills/pdf/SKILL.md",
        ".claude/skills/pdf/FORMS.md",
        ".claude/skills/pdf/scripts/fill.py",
    }


def test_a_rule_file_linking_to_another_is_skipped_with_the_reason(
    tmp_path: Path, brain: Path
) -> None:
    source = write_files(tmp_path / "repo", {"AGENTS.md": "Fixture.\n"})
    (source / "CLAUDE.md").symlink_to("AGENTS.md")
    report = import_rules(source, brain)
    fates = {s.path: (s.fate, s.context) for s in report.seen}
    assert fates == {"AGENTS.md": ("imported", "agents-md"), "CLAUDE.md": ("skipped", None)}


def test_the_terminal_and_json_carry_the_accounting(shop: Path, brain: Path) -> None:
    env = {"COLUMNS": "200", "NO_COLOR": "1"}
    out = runner.invoke(app, ["import", str(shop), str(brain)], env=env).output
    assert "source files: 40 — 32 imported, 1 named in a skill's context, 7 skipped\n" in out
    assert "  .claude/skills/pdf/scripts/fill.py → named in claude-skill-pdf\n" in out
    data = json.loads(runner.invoke(app, ["import", str(shop), str(brain), "--json"]).output)
    assert len(data["seen"]) == len(fixture_files(shop))
    assert {
        "path": ".cursor/rules/notes.txt",
        "fate": "skipped",
        "context": None,
        "reason": "Cursor reads only .mdc and .md files in .cursor/rules/ — not imported",
    } in data["seen"]


def test_an_unreadable_text_file_beside_a_skill_is_skipped_with_its_reason(
    tmp_path: Path, brain: Path
) -> None:
    source = write_files(
        tmp_path / "repo",
        {
            ".claude/skills/x/SKILL.md": "---\ndescription: D.\n---\nFixture.\n",
            ".claude/skills/x/empty.md": "",
        },
    )
    report = import_rules(source, brain)
    (empty,) = [s for s in report.seen if s.path == ".claude/skills/x/empty.md"]
    assert (empty.fate, empty.reason) == ("skipped", "the file is empty — nothing to import")
