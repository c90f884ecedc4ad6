"""The corpus of real rule trees stays importable and accounted for.

Each repository of `tests/fixtures/agent_rules/` is imported into a new brain with
`--role coder`, and the prompt hook is asked each of its prompts (`corpus.PROMPTS`, the
set `bench/agent_rules.py` measures) in a new session: every rule file is in the import's
report, no rule is sent twice, every rule a tool would load reaches the turn (whole or as
a stub), and no always-on rule is stubbed. The tool models the comparison rests on are
checked against rules whose loading the tools document.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from tests.importers.corpus import (
    CORPUS,
    PROMPTS,
    RepoResult,
    compare,
    measure_repo,
    repos,
    tool_rules,
)


# Always-on rules that the hook stubs today, though the tool loads them whole: each is a
# known defect of delivery (see the report of bench/agent_rules.py), and the mark fails
# the test once it is fixed, so that the mark goes too.
@pytest.fixture(scope="module")
def measured(tmp_path_factory: pytest.TempPathFactory) -> Callable[[str], RepoResult]:
    """Each repository measured once per test process, when a test first asks for it."""
    workdir = tmp_path_factory.mktemp("corpus")
    done: dict[str, RepoResult] = {}

    def of(name: str) -> RepoResult:
        if name not in done:
            done[name] = measure_repo(name, workdir)
        return done[name]

    return of


def test_every_corpus_repository_has_prompts_a_licence_and_a_source() -> None:
    folders = sorted(p.name for p in CORPUS.iterdir() if p.is_dir())
    assert folders == repos()
    sources = (CORPUS / "SOURCES.md").read_text(encoding="utf-8")
    for name in folders:
        assert (CORPUS / name / "LICENSE").is_file(), name
        assert f"`{name}/`" in sources, name
        for prompt in PROMPTS[name]:
            if prompt.file is not None:
                assert (CORPUS / name / prompt.file).is_file(), prompt.file
        assert any(p.file is None for p in PROMPTS[name]), name


@pytest.mark.parametrize("name", repos())
def test_every_rule_file_is_accounted_for(measured: Callable[[str], RepoResult], name: str) -> None:
    result = measured(name)
    assert result.rule_files > 1
    assert result.unaccounted == []


@pytest.mark.parametrize("name", repos())
def test_no_rule_is_sent_twice(measured: Callable[[str], RepoResult], name: str) -> None:
    for prompt in measured(name).prompts:
        assert prompt.twice == [], prompt.prompt


@pytest.mark.parametrize("name", repos())
def test_every_rule_a_tool_loads_reaches_the_turn(
    measured: Callable[[str], RepoResult], name: str
) -> None:
    for prompt in measured(name).prompts:
        assert prompt.expected_rules, prompt.prompt
        assert prompt.missing == [], prompt.prompt
        assert prompt.extra == [], prompt.prompt


@pytest.mark.parametrize("name", repos())
def test_no_rule_a_tool_would_load_is_stubbed(
    measured: Callable[[str], RepoResult], name: str
) -> None:
    # The import sizes the role for every always-on and file rule at once, each whole: a
    # rule larger than the brain's turnChars (trigger.dev's and browser-use's AGENTS.md) and
    # five file rules matching one file (trigger.dev) once had always-on rules stubbed.
    for prompt in measured(name).prompts:
        assert (prompt.always_stubbed, prompt.stubbed_rules) == ([], []), prompt.prompt


# --- the tool models ------------------------------------------------------------------


def test_cursor_loads_always_rules_and_matching_globs_not_description_only_ones() -> None:
    repo = CORPUS / "trigger.dev"
    task = tool_rules(repo, "references/hello-world/src/trigger/example.ts")["cursor"]
    assert ".cursor/rules/writing-tasks.mdc" in task  # `**/trigger/**/*.ts, ...`
    assert ".cursor/rules/otel-metrics.mdc" in task  # a YAML list: `**/*.ts`
    assert ".cursor/rules/repo.mdc" in task  # alwaysApply: true
    assert ".cursor/rules/migrations.mdc" not in task  # a description only
    assert ".cursor/rules/webapp.mdc" not in task  # apps/webapp/** only
    none = tool_rules(repo, None)["cursor"]
    assert ".cursor/rules/otel-metrics.mdc" not in none


def test_claude_code_loads_folder_claude_md_imports_and_matching_rules() -> None:
    repo = CORPUS / "trigger.dev"
    claude = tool_rules(repo, "internal-packages/database/prisma/schema.prisma")["claude"]
    assert "CLAUDE.md" in claude
    assert "AGENTS.md" in claude  # the root CLAUDE.md is `@AGENTS.md`
    assert "internal-packages/database/CLAUDE.md" in claude
    assert ".claude/rules/database-safety.md" in claude
    assert ".claude/rules/docs-writing.md" not in claude
    assert not any(path.startswith(".claude/skills/") for path in claude)


def test_linked_rule_files_are_the_rule_they_link_to() -> None:
    loads = tool_rules(CORPUS / "langfuse", "web/src/features/evals/v2/router.ts")
    assert loads["claude"] == loads["agents"]
    assert loads["agents"] == [
        ".agents/AGENTS.md",
        "web/AGENTS.md",
        "web/src/features/evals/AGENTS.md",
        "web/src/features/evals/v2/AGENTS.md",
    ]


def test_the_corpus_stays_small() -> None:
    total = sum(p.lstat().st_size for p in Path(CORPUS).rglob("*"))
    assert total < 1_000_000


def test_copilot_and_windsurf_models(tmp_path: Path) -> None:
    rules = {
        ".github/copilot-instructions.md": "Always.",
        ".github/instructions/ts.instructions.md": '---\napplyTo: "src/*.TS"\n---\nTypes.',
        ".github/instructions/all.instructions.md": '---\napplyTo: "**"\n---\nEverywhere.',
        ".windsurfrules": "Legacy.",
        ".windsurf/rules/on.md": "---\ntrigger: always_on\n---\nOn.",
        ".windsurf/rules/py.md": "---\ntrigger: glob\nglobs: '*.py'\n---\nPython.",
        ".windsurf/rules/ask.md": "---\ntrigger: model_decision\ndescription: x\n---\nAsk.",
    }
    for rel, text in rules.items():
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text(text, encoding="utf-8")
    nested = tool_rules(tmp_path, "pkg/src/a.ts")
    assert nested["copilot"] == [
        ".github/copilot-instructions.md",
        ".github/instructions/all.instructions.md",
        ".github/instructions/ts.instructions.md",  # `**/` in front, case ignored
    ]
    assert nested["windsurf"] == [".windsurfrules", ".windsurf/rules/on.md"]
    assert tool_rules(tmp_path, "deep/x.py")["windsurf"] == [
        ".windsurfrules",
        ".windsurf/rules/on.md",
        ".windsurf/rules/py.md",  # a name without `/` matches at any depth
    ]


def test_a_rule_two_sent_contexts_stand_for_is_counted_twice_and_a_stub_is_no_send() -> None:
    repo = CORPUS / "graphiti"
    prompt = PROMPTS["graphiti"][-1]
    text = '<context name="a">\nx\n</context>\n\n<context name="b">\ny\n</context>'
    sources = {"a": {"AGENTS.md"}, "b": {"AGENTS.md"}, "c": {"CLAUDE.md"}}
    twice = compare(repo, prompt, text, sources, {"a", "b", "c"})
    assert twice.twice == ["AGENTS.md"]
    assert twice.missing == ["CLAUDE.md"]
    stubbed = compare(
        repo, prompt, '<context-stub name="c">left out</context-stub>', sources, {"c"}
    )
    assert stubbed.stubbed_rules == ["CLAUDE.md"]
    assert stubbed.always_stubbed == ["c"]
    assert stubbed.missing == ["AGENTS.md"]
