"""Feature contexts: unreached contexts, unknown reach entries, ask without a description."""

from __future__ import annotations

from tests.conftest import WriteBrain
from tests.doctor.brains import ACCESS, BEAT, ROLE, doctor, of, only

ARCHIVE = "features/desk/archive.context.md"
ASK = "---\ndescription: Old tickets.\nwhen: [ask]\n---\nHistory.\n"


def test_a_context_nothing_reaches_warns(write_brain: WriteBrain) -> None:
    finding = only(doctor(write_brain, {ARCHIVE: ASK}), "context.unreached")
    assert (finding.level, finding.file, finding.line) == ("warn", ARCHIVE, None)
    assert "so it reaches no turn — move it beside the entity it is for" in finding.message


def test_a_role_listing_it_reaches_it(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: ['*']\ncapabilities: [context:read]\n---\nHi.\n"
    assert doctor(write_brain, {ARCHIVE: ASK, ROLE: role}).findings == ()


def test_a_chat_binding_reaches_it(write_brain: WriteBrain) -> None:
    access = 'bots:\n  desk:\n    chats:\n      "tg:chat:-1":\n        contexts: { archive: }\n'
    assert doctor(write_brain, {ARCHIVE: ASK, ACCESS: access}).findings == ()


def test_an_entity_reach_reaches_it(write_brain: WriteBrain) -> None:
    beat = "---\nschedule: '0 8 * * *'\nagent: support\nreach: [digest, archive]\n---\nGo.\n"
    assert doctor(write_brain, {ARCHIVE: ASK, BEAT: beat}).findings == ()


def test_run_unreached_names_the_line_of_run(write_brain: WriteBrain) -> None:
    moved = {
        "features/desk/digest.context.md": None,
        "features/desk/night/digest.context.md": "---\nwhen: [run]\n---\nList.\n",
    }
    finding = only(doctor(write_brain, moved), "context.run-unreached")
    assert (finding.level, finding.file, finding.line) == (
        "warn",
        "features/desk/night/digest.context.md",
        2,
    )
    assert "no run ever carries it" in finding.message


def test_an_unreached_context_is_not_also_run_unreached(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket]\ncapabilities: [context:read]\n---\nHi.\n"
    report = doctor(write_brain, {ROLE: role, BEAT: None})
    assert [f.check for f in report.findings] == ["context.unreached"]
    assert report.findings[0].subject == "context 'digest'"


def test_a_reach_entry_naming_no_context_fails(write_brain: WriteBrain) -> None:
    beat = (
        "---\nschedule: '0 8 * * *'\nagent: support\nreach:\n  - digest\n"
        "  - { context: tickt, entity: T-1 }\n---\nGo.\n"
    )
    finding = only(doctor(write_brain, {BEAT: beat}), "reach.unknown")
    assert (finding.level, finding.file, finding.line) == ("fail", BEAT, 6)
    assert "reaches 'tickt', but no context is named 'tickt' (did you mean 'ticket'?)" in (
        finding.message
    )


def test_a_reach_entry_of_a_switched_off_feature_says_so(write_brain: WriteBrain) -> None:
    beat = "---\nschedule: '0 8 * * *'\nagent: support\nreach: [digest, promo]\n---\nGo.\n"
    report = doctor(
        write_brain,
        {
            BEAT: beat,
            "features/old/FEATURE.md": "---\nenabled: false\n---\n",
            "features/old/promo.context.md": "---\nwhen: [run]\n---\nPromo.\n",
        },
    )
    [finding] = of(report, "reach.unknown")
    assert "'promo' belongs to feature 'old', which is switched off" in finding.message


def test_an_ask_context_without_a_description_warns(write_brain: WriteBrain) -> None:
    role = "---\ncontexts: [ticket, digest, archive]\ncapabilities: [context:read]\n---\nHi.\n"
    report = doctor(write_brain, {ARCHIVE: "---\nwhen: [chat, ask]\n---\nOld.\n", ROLE: role})
    finding = only(report, "context.ask-description")
    assert (finding.level, finding.file, finding.line) == ("warn", ARCHIVE, 2)
    assert "add one saying what it is for" in finding.message
