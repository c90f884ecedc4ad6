"""`import_rules` end to end: the mapping, the files, the reports, re-runs, and doctor."""

from __future__ import annotations

import re
from pathlib import Path
from types import SimpleNamespace

import pytest

from keel.brain import load_brain
from keel.brain.limits import MAX_FILE_BYTES
from keel.brain.scaffold import scaffold_files
from keel.budget import render_block
from keel.code import load_context_code
from keel.doctor import run_doctor
from keel.errors import UsageError
from keel.importers import ImportReport, import_rules
from tests.importers.conftest import WriteTree, write_files

MAPPING = [
    (".claude/CLAUDE.md", "claude-md-claude", "always", "always"),
    (".claude/rules/commits.md", "claude-rule-commits", "always", "always"),
    (".claude/rules/security.md", "claude-rule-security", "ask", "glob"),
    (".claude/skills/changelog/SKILL.md", "claude-skill-changelog", "ask", "glob"),
    (".claude/skills/deploy/SKILL.md", "claude-skill-deploy", "ask", "manual"),
    (".claude/skills/pdf/FORMS.md", "claude-skill-pdf-forms", "ask", "description"),
    (".claude/skills/pdf/SKILL.md", "claude-skill-pdf", "ask", "description"),
    (".cursor/rules/api.mdc", "cursor-api", "ask", "description"),
    (".cursor/rules/frontend/components/RULE.md", "cursor-frontend-components", "ask", "glob"),
    (".cursor/rules/mistakes/comma-globs.mdc", "cursor-mistakes-comma-globs", "ask", "glob"),
    (
        ".cursor/rules/mistakes/globs-and-always.mdc",
        "cursor-mistakes-globs-and-always",
        "always",
        "always",
    ),
    (
        ".cursor/rules/mistakes/paths-key.mdc",
        "cursor-mistakes-paths-key",
        "ask",
        "description",
    ),
    (
        ".cursor/rules/mistakes/quoted-always.mdc",
        "cursor-mistakes-quoted-always",
        "ask",
        "description",
    ),
    (
        ".cursor/rules/mistakes/unquoted-star.mdc",
        "cursor-mistakes-unquoted-star",
        "ask",
        "glob",
    ),
    (".cursor/rules/release.mdc", "cursor-release", "ask", "manual"),
    (".cursor/rules/style.mdc", "cursor-style", "always", "always"),
    (".cursor/rules/testing.mdc", "cursor-testing", "ask", "glob"),
    (".cursorrules", "cursorrules", "always", "always"),
    (".github/copilot-instructions.md", "copilot-instructions", "always", "always"),
    (
        ".github/instructions/everything.instructions.md",
        "copilot-everything",
        "always",
        "always",
    ),
    (".github/instructions/python.instructions.md", "copilot-python", "ask", "glob"),
    (".github/instructions/react.instructions.md", "copilot-react", "ask", "glob"),
    (".windsurf/rules/hotfix.md", "windsurf-hotfix", "ask", "manual"),
    (".windsurf/rules/migrations.md", "windsurf-migrations", "ask", "glob"),
    (".windsurf/rules/naming.md", "windsurf-naming", "always", "always"),
    (".windsurf/rules/notrigger.md", "windsurf-notrigger", "ask", "manual"),
    (".windsurf/rules/perf.md", "windsurf-perf", "ask", "description"),
    ("AGENTS.md", "agents-md", "always", "always"),
    ("CLAUDE.md", "claude-md", "always", "always"),
    ("backend/.cursor/rules/db.mdc", "cursor-backend-db", "ask", "glob"),
    ("frontend/CLAUDE.md", "claude-md-frontend", "ask", "glob"),
    ("packages/api/AGENTS.md", "agents-md-packages-api", "ask", "glob"),
]

# For each glob rule: an input that names a file it applies to, and one that does not.
LINKS = [
    ("claude-rule-security", "check src/auth/login.ts", "check src/cart/login.ts"),
    ("claude-skill-changelog", "update CHANGELOG.md", "update docs/CHANGELOG.md"),
    ("cursor-frontend-components", "src/components/ui/Button.tsx", "src/pages/Home.tsx"),
    ("cursor-mistakes-comma-globs", "web/App.tsx is blank", "web/App.jsx is blank"),
    ("cursor-mistakes-unquoted-star", "scripts/seed.py", "scripts/seed.sh"),
    ("cursor-testing", "why does web/cart.test.ts fail?", "how are tests named?"),
    ("copilot-python", "Tools/Gen.PY breaks", "tools/gen.pyc breaks"),
    ("copilot-react", "apps/shop/src/App.jsx", "apps/shop/lib/App.jsx"),
    ("windsurf-migrations", "db/migrations/0007_add_sku.sql", "db/seeds/0007.sql"),
    ("cursor-backend-db", "backend/sql/report.sql", "reports/report.sql"),
    ("claude-md-frontend", "frontend/vite.config.ts", "backend/main.py"),
    ("agents-md-packages-api", "`packages/api/handlers/cart.ts:40`", "packages/web/cart.ts"),
]


def run(
    source: Path, brain: Path, *, feature: str | None = None, role: str | None = None
) -> ImportReport:
    return import_rules(source, brain, feature=feature, role=role)


def fails(brain: Path) -> list[str]:
    report = run_doctor(load_brain(brain), schema=None)
    return [f"{f.where}: {f.message}" for f in report.findings if f.level == "fail"]


def test_every_rule_of_the_fixture_maps_to_its_context(shop: Path, brain: Path) -> None:
    report = run(shop, brain)
    assert [(r.source, r.context, r.when[0], r.trigger) for r in report.rules] == MAPPING
    assert report.feature == "shop"
    # 14 from mapping, and 8 glob rules whose patterns name no file of the sparse fixture.
    assert len(report.warnings) == 22
    assert sum("no file in the repository" in w.message for w in report.warnings) == 8
    assert len(report.skipped) == 7
    assert report.refused == ()
    assert report.role is None
    assert report.hint is not None
    assert report.hint.startswith("no role admits these contexts")


def test_the_files_written_are_each_rule_s_context_and_code_and_the_feature(
    shop: Path, brain: Path
) -> None:
    report = run(shop, brain)
    globbed = {r.context for r in report.rules if r.trigger == "glob"}
    expected = {f"features/shop/{r[1]}.context.md" for r in MAPPING}
    expected |= {f"features/shop/{c}.context.py" for c in globbed}
    assert set(report.written) == expected | {"features/shop/FEATURE.md"}
    assert (report.updated, report.removed, report.unchanged) == ((), (), ())
    for rule in report.rules:
        assert rule.code == (
            f"features/shop/{rule.context}.context.py" if rule.context in globbed else None
        )


def test_a_context_file_carries_its_source_description_when_and_chars(
    shop: Path, brain: Path
) -> None:
    run(shop, brain)
    spec = load_brain(brain).contexts["cursor-testing"]
    text = (brain / "features/shop/cursor-testing.context.md").read_text(encoding="utf-8")
    assert text == (
        "---\n"
        '# imported from ".cursor/rules/testing.mdc" by keel import — edit the source and re-run; '
        "delete this line to keep your own edits\n"
        'description: "How tests are written here — naming, fixtures, no network."\n'
        "when: [ask]\n"
        f"chars: {spec.chars}\n"
        "---\n"
        "# Testing conventions\n\n"
        "Fixture rule for keel import's tests. Name tests after the behaviour, build data with the\n"
        "factories in tests/factories, and never call the network from a unit test.\n"
    )
    assert (spec.when, spec.feature) == (frozenset({"ask"}), "shop")
    assert spec.code_path == "features/shop/cursor-testing.context.py"


def rendered(context: str, instructions: str, chars: int) -> int | None:
    """The size of the block Keel renders within `chars`, None when it does not fit."""
    block = render_block(
        context=context, entity=None, instructions=instructions, views=(), chars=chars
    )
    return None if block is None else block.chars


def test_chars_is_the_rendered_block_and_a_tenth_rounded_up_to_a_hundred(
    shop: Path, brain: Path
) -> None:
    report = run(shop, brain)
    contexts = load_brain(brain).contexts
    for rule in report.rules:
        spec = contexts[rule.context]
        needed = rendered(rule.context, spec.instructions, 10**9)
        assert needed is not None
        assert rule.chars == spec.chars == -(-(needed + max(100, needed // 10)) // 100) * 100
        assert rendered(rule.context, spec.instructions, rule.chars) == needed, "fits"


def test_a_skill_names_the_files_beside_it_and_how_to_open_them(shop: Path, brain: Path) -> None:
    run(shop, brain)
    spec = load_brain(brain).contexts["claude-skill-pdf"]
    assert spec.instructions.endswith(
        "Files beside this skill in the repository (.claude/skills/pdf/):\n"
        '- FORMS.md — open it with context_open("claude-skill-pdf-forms")\n'
        "- scripts/fill.py — at .claude/skills/pdf/scripts/fill.py"
    )


def test_the_generated_code_is_keel_brain_code(shop: Path, brain: Path) -> None:
    run(shop, brain)
    text = (brain / "features/shop/cursor-testing.context.py").read_text(encoding="utf-8")
    assert text.startswith('# imported from ".cursor/rules/testing.mdc" by keel import')
    assert (
        "from keel.code import define_context\nfrom keel.importers.globs import GlobSet\n" in text
    )
    assert 'GLOBS = GlobSet.of(\n    "cursor",\n    ["**/*.test.ts", "tests/**"],\n)\n' in text
    assert "def match(turn, ctx=None):\n" in text
    assert text.endswith("\ncontext = define_context(match=match)\n")


@pytest.mark.parametrize(("context", "linked", "unlinked"), LINKS, ids=[c for c, _, _ in LINKS])
def test_generated_match_links_on_a_named_file_the_globs_match(
    shop: Path, brain: Path, context: str, linked: str, unlinked: str
) -> None:
    run(shop, brain)
    code = load_context_code(brain.resolve(), f"features/shop/{context}.context.py")
    assert code.match is not None
    assert code.match(SimpleNamespace(input=linked)) == {}
    assert code.match(SimpleNamespace(input=linked), object()) == {}, "takes the coming ctx"
    assert code.match(SimpleNamespace(input=unlinked)) is None
    assert code.match(SimpleNamespace(input=None)) is None


def test_the_result_passes_doctor(shop: Path, brain: Path) -> None:
    run(shop, brain)
    assert fails(brain) == []
    assert load_brain(brain).skips == ()


def test_a_second_run_changes_nothing(shop: Path, brain: Path) -> None:
    first = run(shop, brain, role="coder")
    second = run(shop, brain, role="coder")
    assert (second.written, second.updated, second.removed) == ((), (), ())
    assert set(second.unchanged) == set(first.written)
    assert not second.changed
    assert second.rules == first.rules


def test_a_rule_whose_source_is_gone_loses_its_files(shop: Path, brain: Path) -> None:
    run(shop, brain)
    (shop / ".cursor/rules/testing.mdc").unlink()
    (shop / "frontend/CLAUDE.md").unlink()
    report = run(shop, brain)
    assert report.removed == (
        "features/shop/claude-md-frontend.context.md",
        "features/shop/claude-md-frontend.context.py",
        "features/shop/cursor-testing.context.md",
        "features/shop/cursor-testing.context.py",
    )
    assert not (brain / "features/shop/cursor-testing.context.md").exists()
    assert (report.written, report.updated) == ((), ())
    assert fails(brain) == []


def test_a_rule_that_stops_being_glob_triggered_loses_its_code(shop: Path, brain: Path) -> None:
    run(shop, brain)
    rule = shop / ".cursor/rules/testing.mdc"
    rule.write_text(
        rule.read_text(encoding="utf-8").replace("globs:", "# globs:"), encoding="utf-8"
    )
    report = run(shop, brain)
    assert report.updated == (), "still an ask context with the same description"
    assert report.removed == ("features/shop/cursor-testing.context.py",)
    assert load_brain(brain).contexts["cursor-testing"].code_path is None


def test_an_edited_source_updates_its_context(shop: Path, brain: Path) -> None:
    run(shop, brain)
    (shop / "AGENTS.md").write_text("Fixture agents file, edited.\n", encoding="utf-8")
    report = run(shop, brain)
    assert report.updated == ("features/shop/agents-md.context.md",)
    assert load_brain(brain).contexts["agents-md"].instructions == "Fixture agents file, edited."


def test_a_hand_written_file_in_the_way_is_refused_and_the_rest_imported(
    shop: Path, brain: Path
) -> None:
    mine = "---\ndescription: Mine.\nwhen: [ask]\n---\nHand-written.\n"
    write_files(brain, {"features/shop/cursor-api.context.md": mine})
    report = run(shop, brain)
    assert [str(n) for n in report.refused] == [
        "features/shop/cursor-api.context.md: not written by keel import, and the context for "
        ".cursor/rules/api.mdc needs its name — left alone, so that rule is not imported; move "
        "the file away, re-run with --exclude /.cursor/rules/api.mdc to keep it as it is, or "
        "with --force to overwrite it (or, if it is an imported file you edited, put back its "
        "marker line: "
        '\'# imported from ".cursor/rules/api.mdc" by keel import — edit the source and re-run; '
        "delete this line to keep your own edits'), then re-run"
    ]
    assert (brain / "features/shop/cursor-api.context.md").read_text(encoding="utf-8") == mine
    assert "cursor-api" not in {r.context for r in report.rules}
    assert len(report.rules) == len(MAPPING) - 1


def test_a_hand_written_code_file_would_be_the_code_half_so_it_is_refused(
    shop: Path, brain: Path
) -> None:
    write_files(brain, {"features/shop/cursor-api.context.py": "# mine\n"})
    report = run(shop, brain)
    assert [n.path for n in report.refused] == ["features/shop/cursor-api.context.py"]
    assert report.refused[0].message.startswith(
        "not written by keel import, and beside the context for .cursor/rules/api.mdc it would "
        "become that context's code — left alone"
    )


def test_an_imported_file_whose_marker_was_deleted_is_the_author_s(shop: Path, brain: Path) -> None:
    run(shop, brain)
    path = brain / "features/shop/agents-md.context.md"
    lines = path.read_text(encoding="utf-8").splitlines(keepends=True)
    path.write_text("".join(line for line in lines if "keel import" not in line), encoding="utf-8")
    report = run(shop, brain)
    assert [n.path for n in report.refused] == ["features/shop/agents-md.context.md"]
    assert report.removed == (), "a file the import no longer owns is never removed"


def test_an_id_another_feature_has_is_settled_with_a_number(shop: Path, brain: Path) -> None:
    write_files(
        brain,
        {"features/other/cursor-api.context.md": "---\ndescription: D.\nwhen: [ask]\n---\nText.\n"},
    )
    report = run(shop, brain)
    contexts = {r.source: r.context for r in report.rules}
    assert contexts[".cursor/rules/api.mdc"] == "cursor-api-2"
    assert report.refused == ()
    assert fails(brain) == []


def test_a_second_repository_in_another_feature_gets_its_own_ids(
    shop: Path, brain: Path, repo: WriteTree
) -> None:
    run(shop, brain)
    other = repo({"CLAUDE.md": "Fixture memory of another repository.\n"})
    report = run(other, brain)
    assert [(r.context, r.source) for r in report.rules] == [("claude-md-2", "CLAUDE.md")]
    assert report.feature == "repo"
    assert fails(brain) == []


def test_a_hand_written_feature_md_is_left_alone(shop: Path, brain: Path) -> None:
    mine = "---\ndescription: Ours.\n---\n"
    write_files(brain, {"features/shop/FEATURE.md": mine})
    report = run(shop, brain)
    assert "features/shop/FEATURE.md" not in report.written + report.updated
    assert (brain / "features/shop/FEATURE.md").read_text(encoding="utf-8") == mine


def test_the_feature_md_describes_the_import(shop: Path, brain: Path) -> None:
    run(shop, brain)
    feature = load_brain(brain).features["shop"]
    assert feature.description == (
        "Coding-agent rules of shop (AGENTS.md, Claude Code, Cursor, GitHub Copilot, Windsurf), "
        "imported by keel import."
    )


def test_when_every_source_is_gone_the_feature_is_emptied(
    shop: Path, brain: Path, tmp_path: Path
) -> None:
    run(shop, brain)
    empty = tmp_path / "empty"
    empty.mkdir()
    report = run(empty, brain, feature="shop")
    assert "features/shop/FEATURE.md" in report.removed
    assert not any((brain / "features/shop").iterdir())
    assert report.hint == f"no rule files found in {empty.resolve()} — nothing to import"


def test_a_large_rule_gets_chars_to_fit_and_a_warning(repo: WriteTree, brain: Path) -> None:
    text = "Fixture rule text. " * 400
    report = run(repo({"CLAUDE.md": text}), brain)
    (rule,) = report.rules
    needed = rendered("claude-md", text.strip(), 10**9)
    assert needed is not None
    assert 6000 < needed < 12000
    assert rule.chars == -(-(needed + needed // 10) // 100) * 100
    assert [str(w) for w in report.warnings] == [
        f"CLAUDE.md: {needed:,} characters once rendered, over half of contexts.turnChars "
        "(12,000) — it crowds out other contexts; re-run with --role ROLE, which sizes the "
        "role, or consider splitting it"
    ]


def test_a_rule_larger_than_a_turn_keeps_its_size_and_is_told_how_to_fit(
    repo: WriteTree, brain: Path
) -> None:
    text = "Fixture rule text. " * 700
    source = repo({"CLAUDE.md": text})
    report = run(source, brain)
    (rule,) = report.rules
    needed = rendered("claude-md", text.strip(), 10**9)
    assert needed is not None
    assert needed > 12000
    whole = -(-(needed + needed // 10) // 100) * 100
    assert rule.chars == whole, "whole, as the tools load it: never cut to the brain's turnChars"
    assert [str(w) for w in report.warnings] == [
        f"CLAUDE.md: {needed:,} characters once rendered, more than a turn's contexts may use "
        "together (contexts.turnChars 12,000): a role that admits it stubs it on every turn "
        "unless its turnChars has room — re-run with --role ROLE, which sizes the role, or "
        "split it into smaller rules"
    ]
    # A re-run with --role and one without keep the size the rule has.
    assert run(source, brain, role="coder").rules[0].chars == whole
    assert run(source, brain).rules[0].chars == whole


def test_more_always_on_rules_than_a_turn_carries_are_warned_about(shop: Path, brain: Path) -> None:
    report = run(shop, brain)
    assert str(report.warnings[-1]) == (
        "constitution/MANIFEST.yaml: 10 imported contexts are always-on, but a turn carries at "
        "most contexts.maxActive (3); the rest arrive as one-line stubs the agent can open — "
        "re-run with --role ROLE, which gives it room for them, raise "
        "contexts.maxActive, or make some of the source rules description- or glob-triggered"
    )


def test_a_role_given_room_for_them_needs_no_warning(shop: Path, brain: Path) -> None:
    report = run(shop, brain, role="coder")
    assert report.role is not None
    assert report.role.max_active == 10 + 12 + 3, "always-on, file rules, the brain's own"
    assert not [w for w in report.warnings if "maxActive" in w.message]


def test_the_feature_defaults_to_a_slug_of_the_source_name(tmp_path: Path, brain: Path) -> None:
    source = write_files(tmp_path / "My Repo!", {"AGENTS.md": "Fixture.\n"})
    assert run(source, brain).feature == "my-repo"


def test_a_brain_inside_the_source_is_not_imported_from(tmp_path: Path) -> None:
    source = write_files(tmp_path / "app", {"AGENTS.md": "Fixture.\n"})
    brain = write_files(source / "brain", dict(scaffold_files("b")))
    run(source, brain)
    report = run(source, brain)
    assert [r.source for r in report.rules] == ["AGENTS.md"]
    assert not report.changed


@pytest.mark.parametrize(
    ("source", "target", "options", "message"),
    [
        pytest.param(
            "missing", "brain", {}, r"missing: no such directory — give the repository", id="source"
        ),
        pytest.param(
            "file.txt", "brain", {}, r"file.txt: not a directory — give the repository", id="file"
        ),
        pytest.param(
            "repo",
            "nowhere",
            {},
            r"nowhere is not a brain \(no constitution/MANIFEST\.yaml\) — `keel init .*nowhere` "
            "starts one",
            id="no-brain",
        ),
        pytest.param(
            "repo",
            "repo",
            {},
            r"repo is not a brain \(no constitution/MANIFEST\.yaml\) — `keel init .*repo` starts one",
            id="a-folder-that-is-not-a-brain",
        ),
        pytest.param(
            "repo",
            "file.txt",
            {},
            r"file\.txt: not a directory — give the brain directory to import into$",
            id="brain-a-file",
        ),
        pytest.param(
            "repo",
            "brain",
            {"feature": "a b"},
            r"--feature 'a b': not a usable feature name — .* e\.g\. --feature a-b",
            id="feature",
        ),
        pytest.param(
            "repo",
            "brain",
            {"role": "-x"},
            r"--role '-x': not a usable role id — .* e\.g\. --role x",
            id="role",
        ),
    ],
)
@pytest.mark.usefixtures("brain")
def test_what_the_caller_must_fix_is_a_usage_error(
    tmp_path: Path,
    repo: WriteTree,
    source: str,
    target: str,
    options: dict[str, str],
    message: str,
) -> None:
    repo({"AGENTS.md": "Fixture.\n"})
    (tmp_path / "file.txt").write_text("x", encoding="utf-8")
    with pytest.raises(UsageError, match=message):
        run(tmp_path / source, tmp_path / target, **options)


def test_a_folder_with_features_but_no_manifest_is_not_written_into(
    tmp_path: Path, repo: WriteTree
) -> None:
    # A repository of its own may keep a features/ folder (Cucumber, for one).
    other = write_files(tmp_path / "other", {"features/login.feature": "Feature: Login\n"})
    with pytest.raises(UsageError, match=r"other is not a brain"):
        run(repo({"AGENTS.md": "Fixture.\n"}), other)
    assert sorted(p.name for p in (other / "features").iterdir()) == ["login.feature"]


def test_an_empty_file_in_any_rule_place_is_skipped_with_its_reason(
    repo: WriteTree, brain: Path
) -> None:
    places = [
        ".cursorrules",
        ".windsurfrules",
        "CLAUDE.md",
        ".claude/rules/x.md",
        ".claude/skills/x/SKILL.md",
        ".github/copilot-instructions.md",
        ".github/instructions/x.instructions.md",
        ".windsurf/rules/x.md",
        ".cursor/rules/x.mdc",
    ]
    report = run(repo(dict.fromkeys(places, "\n")), brain)
    assert report.rules == ()
    assert [(n.path, n.message) for n in report.skipped] == [
        (p, "the file is empty — nothing to import") for p in sorted(places)
    ]


def test_a_rule_the_brain_would_refuse_is_skipped_and_its_old_context_removed(
    repo: WriteTree, brain: Path
) -> None:
    source = repo({"CLAUDE.md": "Use pnpm.\n", "AGENTS.md": "Small commits.\n"})
    run(source, brain, role="coder")
    # As large as a rule file may be: with its frontmatter, more than a brain file may be.
    (source / "CLAUDE.md").write_text(("x" * 99 + "\n") * (MAX_FILE_BYTES // 100))
    report = run(source, brain, role="coder")
    assert [r.context for r in report.rules] == ["agents-md"]
    (skip,) = report.skipped
    assert skip.path == "CLAUDE.md"
    assert re.fullmatch(
        r"the brain would refuse features/repo/claude-md\.context\.md made from it \(it would "
        r"hold [\d,]+ bytes, over the limit of 1,048,576 for a brain file \(docs/limits\.md\) "
        r"— split the source rule\) — not imported",
        skip.message,
    ), skip.message
    assert report.removed == ("features/repo/claude-md.context.md",)
    assert report.role is not None
    assert report.role.dropped == ("claude-md",)
    assert load_brain(brain).skips == ()


def test_a_windsurf_subfolder_s_always_on_rule_links_for_its_folder_only(
    repo: WriteTree, brain: Path
) -> None:
    source = repo(
        {
            "api/.windsurf/rules/style.md": "---\ntrigger: always_on\n---\nAPI style.\n",
            "api/app.py": "",
        }
    )
    report = run(source, brain)
    (rule,) = report.rules
    assert (rule.context, rule.when, rule.globs) == ("windsurf-api-style", ("ask",), ("/api/**",))
    code = load_context_code(brain.resolve(), "features/repo/windsurf-api-style.context.py")
    assert code.match is not None
    assert code.match(SimpleNamespace(input="fix api/app.py")) == {}
    assert code.match(SimpleNamespace(input="fix web/app.py")) is None
    assert fails(brain) == []
