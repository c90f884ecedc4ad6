"""Views a context carries: shared, missing, bad `by` columns, keys that never come."""

from __future__ import annotations

import pytest

from keel.brain import load_brain
from keel.doctor import run_doctor
from keel.state.database import connect
from keel.state.schema import read_schema
from tests.conftest import WriteBrain
from tests.doctor.brains import ACCESS, CLEAN, TICKET, doctor, only

DIGEST = "features/desk/digest.context.md"


def _ticket(when: str, data: str = "  - { view: ticket_card, by: ticket_id }\n") -> str:
    return f"---\ndescription: One ticket.\nentity: ticket id\nwhen: {when}\ndata:\n{data}---\nT.\n"


def test_a_view_claimed_by_two_contexts_warns_once_naming_both(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {
            DIGEST: "---\nwhen: [run]\ndata: [queue]\n---\nList.\n",
            "features/desk/stats.context.md": "---\nwhen: [run]\ndata:\n  - queue\n---\nS.\n",
        },
    )
    finding = only(report, "view.shared")
    assert (finding.level, finding.file, finding.line, finding.subject) == (
        "warn",
        DIGEST,
        3,
        "view 'queue'",
    )
    assert (
        "claimed by 2 contexts: 'digest' (features/desk/digest.context.md), "
        "'stats' (features/desk/stats.context.md)"
    ) in finding.message


def test_one_context_naming_a_view_twice_does_not_share_it(write_brain: WriteBrain) -> None:
    data = "  - ticket_card\n  - { view: ticket_card, by: ticket_id }\n"
    assert doctor(write_brain, {TICKET: _ticket("[chat, ask]", data)}).findings == ()


def test_a_view_the_database_lacks_fails(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {TICKET: _ticket("[chat]", "  - queue\n  - ticket_crd\n")})
    finding = only(report, "view.missing")
    assert (finding.level, finding.file, finding.line) == ("fail", TICKET, 7)
    assert "carries view 'ticket_crd', which the database lacks (did you mean 'ticket_card'?)" in (
        finding.message
    )


def test_a_view_defined_in_a_file_the_database_has_not_applied_says_to_apply_it(
    write_brain: WriteBrain,
) -> None:
    brain = load_brain(write_brain(dict(CLEAN)))
    database = connect("sqlite://", brain)  # applies 001 only
    (brain.root / "state" / "002_more.sql").write_text(
        "CREATE VIEW ticket_log AS SELECT ticket_id FROM tickets;\n"
    )
    (brain.root / TICKET).write_text(_ticket("[chat]", "  - ticket_log\n"))
    report = run_doctor(load_brain(brain.root), schema=read_schema(database))
    finding = only(report, "view.missing")
    assert "state/002_more.sql defines it but this database has not applied it: run " in (
        finding.message
    )
    assert "keel state apply BRAIN" in finding.message


def test_a_by_column_the_view_lacks_fails(write_brain: WriteBrain) -> None:
    data = "  - { view: ticket_card, by: ticket_no }\n"
    finding = only(doctor(write_brain, {TICKET: _ticket("[chat]", data)}), "view.by-column")
    assert (finding.level, finding.file, finding.line) == ("fail", TICKET, 6)
    assert "by column 'ticket_no', which the view lacks (did you mean 'ticket_id'?)" in (
        finding.message
    )
    assert "its columns are ticket_id, subject" in finding.message


@pytest.mark.parametrize(
    ("note", "said"),
    [
        pytest.param("cannot reach the database x: refused", "refused", id="with-note"),
        pytest.param(None, "no database was given", id="without-note"),
    ],
)
def test_without_a_database_one_note_says_the_views_were_not_checked(
    write_brain: WriteBrain, note: str | None, said: str
) -> None:
    data = "  - { view: ticket_card, by: ticket_no }\n  - nothing_here\n"
    report = doctor(write_brain, {TICKET: _ticket("[chat]", data)}, database=False, db_note=note)
    finding = only(report, "view.unchecked")
    assert (finding.level, finding.file, finding.line) == ("note", None, None)
    assert finding.message.startswith("did not check 3 view name(s)")
    assert said in finding.message
    assert not report.failed


@pytest.mark.parametrize(
    "when",
    [
        pytest.param("[always]", id="always"),
        pytest.param("[run]", id="run-from-a-plain-heartbeat"),
    ],
)
def test_a_by_view_no_link_can_key_warns(write_brain: WriteBrain, when: str) -> None:
    report = doctor(write_brain, {TICKET: _ticket(when)})
    finding = only(report, "view.by-unkeyed")
    assert (finding.level, finding.file, finding.line) == ("warn", TICKET, 6)
    assert "filters 'ticket_card' by its entity key" in finding.message
    assert "add reply or ask to `when:`, gate a hook that reaches it, or drop `by`" in (
        finding.message
    )


GATE = "from keel.code import define_gate\n\nhook = define_gate(lambda event, ctx: None)\n"
CODE = "from keel.code import define_context\n\ncontext = define_context(match=lambda t: None)\n"
PIPELINE = (
    "from keel.code import define_pipeline\n\n\n"
    "async def run(ctx, vars):\n    return None\n\n\npipeline = define_pipeline(run)\n"
)


@pytest.mark.parametrize(
    ("when", "extra"),
    [
        pytest.param("[reply]", {}, id="reply"),
        pytest.param("[chat]", {}, id="chat"),
        pytest.param("[ask]", {}, id="ask"),
        pytest.param(
            "[run]",
            {
                "features/desk/escalate.hook.md": "---\nevent: e\nagent: support\n---\nGo.\n",
                "features/desk/escalate.hook.py": GATE,
            },
            id="run-from-a-gated-hook",
        ),
        pytest.param(
            "[run]",
            {
                "features/desk/first.scenario.md": "---\nagent: support\n---\nGo.\n",
                "features/desk/first.pipeline.py": PIPELINE,
            },
            id="run-from-a-pipeline",
        ),
        pytest.param("[run]", {"features/desk/ticket.context.py": CODE}, id="run-with-code"),
        pytest.param(
            "[run]",
            {
                "features/desk/daily.heartbeat.md": (
                    "---\nschedule: '0 8 * * *'\nagent: support\n"
                    "reach: [digest, { context: ticket, entity: T-1 }]\n---\nGo.\n"
                )
            },
            id="run-with-a-keyed-reach-entry",
        ),
    ],
)
def test_a_by_view_a_link_can_key_is_fine(
    write_brain: WriteBrain, when: str, extra: dict[str, str]
) -> None:
    assert doctor(write_brain, {TICKET: _ticket(when), **extra}).findings == ()


def test_a_by_view_on_a_context_without_entity_warns(write_brain: WriteBrain) -> None:
    ticket = "---\ndescription: T.\nwhen: [chat]\ndata:\n  - queue\n  - { view: ticket_card, by: ticket_id }\n---\nT.\n"
    access = 'bots:\n  desk:\n    chats:\n      "tg:chat:-1":\n        contexts: { ticket: }\n'
    finding = only(doctor(write_brain, {TICKET: ticket, ACCESS: access}), "view.by-without-entity")
    assert (finding.level, finding.file, finding.line) == ("warn", TICKET, 6)
    assert "has no `entity:`, so no link can ever carry a key to it" in finding.message


def test_a_widget_view_the_database_lacks_names_both_places_to_fix(
    write_brain: WriteBrain,
) -> None:
    front = "---\nwhen: [run]\ndata: [queu]\nwidget:\n  view: queu\n  line: subject\n---\nL.\n"
    finding = only(doctor(write_brain, {DIGEST: front}), "view.missing")
    assert (finding.level, finding.file, finding.line) == ("fail", DIGEST, 3)
    assert finding.message.endswith(
        "or fix the name in `data:` and in the widget's `view:` (line 5)"
    ), finding.message
