"""Every numeric setting has both ends bounded, and a yes/no value is never a number.

A value at its limit loads; one past it skips its file with a message naming the key, the
value seen (shortened when huge) and the limit. The limits are those of
`keel.brain.limits`, so a change there is a change here.
"""

from __future__ import annotations

import pytest

from keel.brain import Brain, load_brain
from keel.brain import limits as bounds
from tests.conftest import WriteBrain

CONTEXT = "features/a/x.context.md"
ROLE = "features/a/r.agent.md"
MANIFEST = "constitution/MANIFEST.yaml"


def context(front: str) -> dict[str, str]:
    return {CONTEXT: f"---\nwhen: [run]\n{front}\n---\nBody.\n"}


def role(front: str) -> dict[str, str]:
    return {ROLE: f"---\ncontexts: []\n{front}\n---\nYou.\n"}


def manifest(text: str) -> dict[str, str]:
    return {MANIFEST: text + "\n"}


# (files for a value, the key as messages name it, its range)
SETTINGS = [
    pytest.param(lambda v: context(f"chars: {v}"), "chars", bounds.CHARS, id="context-chars"),
    pytest.param(lambda v: context(f"keep: {v}"), "keep", bounds.KEEP, id="context-keep"),
    pytest.param(
        lambda v: role(f"contexts_budget: {{chars: {v}}}"),
        "contexts_budget.chars",
        bounds.CHARS,
        id="role-chars",
    ),
    pytest.param(
        lambda v: manifest(f"contexts: {{maxActive: {v}}}"),
        "contexts.maxActive",
        bounds.MAX_ACTIVE,
        id="max-active",
    ),
    pytest.param(
        lambda v: manifest(f"contexts: {{turnChars: {v}}}"),
        "contexts.turnChars",
        bounds.TURN_CHARS,
        id="turn-chars",
    ),
    pytest.param(
        lambda v: manifest(f"contexts: {{keep: {v}}}"), "contexts.keep", bounds.KEEP, id="keep"
    ),
    pytest.param(
        lambda v: manifest(f"contexts: {{codeTimeoutMs: {v}}}"),
        "contexts.codeTimeoutMs",
        bounds.CODE_TIMEOUT_MS,
        id="code-timeout",
    ),
    pytest.param(
        lambda v: manifest(f"state: {{rows: {v}}}"), "state.rows", bounds.STATE_ROWS, id="rows"
    ),
    pytest.param(
        lambda v: manifest(f"state: {{readTimeoutMs: {v}}}"),
        "state.readTimeoutMs",
        bounds.STATE_READ_TIMEOUT_MS,
        id="read-timeout",
    ),
    pytest.param(
        lambda v: manifest(f"messageOrigins: {{retentionDays: {v}}}"),
        "messageOrigins.retentionDays",
        bounds.RETENTION_DAYS,
        id="retention",
    ),
    pytest.param(
        lambda v: manifest(f"contentProbe: {{context: {v}}}"),
        "contentProbe.context",
        bounds.CONTENT_PROBE_SECONDS,
        id="content-probe",
    ),
    pytest.param(
        lambda v: manifest(f"model: {{window: {v}}}"),
        "model.window",
        bounds.MODEL_WINDOW,
        id="window",
    ),
    pytest.param(
        lambda v: role(f"model: {{output_reserve: {v}}}"),
        "model.output_reserve",
        bounds.OUTPUT_RESERVE,
        id="output-reserve",
    ),
    pytest.param(
        lambda v: role(f"model: {{input_allocation: {v}}}"),
        "model.input_allocation",
        bounds.INPUT_ALLOCATION,
        id="input-allocation",
    ),
    pytest.param(
        lambda v: manifest(f"sections: {{history: {v}}}"),
        "sections.history",
        bounds.SECTION_BUDGET,
        id="manifest-section",
    ),
    pytest.param(
        lambda v: role(f"sections: {{render.queue: {v}}}"),
        "sections.render.queue",
        bounds.SECTION_BUDGET,
        id="role-section",
    ),
]


def load(write_brain: WriteBrain, files: dict[str, str]) -> Brain:
    return load_brain(write_brain(dict[str, str | bytes](files)))


def only_skip(brain: Brain) -> str:
    [skip] = brain.skips
    return skip.reason


@pytest.mark.parametrize(("files", "key", "allowed"), SETTINGS)
def test_a_setting_at_either_end_of_its_range_loads(
    write_brain: WriteBrain, files: object, key: str, allowed: bounds.Range
) -> None:
    assert callable(files)
    for value in (allowed.low, allowed.high):
        brain = load(write_brain, files(value))
        assert brain.skips == (), (key, value)


@pytest.mark.parametrize(("files", "key", "allowed"), SETTINGS)
def test_a_setting_past_its_range_skips_its_file_naming_key_value_and_limit(
    write_brain: WriteBrain, files: object, key: str, allowed: bounds.Range
) -> None:
    assert callable(files)
    above = only_skip(load(write_brain, files(allowed.high + 1)))
    assert above == (
        f"'{key}' is {allowed.high + 1}, above the limit of {allowed.high:,} "
        "(docs/limits.md) — use a smaller value"
    )
    below = only_skip(load(write_brain, files(allowed.low - 1)))
    assert below == (
        f"'{key}' is {allowed.low - 1}, below the minimum of {allowed.low:,} "
        "(docs/limits.md) — use a larger value"
    )


@pytest.mark.parametrize(("files", "key", "allowed"), SETTINGS)
@pytest.mark.parametrize("word", ["true", "false", "yes"])
def test_a_yes_no_value_is_not_a_number(
    write_brain: WriteBrain, files: object, key: str, allowed: bounds.Range, word: str
) -> None:
    assert callable(files)
    assert allowed.low <= 1
    reason = only_skip(load(write_brain, files(word)))
    if word == "yes":  # YAML 1.2 reads `yes` as text
        assert f"'{key}' input should be a valid" in reason
    else:
        assert reason == f"'{key}': {word} is a yes/no value, not a number — write a number"


@pytest.mark.parametrize(
    ("text", "key", "shown"),
    [
        pytest.param(
            "state: { rows: 9223372036854775808 }",
            "state.rows",
            "9223372036854775808",
            id="rows-2**63",
        ),
        pytest.param(
            "contexts: { keep: 12345678901234567890 }",
            "contexts.keep",
            "12345678901234567890",
            id="keep-20-digits",
        ),
        pytest.param(
            "messageOrigins: { retentionDays: 99999999999 }",
            "messageOrigins.retentionDays",
            "99999999999",
            id="retention",
        ),
        pytest.param(
            "model: { window: " + "9" * 60 + " }",
            "model.window",
            "999999...999 (60 digits)",
            id="window",
        ),
    ],
)
def test_values_that_once_crashed_every_turn_are_refused_at_load(
    write_brain: WriteBrain, text: str, key: str, shown: str
) -> None:
    brain = load(write_brain, manifest(text))
    reason = only_skip(brain)
    assert reason.startswith(f"'{key}' is {shown}, above the limit of"), reason
    assert brain.manifest.broken is not None, "the MANIFEST is skipped and defaults apply"


@pytest.mark.parametrize(
    ("model", "message"),
    [
        pytest.param(
            "{window: 1000, output_reserve: 1000}",
            "'model': output_reserve 1,000 leaves nothing of window 1,000 for the input",
            id="reserve-fills-window",
        ),
        pytest.param(
            "{window: 1000, output_reserve: 100, input_allocation: 901}",
            "'model': input_allocation 901 is more than window 1,000 minus output_reserve 100",
            id="allocation-too-big",
        ),
        pytest.param(
            "{window: 1000, input_allocation: 1001}",
            "'model': input_allocation 1,001 is more than window 1,000 minus output_reserve 0",
            id="allocation-over-window",
        ),
    ],
)
@pytest.mark.parametrize(
    "files", [pytest.param(manifest, id="manifest"), pytest.param(role, id="role")]
)
def test_the_model_limits_of_one_file_must_fit_together(
    write_brain: WriteBrain, model: str, message: str, files: object
) -> None:
    assert callable(files)
    assert only_skip(load(write_brain, files(f"model: {model}"))).startswith(message)


def test_model_limits_that_fit_load(write_brain: WriteBrain) -> None:
    brain = load(
        write_brain, manifest("model: {window: 1000, output_reserve: 100, input_allocation: 900}")
    )
    assert brain.skips == ()
    assert (brain.manifest.model.window, brain.manifest.model.input_allocation) == (1000, 900)


@pytest.mark.parametrize(
    ("files", "message"),
    [
        pytest.param(
            {
                "constitution/access.yaml": (
                    f"bots:\n  nova:\n    chats:\n      g: {{contexts: {{c: {'k' * 201}}}}}\n"
                )
            },
            "'bots.nova.chats.g.contexts.c' string should have at most 200 characters",
            id="access-entity-key",
        ),
        pytest.param(
            {
                "features/a/h.hook.md": f"---\nevent: e\nreach: [{{context: c, entity: {'k' * 201}}}]\n---\n"
            },
            "'reach.0.entity' string should have at most 200 characters",
            id="reach-entity-key",
        ),
        pytest.param(
            role(f"sections: {{{'s' * 201}: 10}}"),
            "string should have at most 200 characters",
            id="section-id",
        ),
    ],
)
def test_keys_and_ids_have_a_length_bound(
    write_brain: WriteBrain, files: dict[str, str], message: str
) -> None:
    assert message in only_skip(load(write_brain, files))


def test_a_brain_with_every_setting_at_its_limit_loads(write_brain: WriteBrain) -> None:
    text = (
        f"contexts: {{chars: {bounds.CHARS.high}, maxActive: {bounds.MAX_ACTIVE.high}, "
        f"turnChars: {bounds.TURN_CHARS.high}, keep: {bounds.KEEP.high}, "
        f"codeTimeoutMs: {bounds.CODE_TIMEOUT_MS.high}}}\n"
        f"state: {{rows: {bounds.STATE_ROWS.high}, "
        f"readTimeoutMs: {bounds.STATE_READ_TIMEOUT_MS.high}}}\n"
        f"messageOrigins: {{retentionDays: {bounds.RETENTION_DAYS.high}}}\n"
        f"contentProbe: {{context: {bounds.CONTENT_PROBE_SECONDS.high}}}\n"
        f"model: {{window: {bounds.MODEL_WINDOW.high}, output_reserve: 1, "
        f"input_allocation: {bounds.MODEL_WINDOW.high - 1}}}\n"
        f"sections: {{history: {bounds.SECTION_BUDGET.high}}}"
    )
    brain = load(write_brain, manifest(text))
    assert brain.skips == ()
    assert brain.manifest.state_rows == bounds.STATE_ROWS.high
    assert brain.manifest.state_read_timeout_ms == bounds.STATE_READ_TIMEOUT_MS.high
    assert brain.manifest.retention_days == bounds.RETENTION_DAYS.high
