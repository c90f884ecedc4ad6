"""`--role`: an existing role admits the imported contexts; a missing one is created."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.brain import load_brain
from keel.doctor import run_doctor
from keel.importers import import_rules
from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.importers.conftest import WriteTree, write_files

SUPPORT = """---
# the desk's role
description: The support desk.
contexts: [greeting]   # what it admits
capabilities: [context:read]
---
You are the support desk.

---
A rule in the persona stays as written.
"""


# What an import of one always-on rule and one folder rule (200 chars each) adds to a role
# that sets no budget: two contexts and their characters on top of the brain's maxActive (3)
# and turnChars (12,000).
ROOM_FOR_TWO = (
    "capabilities: [context:read]\ncontexts_budget:\n  maxActive: 5\n  turnChars: 12400\n"
)
ASK_RULE: dict[str, str | bytes] = {".cursor/rules/a.mdc": "---\ndescription: A.\n---\nAsk.\n"}
ALWAYS_ON: dict[str, str | bytes] = {
    "CLAUDE.md": "Use pnpm.\n",
    "AGENTS.md": "Keep commits small.\n",
    ".github/copilot-instructions.md": "Write in TypeScript.\n",
}
TESTS_RULE: dict[str, str | bytes] = {
    ".github/instructions/tests.instructions.md": '---\napplyTo: "**/*.test.ts"\n---\nVitest.\n'
}


def findings(brain: Path, level: str) -> list[str]:
    report = run_doctor(load_brain(brain), schema=None)
    return [f"{f.check} {f.where}" for f in report.findings if f.level == level]


def test_without_a_role_the_report_says_how_to_admit_them(repo: WriteTree, brain: Path) -> None:
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain)
    assert report.role is None
    assert report.hint == (
        "no role admits these contexts yet, so no turn carries them — re-run with --role ROLE "
        "(an existing role gets them in contexts:, a new one is created), or list their ids in "
        "a role's contexts:"
    )
    assert findings(brain, "warn") == ["context.unreached features/repo/agents-md.context.md"]


WILDCARD_ROLE = (
    "---\ndescription: Reads everything.\ncontexts: ['*']\ncapabilities: [context:read]\n"
    "contexts_budget: {maxActive: 1}\n---\nYou help.\n"
)


def test_without_a_role_a_role_that_already_admits_them_is_checked_not_edited(
    repo: WriteTree, brain: Path
) -> None:
    write_files(brain, {"features/desk/reader.agent.md": WILDCARD_ROLE})
    report = import_rules(repo(ALWAYS_ON), brain)
    assert report.role is None
    assert report.hint is None, "a role admits them: nothing to say about admitting"
    (said,) = [w for w in report.warnings if "reader" in w.message]
    assert (said.path, said.line) == ("features/desk/reader.agent.md", 5)  # maxActive's line
    always = load_brain(brain).admitted(load_brain(brain).roles["reader"], "always")
    assert len(always) == 3 + 1, "the three imported, and the brain's own"
    assert said.message.startswith(
        "role 'reader' admits 4 always-on contexts, but a turn carries at most 1 (maxActive)"
    )
    assert "re-running this import with --role reader does it" in said.message
    assert not [w for w in report.warnings if "imported contexts are always-on" in w.message]
    role = (brain / "features/desk/reader.agent.md").read_text(encoding="utf-8")
    assert role == WILDCARD_ROLE, "an import without --role edits no role"
    assert "role.always-over features/desk/reader.agent.md:5" in findings(brain, "warn")


def test_without_a_role_a_role_with_room_says_nothing(repo: WriteTree, brain: Path) -> None:
    roomy = WILDCARD_ROLE.replace("maxActive: 1", "maxActive: 9")
    write_files(brain, {"features/desk/reader.agent.md": roomy})
    report = import_rules(repo(ALWAYS_ON), brain)
    assert (report.hint, [w.path for w in report.warnings]) == (None, [])


def test_a_missing_role_is_created_in_the_feature(shop: Path, brain: Path) -> None:
    report = import_rules(shop, brain, role="coder")
    assert report.role is not None
    assert (report.role.path, report.role.created) == ("features/shop/coder.agent.md", True)
    assert report.hint is None
    role = load_brain(brain).roles["coder"]
    assert role.agent == "cli"
    assert role.capabilities == ("context:read",)
    assert role.contexts == tuple(r.context for r in report.rules)
    assert role.persona.startswith("You are a coding agent working in the shop repository.")
    assert findings(brain, "fail") == findings(brain, "warn") == []


def test_an_existing_role_gets_the_ids_and_keeps_everything_else(
    repo: WriteTree, brain: Path
) -> None:
    write_files(brain, {"features/desk/support.agent.md": SUPPORT})
    source = repo({"AGENTS.md": "Fixture.\n", "docs/AGENTS.md": "Fixture docs.\n"})
    report = import_rules(source, brain, role="support")
    assert report.role is not None
    assert (report.role.created, report.role.added) == (False, ("agents-md", "agents-md-docs"))
    assert report.updated == ("features/desk/support.agent.md",)
    assert (brain / "features/desk/support.agent.md").read_text(encoding="utf-8") == (
        SUPPORT.replace("[greeting]   #", "[greeting, agents-md, agents-md-docs] #").replace(
            "capabilities: [context:read]\n", ROOM_FOR_TWO
        )
    ), "comments, other keys and the persona stay (ruamel keeps one space before a comment)"
    assert findings(brain, "fail") == []


def test_a_rule_whose_source_is_gone_leaves_the_role_too(repo: WriteTree, brain: Path) -> None:
    write_files(brain, {"features/desk/support.agent.md": SUPPORT})
    source = repo({"AGENTS.md": "Fixture.\n", "docs/AGENTS.md": "Fixture docs.\n"})
    import_rules(source, brain, role="support")
    (source / "docs/AGENTS.md").unlink()
    report = import_rules(source, brain, role="support")
    assert report.role is not None
    assert (report.role.added, report.role.dropped) == ((), ("agents-md-docs",))
    assert load_brain(brain).roles["support"].contexts == ("greeting", "agents-md")


def test_other_roles_that_list_a_removed_id_are_named(repo: WriteTree, brain: Path) -> None:
    source = repo({"AGENTS.md": "Fixture.\n", "docs/AGENTS.md": "Fixture docs.\n"})
    import_rules(source, brain)
    write_files(
        brain, {"features/desk/support.agent.md": SUPPORT.replace("greeting", "agents-md-docs")}
    )
    (source / "docs/AGENTS.md").unlink()
    report = import_rules(source, brain)
    assert [str(w) for w in report.warnings] == [
        "features/desk/support.agent.md: lists agents-md-docs, which this import removed (their "
        "source rules are gone) — take them out of contexts:"
    ]


def test_a_role_that_admits_every_context_keeps_its_contexts(repo: WriteTree, brain: Path) -> None:
    text = SUPPORT.replace("[greeting]", "['*']")
    write_files(brain, {"features/desk/support.agent.md": text})
    report = import_rules(repo(ASK_RULE), brain, role="support")
    assert report.role is not None
    assert report.role.added == ()
    assert report.unchanged == ("features/desk/support.agent.md",)
    # An always-on rule still needs room in its turns.
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="support")
    assert report.role is not None
    assert (report.role.added, report.role.max_active) == ((), 4)
    assert load_brain(brain).roles["support"].contexts == ("*",)


def test_a_role_without_context_read_is_warned_about(repo: WriteTree, brain: Path) -> None:
    text = SUPPORT.replace("capabilities: [context:read]\n", "")
    write_files(brain, {"features/desk/support.agent.md": text})
    report = import_rules(repo({"docs/AGENTS.md": "Fixture docs.\n"}), brain, role="support")
    assert [str(w) for w in report.warnings] == [
        "features/desk/support.agent.md: role 'support' cannot open ask contexts (no "
        "context:read in capabilities:), so only the files a turn names bring the imported ask "
        "rules — add context:read"
    ]


def test_a_role_without_a_contexts_key_gets_one(repo: WriteTree, brain: Path) -> None:
    text = "---\ndescription: D.\ncapabilities: [context:read]\n---\nPersona.\n"
    write_files(brain, {"features/desk/desk.agent.md": text})
    import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="desk")
    assert load_brain(brain).roles["desk"].contexts == ("agents-md",)


def test_a_role_defined_twice_is_refused(repo: WriteTree, brain: Path) -> None:
    write_files(
        brain,
        {"features/a/twin.agent.md": SUPPORT, "features/b/twin.agent.md": SUPPORT},
    )
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="twin")
    assert report.role is None
    assert [str(n) for n in report.refused] == [
        "features/a/twin.agent.md: role 'twin' is defined by 2 files (features/a/twin.agent.md, "
        "features/b/twin.agent.md), so none of them loads — rename all but one, then re-run; "
        "its contexts: were not changed"
    ]
    assert [r.context for r in report.rules] == ["agents-md"], "the rules are still imported"


def test_a_role_whose_frontmatter_does_not_parse_is_refused(repo: WriteTree, brain: Path) -> None:
    write_files(brain, {"features/a/broken.agent.md": "---\ncontexts: [a\n---\nPersona.\n"})
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="broken")
    (refusal,) = report.refused
    assert refusal.path == "features/a/broken.agent.md"
    assert refusal.message.startswith("its frontmatter does not parse (")
    assert refusal.message.endswith("its contexts: were not changed — add the ids by hand")


@pytest.mark.parametrize(
    ("text", "reason"),
    [
        pytest.param("Persona only.\n", "it has no frontmatter between '---' lines", id="none"),
        pytest.param(
            "---\n- a\n---\nPersona.\n",
            "its frontmatter is not a mapping of keys to values",
            id="list",
        ),
        pytest.param(
            "---\ncontexts: all\n---\nPersona.\n", "its contexts: is not a list", id="text"
        ),
        pytest.param(
            "---\ncontexts: " + "[" * 3000 + "]" * 3000 + "\n---\nPersona.\n",
            "its frontmatter does not parse (the YAML nests more than 64 levels deep "
            "(docs/limits.md) — flatten it)",
            id="nested-3000",
        ),
    ],
)
def test_a_role_that_cannot_be_edited_is_refused_with_why(
    repo: WriteTree, brain: Path, text: str, reason: str
) -> None:
    write_files(brain, {"features/a/odd.agent.md": text})
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="odd")
    assert [n.message for n in report.refused] == [
        f"{reason}; its contexts: were not changed — add the ids by hand"
    ]
    assert (brain / "features/a/odd.agent.md").read_text(encoding="utf-8") == text


def test_a_created_role_gets_room_for_its_always_on_rules(repo: WriteTree, brain: Path) -> None:
    report = import_rules(repo({**ALWAYS_ON, **TESTS_RULE}), brain, role="coder")
    assert report.role is not None
    assert report.role.max_active == 3 + 1 + 3, "always-on and file rules, the brain's own"
    assert load_brain(brain).roles["coder"].contexts_budget.max_active == 7
    assert not [w for w in report.warnings if "maxActive" in w.message]


def test_the_always_on_rules_stay_attached_when_file_rules_match(
    repo: WriteTree, brain: Path
) -> None:
    import_rules(repo({**ALWAYS_ON, **TESTS_RULE}), brain, role="coder")
    conversation = Conversation(bot="cli", chat="cli")
    request = TurnRequest(
        conversation=conversation, now=datetime.now(UTC), role="coder", input="fix a.test.ts"
    )
    with Engine(brain, watch=False) as engine:
        prepared, _ = engine.prepare(request, dry_run=True)
    attached = sorted(a.link.context for a in prepared.attached)
    assert attached == ["agents-md", "claude-md", "copilot-instructions", "copilot-tests"]
    assert prepared.stubs == ()


@pytest.mark.parametrize(
    ("budget", "kept"),
    [
        pytest.param("contexts_budget: {maxActive: 20}\n", 20, id="higher-stays"),
        pytest.param("contexts_budget: {maxActive: 2}\n", 4, id="lower-is-raised"),
        pytest.param("contexts_budget: {chars: 900}\n", 4, id="beside-other-knobs"),
    ],
)
def test_an_existing_role_s_max_active_is_only_ever_raised(
    repo: WriteTree, brain: Path, budget: str, kept: int
) -> None:
    write_files(
        brain, {"features/desk/support.agent.md": SUPPORT.replace("---\nYou", f"{budget}---\nYou")}
    )
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="support")
    assert report.role is not None
    assert report.role.max_active == (None if kept == 20 else kept)
    role = load_brain(brain).roles["support"]
    assert role.contexts_budget.max_active == kept
    if "chars" in budget:
        assert role.contexts_budget.chars == 900


def test_a_brain_wide_max_active_is_counted_as_the_room_there_is(
    repo: WriteTree, brain: Path
) -> None:
    manifest = brain / "constitution/MANIFEST.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8").replace("maxActive: 3", "maxActive: 5"),
        encoding="utf-8",
    )
    report = import_rules(repo({"AGENTS.md": "Fixture.\n"}), brain, role="coder")
    assert report.role is not None
    assert report.role.max_active == 1 + 5


def test_with_ask_rules_alone_the_role_s_budget_is_left_alone(repo: WriteTree, brain: Path) -> None:
    report = import_rules(repo(ASK_RULE), brain, role="coder")
    assert report.role is not None
    assert report.role.max_active is None
    assert "contexts_budget" not in (brain / report.role.path).read_text(encoding="utf-8")


def test_another_role_that_cannot_be_read_is_passed_over(repo: WriteTree, brain: Path) -> None:
    source = repo({"AGENTS.md": "Agents fixture.\n", "CLAUDE.md": "Claude fixture.\n"})
    import_rules(source, brain)
    deep = "---\ncontexts: " + "[" * 3000 + "]" * 3000 + "\n---\nPersona.\n"
    write_files(brain, {"features/a/deep.agent.md": deep})
    (source / "CLAUDE.md").unlink()
    report = import_rules(source, brain)
    assert report.removed == ("features/repo/claude-md.context.md",)
    assert report.warnings == ()


def test_the_role_gets_room_for_the_always_on_rules_characters(
    repo: WriteTree, brain: Path
) -> None:
    big = "Follow the house style. " * 600  # about 14,000 characters: over a whole turn
    source = repo({"AGENTS.md": big, "CLAUDE.md": "Use pnpm.\n", "web/AGENTS.md": "Web.\n"})
    report = import_rules(source, brain, role="coder")
    assert report.role is not None
    always = sum(r.chars for r in report.rules if r.when == ("always",))
    assert always > 12_000, "whole: not capped at the brain's turnChars"
    linking = always + sum(r.chars for r in report.rules if r.trigger == "glob")  # web/
    assert report.role.turn_chars == linking + 12_000
    loaded = load_brain(brain).roles["coder"]
    assert loaded.contexts_budget.turn_chars == linking + 12_000
    # Never lowered: a smaller source on the next run leaves the room as it is.
    (source / "AGENTS.md").write_text("Short now.\n", encoding="utf-8")
    again = import_rules(source, brain, role="coder")
    assert again.role is not None
    assert again.role.turn_chars is None
    assert load_brain(brain).roles["coder"].contexts_budget.turn_chars == linking + 12_000


def test_an_existing_role_with_room_enough_keeps_its_turn_chars(
    repo: WriteTree, brain: Path
) -> None:
    write_files(
        brain,
        {
            "features/desk/coder.agent.md": "---\nagent: cli\ncapabilities: [context:read]\n"
            "contexts: []\ncontexts_budget:\n  maxActive: 9\n  turnChars: 90000\n---\nP.\n"
        },
    )
    source = repo({"AGENTS.md": "Keep commits small.\n"})
    report = import_rules(source, brain, role="coder")
    assert report.role is not None
    assert (report.role.max_active, report.role.turn_chars) == (None, None)
    assert load_brain(brain).roles["coder"].contexts_budget.turn_chars == 90_000


def test_the_role_gets_a_catalog_budget_its_ask_contexts_fit_in(
    repo: WriteTree, brain: Path
) -> None:
    from keel.assemble.texts import catalog_text
    from keel.brain.knobs import SectionBudgets
    from keel.link.catalog import catalog
    from keel.tokens.estimate import estimate_tokens

    rules: dict[str, str | bytes] = {
        f".cursor/rules/r{n:02}.mdc": f"---\ndescription: When the task touches area {n} of the "
        f"storefront — its handlers, its tests and its migrations — read this first.\n---\nR{n}.\n"
        for n in range(40)
    }
    report = import_rules(repo(rules), brain, role="coder")
    assert report.role is not None
    assert report.role.catalog_tokens is not None
    loaded = load_brain(brain)
    role = loaded.roles["coder"]
    used = estimate_tokens(catalog_text(catalog(loaded, role)))
    assert used > 800, "the default budget would not hold it"
    budget = SectionBudgets.of(role, loaded.manifest)("context.catalog")
    assert budget is not None
    assert used <= budget
    assert report.role.catalog_tokens == budget


def test_a_small_catalog_leaves_the_section_budget_alone(repo: WriteTree, brain: Path) -> None:
    source = repo({".cursor/rules/a.mdc": "---\ndescription: A.\n---\nA.\n"})
    report = import_rules(source, brain, role="coder")
    assert report.role is not None
    assert report.role.catalog_tokens is None
    assert load_brain(brain).roles["coder"].sections == ()


def test_always_on_rules_over_the_model_s_input_are_warned_about(
    repo: WriteTree, brain: Path
) -> None:
    manifest = brain / "constitution/MANIFEST.yaml"
    manifest.write_text(
        manifest.read_text(encoding="utf-8") + "model:\n  name: small\n  window: 2000\n"
        "  output_reserve: 500\n",
        encoding="utf-8",
    )
    big = "Follow the house style in every file you touch. " * 200
    report = import_rules(repo({"AGENTS.md": big, "CLAUDE.md": "Use pnpm.\n"}), brain, role="c")
    (warning,) = [w for w in report.warnings if "input allocation" in w.message]
    assert warning.path == "constitution/MANIFEST.yaml"
    assert warning.message.startswith("the 2 always-on rules are about ")
    assert "more than the model's input allocation (1,500 tokens, model 'small')" in warning.message


def test_always_on_rules_that_fit_the_model_get_no_such_warning(
    repo: WriteTree, brain: Path
) -> None:
    report = import_rules(repo({"AGENTS.md": "Keep commits small.\n"}), brain, role="c")
    assert not [w for w in report.warnings if "input allocation" in w.message]
