"""A heartbeat's `schedule`: five cron fields, checked by croniter when the file loads.

A wrong schedule skips its heartbeat with the line of `schedule:`, the field that is
wrong, the value seen and what the field takes; a right one loads as written.
"""

from __future__ import annotations

import pytest

from keel.brain import load_brain
from keel.brain.schedule import cron_problem
from tests.conftest import WriteBrain

BEAT = "features/desk/daily.heartbeat.md"


def beat(schedule: str) -> str:
    return f'---\ndescription: The beat.\nschedule: "{schedule}"\nagent: desk\n---\nGo.\n'


@pytest.mark.parametrize(
    "schedule",
    [
        pytest.param("0 19 * * *", id="daily"),
        pytest.param("0 9 * * 1-5", id="weekdays"),
        pytest.param("*/15 8-18 * * MON-FRI", id="steps-and-names"),
        pytest.param("0 0 1,15 JAN,JUL *", id="lists"),
        pytest.param("0 0 L * *", id="last-day"),
        pytest.param("0 0 * * 7", id="sunday-as-7"),
        pytest.param("0 0 29 2 *", id="leap-day"),
        pytest.param("  30   7 * * *  ", id="extra-spaces"),
    ],
)
def test_a_five_field_schedule_loads_as_written(write_brain: WriteBrain, schedule: str) -> None:
    assert cron_problem(schedule) is None
    brain = load_brain(write_brain({BEAT: beat(schedule)}))
    assert brain.skips == ()
    spec = brain.entity("heartbeat", "daily")
    assert spec is not None
    assert spec.schedule == schedule


@pytest.mark.parametrize(
    ("schedule", "words"),
    [
        pytest.param(
            "99 99 * * *",
            "the minute field is '99', which is not a minute (it takes 0-59); the hour field "
            "is '99', which is not an hour (it takes 0-23)",
            id="minute-and-hour",
        ),
        pytest.param("0 24 * * *", "the hour field is '24'", id="hour"),
        pytest.param("0 0 32 * *", "the day of month field is '32'", id="day-of-month"),
        pytest.param("0 0 * 13 *", "the month field is '13', which is not a month", id="month"),
        pytest.param("0 0 * * 8", "the day of week field is '8'", id="day-of-week"),
        pytest.param("*/0 * * * *", "the minute field is '*/0'", id="zero-step"),
        pytest.param("0 0 * JUNE *", "the month field is 'JUNE'", id="month-name"),
        pytest.param("every day", "'every day' has 2 field(s); a schedule has five", id="words"),
        pytest.param("0 19 * * * *", "a sixth field, for seconds or years, is not read", id="six"),
        pytest.param("@daily", "write its five fields, '0 0 * * *'", id="shorthand"),
        pytest.param("0 0 31 2 *", "never fires", id="february-31"),
        pytest.param("0 0 31 4,6,9,11 *", "never fires", id="short-months"),
    ],
)
def test_a_wrong_schedule_skips_its_heartbeat_naming_field_value_and_fix(
    write_brain: WriteBrain, schedule: str, words: str
) -> None:
    problem = cron_problem(schedule)
    assert problem is not None
    assert words in problem
    brain = load_brain(write_brain({BEAT: beat(schedule)}))
    [skip] = brain.skips
    assert (skip.path, skip.line) == (BEAT, 3)
    assert skip.reason.startswith(f"'schedule': '{schedule.strip()}'")
    assert words in skip.reason
    assert brain.entity("heartbeat", "daily") is None


def test_the_message_says_what_each_wrong_field_takes() -> None:
    problem = cron_problem("0 25 * * 9")
    assert problem == (
        "'0 25 * * 9': the hour field is '25', which is not an hour (it takes 0-23); the day "
        "of week field is '9', which is not a day of week (it takes 0-7 (0 and 7 are Sunday) "
        "or SUN-SAT) — each field is a value, a list (1,15), a range (1-5), a step (*/15) or *"
    )


def test_a_broken_schedule_costs_only_its_own_file(write_brain: WriteBrain) -> None:
    brain = load_brain(
        write_brain(
            {
                BEAT: beat("99 99 * * *"),
                "features/desk/weekly.heartbeat.md": beat("0 9 * * 1"),
            }
        )
    )
    assert [s.path for s in brain.skips] == [BEAT]
    assert brain.entity("heartbeat", "weekly") is not None


def test_each_distinct_schedule_is_checked_once(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    import croniter

    checked: list[str] = []
    real = croniter.croniter.is_valid

    def counting(expression: str) -> bool:
        checked.append(expression)
        return bool(real(expression))

    monkeypatch.setattr(croniter.croniter, "is_valid", counting)
    cron_problem.cache_clear()
    files: dict[str, str | bytes] = {
        f"features/desk/b{n}.heartbeat.md": beat("7 7 * * 1-5") for n in range(6)
    }
    files["features/desk/wrong.heartbeat.md"] = beat("99 7 * * *")
    files["features/desk/wrong2.heartbeat.md"] = beat("99 7 * * *")
    root = write_brain(files)
    first = load_brain(root)
    assert len(first.entities) == 6
    # Five fields checked one at a time, for each of the two distinct schedules.
    assert len(checked) == 10
    second = load_brain(root)
    assert len(checked) == 10
    assert [s.reason for s in second.skips] == [s.reason for s in first.skips]
