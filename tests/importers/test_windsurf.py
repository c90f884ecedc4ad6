"""Windsurf rules map by their `trigger`; an unknown trigger keeps the file out."""

from __future__ import annotations

import pytest

from keel.importers.globs import GlobSet
from keel.importers.windsurf import map_windsurf, map_windsurfrules
from tests.importers.conftest import FIXTURES, WriteTree

SHOP = FIXTURES / "shop"


@pytest.mark.parametrize(
    ("path", "trigger", "description", "globs"),
    [
        pytest.param(".windsurf/rules/naming.md", "always", None, (), id="always_on"),
        pytest.param(
            ".windsurf/rules/perf.md",
            "description",
            "Performance work — profiling before optimising.",
            (),
            id="model_decision",
        ),
        pytest.param(
            ".windsurf/rules/migrations.md",
            "glob",
            "migrations — Windsurf rule for files matching db/migrations/*.sql "
            "(.windsurf/rules/migrations.md)",
            ("db/migrations/*.sql",),
            id="glob",
        ),
        pytest.param(
            ".windsurf/rules/hotfix.md",
            "manual",
            "Hotfix procedure — Windsurf rule applied by @hotfix (.windsurf/rules/hotfix.md)",
            (),
            id="manual",
        ),
    ],
)
def test_each_trigger_maps_to_its_own(
    path: str, trigger: str, description: str | None, globs: tuple[str, ...]
) -> None:
    mapped = map_windsurf(SHOP, path)
    (rule,) = mapped.rules
    assert (rule.trigger, rule.description, rule.globs) == (trigger, description, globs)
    assert mapped.warnings == ()


def test_an_unknown_trigger_is_skipped_with_the_nearest_real_one() -> None:
    mapped = map_windsurf(SHOP, ".windsurf/rules/typo.md")
    assert mapped.rules == ()
    assert [str(s) for s in mapped.skipped] == [
        ".windsurf/rules/typo.md:2: unknown trigger 'always' — did you mean 'always_on'? "
        "Windsurf reads always_on, model_decision, glob or manual, so it never applies this rule "
        "— fix the trigger, then re-run"
    ]


def test_a_rule_without_a_trigger_is_manual_with_a_warning() -> None:
    mapped = map_windsurf(SHOP, ".windsurf/rules/notrigger.md")
    (rule,) = mapped.rules
    assert rule.trigger == "manual"
    assert [str(w) for w in mapped.warnings] == [
        ".windsurf/rules/notrigger.md: no trigger — imported as manual (an ask context); set "
        "trigger: always_on, model_decision, glob or manual to say when it applies"
    ]


@pytest.mark.parametrize(
    ("front", "trigger", "warning"),
    [
        pytest.param(
            "trigger: always_on\nglobs: '*.py'",
            "always",
            "x.md:3: globs is set but trigger is always_on — ignored, as Windsurf ignores it",
            id="globs without the glob trigger",
        ),
        pytest.param(
            "trigger: glob",
            "manual",
            "x.md:2: trigger: glob without globs — Windsurf never applies it; imported as manual",
            id="the glob trigger without globs",
        ),
        pytest.param(
            "trigger: model_decision",
            "description",
            "x.md:2: trigger: model_decision without a description — the model has nothing to "
            "decide by; a description was generated, write one in the source",
            id="model_decision without a description",
        ),
    ],
)
def test_what_windsurf_ignores_is_warned_about(
    repo: WriteTree, front: str, trigger: str, warning: str
) -> None:
    root = repo({".windsurf/rules/x.md": f"---\n{front}\n---\nFixture.\n"})
    mapped = map_windsurf(root, ".windsurf/rules/x.md")
    (rule,) = mapped.rules
    assert rule.trigger == trigger
    assert [str(w) for w in mapped.warnings] == [f".windsurf/rules/{warning}"]


def test_a_rule_longer_than_windsurf_reads_is_imported_whole(repo: WriteTree) -> None:
    body = "Fixture. " * 1500
    root = repo({".windsurf/rules/long.md": f"---\ntrigger: always_on\n---\n{body}\n"})
    mapped = map_windsurf(root, ".windsurf/rules/long.md")
    assert mapped.rules[0].body == body.strip()
    assert [str(w) for w in mapped.warnings] == [
        ".windsurf/rules/long.md: 13499 characters — Windsurf reads only the first 12,000; the "
        "whole text is imported"
    ]


def test_the_legacy_windsurfrules_file_is_always_on(repo: WriteTree) -> None:
    root = repo({".windsurfrules": "Fixture legacy rule.\n"})
    (rule,) = map_windsurfrules(root, ".windsurfrules").rules
    assert (rule.name, rule.trigger) == ("windsurfrules", "always")


@pytest.mark.parametrize(
    ("front", "trigger", "globs", "inside", "outside"),
    [
        pytest.param(
            "trigger: always_on",
            "glob",
            ("/api/**",),
            "api/handlers/cart.py",
            "web/cart.py",
            id="always_on-for-its-folder",
        ),
        pytest.param(
            "trigger: glob\nglobs: '*.sql'",
            "glob",
            ("/api/**/*.sql",),
            "api/db/schema.sql",
            "db/schema.sql",
            id="a-name-glob-at-any-depth-under-it",
        ),
        pytest.param(
            "trigger: glob\nglobs: db/*.sql",
            "glob",
            ("/api/db/*.sql",),
            "api/db/schema.sql",
            "db/schema.sql",
            id="a-path-glob-from-it",
        ),
    ],
)
def test_a_subfolder_s_rules_apply_to_that_folder(
    repo: WriteTree,
    front: str,
    trigger: str,
    globs: tuple[str, ...],
    inside: str,
    outside: str,
) -> None:
    root = repo({"api/.windsurf/rules/x.md": f"---\n{front}\n---\nFixture.\n"})
    mapped = map_windsurf(root, "api/.windsurf/rules/x.md")
    (rule,) = mapped.rules
    assert (rule.name, rule.trigger, rule.globs, rule.dialect) == (
        "windsurf-api-x",
        trigger,
        globs,
        "windsurf",
    )
    assert rule.description is not None
    assert "api/" in rule.description
    matcher = GlobSet.of("windsurf", rule.globs)
    assert matcher.matches_path(inside)
    assert not matcher.matches_path(outside)


@pytest.mark.parametrize("trigger", ["model_decision", "manual"])
def test_a_subfolder_s_rules_opened_by_name_or_description_stay_so(
    repo: WriteTree, trigger: str
) -> None:
    root = repo(
        {"api/.windsurf/rules/x.md": f"---\ntrigger: {trigger}\ndescription: D.\n---\nX.\n"}
    )
    (rule,) = map_windsurf(root, "api/.windsurf/rules/x.md").rules
    assert rule.globs == ()
    assert rule.trigger == ("description" if trigger == "model_decision" else "manual")
