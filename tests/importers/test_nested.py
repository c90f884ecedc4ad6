"""A sub-project's tool folders (`api/.github/`, `api/.cursorrules`, `api/.claude/`) apply to it."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest

from keel.brain import load_brain
from keel.code import load_context_code
from keel.doctor import run_doctor
from keel.importers import ImportReport, import_rules
from tests.importers.conftest import WriteTree

SUB_PROJECT: dict[str, str | bytes] = {
    "api/.cursorrules": "Cursor legacy rules of the API.\n",
    "api/.windsurfrules": "Windsurf legacy rules of the API.\n",
    "api/.github/copilot-instructions.md": "Copilot rules of the API.\n",
    "api/.github/instructions/py.instructions.md": "---\napplyTo: '*.py'\n---\nPython.\n",
    "api/.claude/rules/sec.md": "---\npaths:\n  - src/auth/**\n---\nSecurity.\n",
    "api/.claude/skills/deploy/SKILL.md": "---\ndescription: Deploy the API.\n---\nRun it.\n",
    "api/.claude/skills/deploy/scripts/run.sh": "echo run\n",
    "api/src/auth/login.py": "",
    "AGENTS.md": "Root rules.\n",
}

# context id, its globs, an input naming a file inside the sub-project, one outside it
SCOPED = [
    ("cursorrules-api", ("/api/**",), "api/main.py", "web/main.py"),
    ("windsurfrules-api", ("/api/**",), "api/main.py", "main.py"),
    ("copilot-instructions-api", ("/api/**",), "api/x/y.ts", "x/y.ts"),
    ("copilot-py-api", ("/api/**/*.py",), "api/src/auth/login.py", "web/login.py"),
    ("claude-rule-sec-api", ("/api/src/auth/**",), "api/src/auth/login.py", "src/auth/login.py"),
]


@pytest.fixture
def report(repo: WriteTree, brain: Path) -> ImportReport:
    return import_rules(repo(SUB_PROJECT), brain)


def test_each_nested_tool_file_becomes_a_context_for_its_folder(report: ImportReport) -> None:
    rules = {r.context: r for r in report.rules}
    assert set(rules) == {
        "agents-md",
        "claude-skill-deploy-api",
        *(ident for ident, _, _, _ in SCOPED),
    }
    for ident, globs, _, _ in SCOPED:
        assert (rules[ident].trigger, rules[ident].globs) == ("glob", globs), ident
    assert rules["cursorrules-api"].source == "api/.cursorrules"
    assert rules["agents-md"].when == ("always",)


@pytest.mark.parametrize(
    ("ident", "globs", "inside", "outside"), SCOPED, ids=[s[0] for s in SCOPED]
)
@pytest.mark.usefixtures("report")
def test_the_generated_code_links_inside_the_folder_only(
    brain: Path, ident: str, globs: tuple[str, ...], inside: str, outside: str
) -> None:
    path = brain / f"features/repo/{ident}.context.py"
    assert all(repr(g)[1:-1] in path.read_text(encoding="utf-8") for g in globs)
    code = load_context_code(brain.resolve(), f"features/repo/{ident}.context.py")
    assert code.match is not None
    assert code.match(SimpleNamespace(input=f"look at {inside}")) == {}
    assert code.match(SimpleNamespace(input=f"look at {outside}")) is None


def test_a_nested_skill_names_its_files_by_their_place_in_the_tree(
    report: ImportReport, brain: Path
) -> None:
    skill = load_brain(brain).contexts["claude-skill-deploy-api"]
    assert "api/.claude/skills/deploy/scripts/run.sh" in skill.instructions
    seen = {s.path: (s.fate, s.context) for s in report.seen}
    assert seen["api/.claude/skills/deploy/scripts/run.sh"] == ("named", "claude-skill-deploy-api")


def test_every_nested_file_is_accounted_and_the_brain_passes_doctor(
    report: ImportReport, brain: Path
) -> None:
    rule_files = {p for p in SUB_PROJECT if not p.startswith("api/src/")}
    assert {s.path for s in report.seen} == rule_files
    assert all(s.fate in ("imported", "named") for s in report.seen)
    findings = run_doctor(load_brain(brain), schema=None).findings
    assert [f.message for f in findings if f.level == "fail"] == []


def test_a_nested_file_s_warnings_name_it_by_its_place(repo: WriteTree, brain: Path) -> None:
    source = repo({"api/.claude/rules/x.md": "---\nglobs: '*.py'\n---\nX.\n"})
    report = import_rules(source, brain)
    assert [w.path for w in report.warnings if "'globs'" in w.message] == ["api/.claude/rules/x.md"]
