"""Empty globs are no globs, without a word; globs that hold nothing, or match nothing, are said."""

from __future__ import annotations

from pathlib import Path

import pytest

from keel.importers import import_rules
from keel.importers.cursor import map_cursor
from keel.importers.windsurf import map_windsurf
from tests.importers.conftest import WriteTree


@pytest.mark.parametrize(
    "globs",
    [
        pytest.param("globs:", id="bare"),
        pytest.param("globs: ''", id="empty-text"),
        pytest.param("globs: '   '", id="blank-text"),
        pytest.param("globs: []", id="empty-list"),
    ],
)
def test_an_empty_globs_key_beside_another_trigger_is_no_glob_and_no_warning(
    repo: WriteTree, globs: str
) -> None:
    # What Windsurf itself writes into every rule it creates.
    root = repo({".windsurf/rules/x.md": f"---\ntrigger: always_on\n{globs}\n---\nFixture.\n"})
    mapped = map_windsurf(root, ".windsurf/rules/x.md")
    (rule,) = mapped.rules
    assert (rule.trigger, rule.globs) == ("always", ())
    assert mapped.warnings == ()


def test_cursor_s_empty_keys_are_read_as_cursor_writes_them(repo: WriteTree) -> None:
    root = repo(
        {".cursor/rules/x.mdc": "---\ndescription:\nglobs:\nalwaysApply: true\n---\nFixture.\n"}
    )
    mapped = map_cursor(root, ".cursor/rules/x.mdc")
    (rule,) = mapped.rules
    assert (rule.trigger, rule.globs) == ("always", ())
    assert mapped.warnings == ()


@pytest.mark.parametrize(
    ("path", "front", "key"),
    [
        pytest.param(".cursor/rules/x.mdc", "globs: ','", "globs", id="cursor"),
        pytest.param(".windsurf/rules/x.md", "globs: ', ,'", "globs", id="windsurf"),
        pytest.param(
            ".github/instructions/x.instructions.md", "applyTo: [',', ' ']", "applyTo", id="copilot"
        ),
    ],
)
def test_globs_written_with_no_pattern_in_them_are_said(
    repo: WriteTree, brain: Path, path: str, front: str, key: str
) -> None:
    source = repo(
        {path: f"---\ndescription: D.\ntrigger: model_decision\n{front}\n---\nFixture.\n"}
    )
    report = import_rules(source, brain)
    (rule,) = report.rules
    assert (rule.trigger, rule.globs) == ("description", ())
    assert f"{path}:4: '{key}' holds no pattern — read as no globs" in map(str, report.warnings)


def test_a_glob_rule_whose_patterns_match_no_file_is_imported_and_said(
    repo: WriteTree, brain: Path
) -> None:
    source = repo(
        {
            ".cursor/rules/web.mdc": "---\nglobs: web/**/*.ts, wbe/**/*.tsx\n---\nFixture.\n",
            ".cursor/rules/gone.mdc": "---\nglobs: nowhere/**\n---\nFixture.\n",
            ".cursor/rules/ok.mdc": "---\nglobs: '**/*.ts'\n---\nFixture.\n",
            "web/src/app.ts": "",
        }
    )
    report = import_rules(source, brain)
    assert {r.source for r in report.rules} == {
        ".cursor/rules/gone.mdc",
        ".cursor/rules/ok.mdc",
        ".cursor/rules/web.mdc",
    }
    idle = {w.path: w.message for w in report.warnings if "no file in the repository" in w.message}
    assert set(idle) == {".cursor/rules/gone.mdc", ".cursor/rules/web.mdc"}
    assert idle[".cursor/rules/gone.mdc"].startswith(
        "its globs match no file in the repository: 'nowhere/**' (dependency, build and "
        "hidden folders not counted) — imported all the same"
    )
    assert idle[".cursor/rules/web.mdc"].startswith(
        "some of its globs match no file in the repository: 'wbe/**/*.tsx'"
    )


def test_files_in_skipped_folders_do_not_count_as_matches(repo: WriteTree, brain: Path) -> None:
    source = repo(
        {
            ".cursor/rules/deps.mdc": "---\nglobs: node_modules/**\n---\nFixture.\n",
            "node_modules/pkg/index.js": "",
        }
    )
    report = import_rules(source, brain)
    assert [w.path for w in report.warnings if "no file in the repository" in w.message] == [
        ".cursor/rules/deps.mdc"
    ]


def test_a_nested_rules_folder_s_globs_are_tried_from_its_folder(
    repo: WriteTree, brain: Path
) -> None:
    source = repo(
        {
            "api/.cursor/rules/sql.mdc": "---\nglobs: '*.sql'\n---\nFixture.\n",
            "api/db/schema.sql": "",
            "web/.cursor/rules/sql.mdc": "---\nglobs: '*.sql'\n---\nFixture.\n",
        }
    )
    report = import_rules(source, brain)
    assert [w.path for w in report.warnings if "no file in the repository" in w.message] == [
        "web/.cursor/rules/sql.mdc"
    ]
