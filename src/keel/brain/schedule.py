"""A heartbeat's `schedule`: five cron fields, checked when the file loads.

The check is croniter's, the parser the runs' scheduler uses, so a schedule that loads is
one the scheduler takes. A schedule that is wrong fails its file with the field that is
wrong (minute, hour, day of month, month, day of week), the value seen and what that field
takes. Only the five-field form is read: a sixth field would be seconds to one cron
dialect and years to another, and an `@daily` shorthand hides what it means. A schedule
that can never fire (`0 0 31 2 *`, the 31st of February) is refused as well: it loads
today and runs never.

croniter is imported on the first check, not with the brain package: a brain without
heartbeats never pays for it. A check is a pure function of the text and costs croniter
several expansions, while a brain repeats a few schedules over many heartbeats: each
distinct schedule is checked once per process.
"""

from __future__ import annotations

import functools
from datetime import UTC, datetime
from typing import Final

FIELDS: Final = ("minute", "hour", "day of month", "month", "day of week")
# What each field takes, for the message that names a wrong one.
TAKES: Final = {
    "minute": "0-59",
    "hour": "0-23",
    "day of month": "1-31, or L for the last day",
    "month": "1-12 or JAN-DEC",
    "day of week": "0-7 (0 and 7 are Sunday) or SUN-SAT",
}
FORMS: Final = "a value, a list (1,15), a range (1-5), a step (*/15) or *"
EXAMPLE: Final = "'0 19 * * *' (every day at 19:00)"
# The shorthands some crons read, each as the five fields it stands for.
SHORTHANDS: Final = {
    "@yearly": "0 0 1 1 *",
    "@annually": "0 0 1 1 *",
    "@monthly": "0 0 1 * *",
    "@weekly": "0 0 * * 0",
    "@daily": "0 0 * * *",
    "@midnight": "0 0 * * *",
    "@hourly": "0 * * * *",
}
# Where the never-fires check starts: a fixed instant, so loading never reads the clock.
_EPOCH = datetime(2000, 1, 1, tzinfo=UTC)


@functools.lru_cache(maxsize=4096)
def cron_problem(schedule: str) -> str | None:
    """Why `schedule` is not a five-field cron schedule that fires, or None when it is."""
    text = " ".join(schedule.split())
    if text.startswith("@"):
        fields = SHORTHANDS.get(text.lower())
        fix = f"write its five fields, '{fields}'" if fields else f"write five fields, {EXAMPLE}"
        return f"'{_short(text)}' is a shorthand Keel does not read — {fix}"
    parts = text.split(" ") if text else []
    if len(parts) != len(FIELDS):
        extra = " (a sixth field, for seconds or years, is not read)" if len(parts) == 6 else ""
        return (
            f"'{_short(text)}' has {len(parts)} field(s){extra}; a schedule has five — "
            f"minute, hour, day of month, month, day of week — e.g. {EXAMPLE}"
        )
    from croniter import croniter  # here: the brain package loads without it

    wrong = []
    for index, (name, value) in enumerate(zip(FIELDS, parts, strict=True)):
        alone = ["*"] * len(FIELDS)
        alone[index] = value
        if not croniter.is_valid(" ".join(alone)):
            article = "an" if name == "hour" else "a"
            wrong.append(
                f"the {name} field is '{_short(value)}', which is not {article} {name} "
                f"(it takes {TAKES[name]})"
            )
    if wrong:
        return f"'{_short(text)}': {'; '.join(wrong)} — each field is {FORMS}"
    return _whole_problem(text)


def _whole_problem(text: str) -> str | None:
    """What is wrong with a schedule whose every field is right on its own."""
    from croniter import CroniterBadDateError, CroniterError, croniter

    try:
        croniter(text, _EPOCH).get_next(datetime)
    except CroniterBadDateError:
        return (
            f"'{text}' never fires: no date matches its day of month and month together "
            "(the 31st of a 30-day month, the 30th of February) — pick a day every chosen "
            "month has, or L for the last day"
        )
    except CroniterError as exc:
        return f"'{text}' is not a schedule croniter can read ({exc}) — e.g. {EXAMPLE}"
    return None


def _short(value: str, width: int = 60) -> str:
    return value if len(value) <= width else value[: width - 3] + "..."
