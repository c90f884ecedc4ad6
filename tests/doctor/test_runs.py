"""What doctor says about runs: a schedule cron cannot read, a bot no rule knows, a scenario
with no pipeline and a pipeline with no scenario, and a context too long to ever attach."""

from __future__ import annotations

import pytest

from tests.conftest import WriteBrain
from tests.doctor.brains import BEAT, ROLE, TICKET, doctor, of, only

SCENARIO = "features/desk/onboard.scenario.md"
PIPELINE = "features/desk/onboard.pipeline.py"
GOOD_PIPELINE = (
    "from keel.code import define_pipeline\n\n\n"
    "async def run(ctx, vars):\n    return None\n\n\n"
    "pipeline = define_pipeline(run)\n"
)


def beat(schedule: str, extra: str = "") -> str:
    return f"---\nschedule: '{schedule}'\nagent: support\n{extra}---\nPost the queue.\n"


# -- schedules ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        pytest.param("99 99 * * *", "the minute field is '99', which is not a minute", id="99"),
        pytest.param("0 8 * * 9", "the day of week field is '9'", id="weekday"),
        pytest.param("0 8 31 2 *", "never fires", id="never"),
    ],
)
def test_a_schedule_cron_cannot_use_fails_on_its_line(
    write_brain: WriteBrain, schedule: str, words: str
) -> None:
    report = doctor(write_brain, {BEAT: beat(schedule)})
    [finding] = of(report, "entity.skip")
    assert (finding.level, finding.file, finding.line) == ("fail", BEAT, 2)
    assert finding.message.startswith(f"'schedule': '{schedule}'")
    assert words in finding.message
    assert report.failed


# -- where a run speaks -----------------------------------------------------------------------


def test_a_bot_access_yaml_knows_is_fine(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {BEAT: beat("0 8 * * *", 'bot: desk\nchat: "tg:chat:-1"\n')})
    assert report.findings == ()


def test_a_bot_no_rule_names_warns_on_its_line(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {BEAT: beat("0 8 * * *", 'bot: dsek\nchat: "tg:chat:-1"\n')})
    finding = only(report, "entity.bot")
    assert (finding.level, finding.file, finding.line, finding.subject) == (
        "warn",
        BEAT,
        4,
        "heartbeat:daily",
    )
    assert finding.message == (
        "heartbeat 'daily' speaks as bot 'dsek', but access.yaml has no rule for that bot "
        "(did you mean 'desk'?), so no chat of it is known — fix the name in `bot:`, or give "
        "the bot its rules in access.yaml"
    )


def test_without_access_yaml_no_bot_is_checked(write_brain: WriteBrain) -> None:
    changes = {BEAT: beat("0 8 * * *", "bot: anyone\n"), "constitution/access.yaml": None}
    assert of(doctor(write_brain, changes), "entity.bot") == []


# -- pipelines ------------------------------------------------------------------------------


def scenario(agent: str = "support") -> str:
    return f"---\ndescription: Onboard a customer.\nagent: {agent}\n---\nWelcome them.\n"


def test_a_scenario_with_its_pipeline_is_fine(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {SCENARIO: scenario(), PIPELINE: GOOD_PIPELINE})
    assert report.findings == ()


def test_a_scenario_without_its_pipeline_fails_naming_the_file_to_add(
    write_brain: WriteBrain,
) -> None:
    finding = only(doctor(write_brain, {SCENARIO: scenario()}), "code.missing")
    assert (finding.level, finding.file, finding.line, finding.subject) == (
        "fail",
        SCENARIO,
        None,
        "scenario:onboard",
    )
    assert finding.message == (
        "scenario 'onboard' has no onboard.pipeline.py beside it, so it cannot run: a "
        "scenario's runs are its pipeline — add features/desk/onboard.pipeline.py with "
        "`async def run(ctx, vars)` and `pipeline = define_pipeline(run)`"
    )


def test_a_misnamed_pipeline_shows_as_missing_and_as_an_orphan_with_the_near_name(
    write_brain: WriteBrain,
) -> None:
    report = doctor(
        write_brain, {SCENARIO: scenario(), "features/desk/onbaord.pipeline.py": GOOD_PIPELINE}
    )
    assert [f.check for f in report.findings] == ["code.missing", "code.orphan"]
    orphan = of(report, "code.orphan")[0]
    assert orphan.message.startswith(
        "no onbaord.scenario.md beside it, so it is never loaded (did you mean 'onboard'?)"
    )


def test_a_pipeline_without_its_scenario_warns(write_brain: WriteBrain) -> None:
    finding = only(doctor(write_brain, {PIPELINE: GOOD_PIPELINE}), "code.orphan")
    assert (finding.level, finding.file) == ("warn", PIPELINE)
    assert finding.message.startswith("no onboard.scenario.md beside it, so it is never loaded")
    assert "add onboard.scenario.md, or delete it" in finding.message


def test_a_pipeline_that_exports_no_pipeline_fails_to_load(write_brain: WriteBrain) -> None:
    source = "async def run(ctx, vars):\n    return None\n"
    report = doctor(write_brain, {SCENARIO: scenario(), PIPELINE: source})
    finding = only(report, "code.load")
    assert (finding.file, finding.subject) == (PIPELINE, "scenario:onboard")
    assert "exports no 'pipeline'" in finding.message


def test_a_switched_off_scenario_needs_no_pipeline(write_brain: WriteBrain) -> None:
    changes = {SCENARIO: scenario(), "features/desk/FEATURE.md": "---\nenabled: false\n---\n"}
    assert of(doctor(write_brain, changes), "code.missing") == []


# -- instructions over their budget ---------------------------------------------------------


def ticket(body: str, chars: str = "") -> str:
    return (
        "---\ndescription: One ticket.\nentity: ticket id\nwhen: [chat, ask]\n"
        f"data:\n  - {{ view: ticket_card, by: ticket_id }}\n{chars}---\n{body}\n"
    )


def test_instructions_within_chars_are_fine(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {TICKET: ticket("x" * 100, "chars: 100\n")})
    assert of(report, "context.over-budget") == []


def test_instructions_over_the_contexts_own_chars_warn_with_both_numbers(
    write_brain: WriteBrain,
) -> None:
    report = doctor(write_brain, {TICKET: ticket("x" * 1234, "chars: 1000\n")})
    finding = only(report, "context.over-budget")
    assert (finding.level, finding.file, finding.line) == ("warn", TICKET, 7)
    assert finding.message == (
        "'ticket' has 1,234 characters of instructions, more than its chars budget of 1,000 "
        "(its own `chars:`); instructions are never cut, so it never attaches on its own — "
        "every turn that does not open it gets a one-line stub instead: shorten the "
        "instructions, or raise `chars:` in "
        f"{TICKET} above 1,234"
    )


def test_the_default_budget_applies_without_any_chars(write_brain: WriteBrain) -> None:
    finding = only(doctor(write_brain, {TICKET: ticket("y" * 3001)}), "context.over-budget")
    assert "3,001 characters of instructions, more than its chars budget of 3,000" in (
        finding.message
    )
    assert "(Keel's default)" in finding.message
    assert finding.line is None


def test_the_budget_of_manifest_and_of_a_role_that_carries_it(write_brain: WriteBrain) -> None:
    manifest = {"constitution/MANIFEST.yaml": "contexts: { chars: 500 }\n"}
    body = {TICKET: ticket("z" * 600)}
    finding = only(doctor(write_brain, {**manifest, **body}), "context.over-budget")
    assert "more than its chars budget of 500 (MANIFEST `contexts.chars`)" in finding.message

    role = (
        "---\ncontexts: [ticket, digest]\ncapabilities: [context:read]\nskills: [tone]\n"
        "state: [queue]\ncontexts_budget: { chars: 800 }\n---\nYou are the desk.\n"
    )
    assert of(doctor(write_brain, {**manifest, **body, ROLE: role}), "context.over-budget") == []
    small = role.replace("chars: 800", "chars: 550")
    finding = only(doctor(write_brain, {**body, ROLE: small}), "context.over-budget")
    assert "budget of 550 (role 'support', `contexts_budget.chars`)" in finding.message
    assert "raise `contexts_budget.chars` in features/desk/support.agent.md" in finding.message
