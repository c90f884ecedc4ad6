"""Chat access: access.yaml bindings and rules naming what the brain does not have."""

from __future__ import annotations

import pytest

from tests.conftest import WriteBrain
from tests.doctor.brains import ACCESS, doctor, only


def _access(rule: str) -> str:
    return 'bots:\n  desk:\n    chats:\n      "tg:chat:-1":\n' + rule


def test_a_binding_of_an_unknown_context_fails(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {ACCESS: _access("        contexts: { tikcet: T-1 }\n")})
    finding = only(report, "access.unknown-context")
    assert (finding.level, finding.file, finding.line) == ("fail", ACCESS, 5)
    assert finding.subject == "bot 'desk' chat 'tg:chat:-1'"
    assert "binds context 'tikcet', but no context is named 'tikcet' (did you mean 'ticket'?)" in (
        finding.message
    )


def test_a_binding_of_a_switched_off_context_says_so(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            ACCESS: _access("        contexts: { promo: }\n"),
            "features/old/FEATURE.md": "---\nenabled: false\n---\n",
            "features/old/promo.context.md": "---\nwhen: [chat]\n---\nPromo.\n",
        },
    )
    finding = only(report, "access.unknown-context")
    assert "belongs to feature 'old', which is switched off" in finding.message


def test_a_keyed_context_bound_without_a_key_warns(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {ACCESS: _access("        contexts:\n          ticket:\n")})
    finding = only(report, "access.missing-key")
    assert (finding.level, finding.file, finding.line) == ("warn", ACCESS, 6)
    assert "binds 'ticket' (keyed by ticket id) with no key" in finding.message
    assert "`ticket: <ticket id>`" in finding.message


def test_a_key_on_a_context_that_names_no_entity_fails(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            ACCESS: _access("        contexts: { ticket: T-1, kb: acme }\n"),
            "features/desk/kb.context.md": "---\nwhen: [chat]\n---\nKB.\n",
        },
    )
    finding = only(report, "access.extra-key")
    assert (finding.level, finding.line) == ("fail", 5)
    assert "binds 'kb' with key 'acme', but 'kb' names no entity" in finding.message


@pytest.mark.parametrize(
    ("text", "line", "subject"),
    [
        pytest.param(
            "bots:\n  desk:\n    default: { role: suport }\n",
            3,
            "bot 'desk' default rule",
            id="default",
        ),
        pytest.param(
            "bots:\n  desk:\n    dm:\n      role: suport\n", 4, "bot 'desk' DM rule", id="dm"
        ),
        pytest.param(
            _access("        role: suport\n"), 5, "bot 'desk' chat 'tg:chat:-1'", id="group"
        ),
    ],
)
def test_a_rule_naming_an_unknown_role_fails(
    write_brain: WriteBrain, text: str, line: int, subject: str
) -> None:
    finding = only(doctor(write_brain, {ACCESS: text}), "access.unknown-role")
    assert (finding.level, finding.file, finding.line, finding.subject) == (
        "fail",
        ACCESS,
        line,
        subject,
    )
    assert "gives role 'suport', but no role is named 'suport' (did you mean 'support'?)" in (
        finding.message
    )


def test_well_formed_bindings_are_fine(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            ACCESS: _access("        role: support\n        contexts: { ticket: T-1, kb: }\n"),
            "features/desk/kb.context.md": "---\nwhen: [chat]\n---\nKB.\n",
        },
    )
    assert report.findings == ()


def test_a_rule_that_did_not_load_fails_under_chat_access_only(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            ACCESS: _access("        contexts: { ticket: T-1 }\n        tilte: Desk\n")
            + '      "tg:chat:-2":\n        role: suport\n'
        },
    )
    assert [f.check for f in report.findings] == ["access.rule", "access.unknown-role"]
    rule = report.findings[0]
    assert (rule.level, rule.file, rule.line, rule.subject) == (
        "fail",
        ACCESS,
        6,
        "bot 'desk' chat 'tg:chat:-1'",
    )
    assert rule.message == (
        "unknown key 'tilte' under 'bots.desk.chats.tg:chat:-1' — did you mean 'title'? — the "
        "rule did not load, so no bot answers in chat 'tg:chat:-1' until it is fixed"
    )


@pytest.mark.parametrize(
    ("text", "subject", "refuses"),
    [
        pytest.param(
            "bots:\n  desk:\n    default: { role: support, contexts: { ticket: T-1 } }\n",
            "bot 'desk' default rule",
            "bot 'desk' answers no chat that has no rule of its own",
            id="default",
        ),
        pytest.param(
            "bots:\n  desk:\n    dm: { role: support, colour: red }\n",
            "bot 'desk' DM rule",
            "bot 'desk' answers no direct message that has no rule of its own",
            id="dm",
        ),
    ],
)
def test_a_template_that_did_not_load_says_what_it_refuses(
    write_brain: WriteBrain, text: str, subject: str, refuses: str
) -> None:
    finding = only(doctor(write_brain, {ACCESS: text}), "access.rule")
    assert (finding.subject, finding.line) == (subject, 3)
    assert finding.message.endswith(f"so {refuses} until it is fixed")


@pytest.mark.parametrize(
    ("text", "line", "reason"),
    [
        pytest.param("bots:\n  desk: [\n", 3, "broken YAML", id="yaml"),
        pytest.param(
            "bots:\n  desk:\n    chat: {}\n",
            3,
            "unknown key 'chat' under 'bots.desk'",
            id="bot-key",
        ),
        pytest.param("", None, "the file is empty", id="empty"),
    ],
)
def test_an_access_yaml_that_did_not_load_fails_once_under_chat_access(
    write_brain: WriteBrain, text: str, line: int | None, reason: str
) -> None:
    finding = only(doctor(write_brain, {ACCESS: text}), "access.file")
    assert (finding.level, finding.file, finding.line, finding.group) == (
        "fail",
        ACCESS,
        line,
        "Chat access",
    )
    assert reason in finding.message
    assert finding.message.endswith(
        "access rules fail closed: until this is fixed, every turn of every bot is refused"
    )
