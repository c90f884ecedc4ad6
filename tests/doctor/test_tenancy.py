"""Doctor on MANIFEST `tenancy:`: a context that cannot be a tenant, and views left global."""

from __future__ import annotations

import pytest

from tests.conftest import WriteBrain
from tests.doctor.brains import CLEAN, TICKET, doctor, only

MANIFEST = "constitution/MANIFEST.yaml"


@pytest.mark.parametrize(
    ("tenancy", "said"),
    [
        pytest.param(
            "{ context: tickt, column: ticket_id }",
            "names context 'tickt', which does not exist (did you mean 'ticket'?)",
            id="unknown",
        ),
        pytest.param(
            "{ context: digest, column: ticket_id }",
            "names context 'digest', which is keyed by no entity",
            id="unkeyed",
        ),
    ],
)
def test_a_tenancy_context_that_cannot_be_a_tenant_fails(
    write_brain: WriteBrain, tenancy: str, said: str
) -> None:
    finding = only(doctor(write_brain, {MANIFEST: f"tenancy: {tenancy}\n"}), "tenancy.context")
    assert (finding.level, finding.file, finding.line) == ("fail", MANIFEST, 1)
    assert said in finding.message


def test_views_keyed_contexts_carry_without_the_column_are_listed_as_global(
    write_brain: WriteBrain,
) -> None:
    sql = CLEAN["state/001_desk.sql"] + "CREATE VIEW ticket_log AS SELECT subject FROM tickets;\n"
    ticket = CLEAN[TICKET].replace("data:\n", "data:\n  - ticket_log\n")
    report = doctor(
        write_brain,
        {
            MANIFEST: "tenancy: { context: ticket, column: ticket_id }\n",
            "state/001_desk.sql": sql,
            TICKET: ticket,
        },
    )
    finding = only(report, "tenancy.global-views")
    assert finding.level == "note"
    assert "1 view of keyed contexts has no ticket_id column" in finding.message
    assert finding.message.endswith(
        "in a room pinned to one: ticket_log — add the column to keep a view to its ticket, or "
        "leave it global on purpose"
    )


def test_without_tenancy_doctor_says_nothing_of_it(write_brain: WriteBrain) -> None:
    assert doctor(write_brain).findings == ()


def test_a_manifest_that_does_not_load_says_what_it_holds_strict(write_brain: WriteBrain) -> None:
    report = doctor(write_brain, {MANIFEST: "tenancy: { context: ticket }\nstate: rows: 5\n"})
    found = {f.check: f for f in report.findings}
    assert sorted(found) == [
        "approvals.nobody",
        "approvals.strict",
        "entity.skip",
        "tenancy.withheld",
    ]
    assert "nobody may decide a card until the file is fixed" in found["approvals.nobody"].message
    withheld = found["tenancy.withheld"]
    assert (withheld.level, withheld.file) == ("fail", MANIFEST)
    assert "every room with a binding (1 bound in access.yaml: tg:chat:-1)" in withheld.message
    assert "every tool call above safe waits" in found["approvals.strict"].message


def test_a_manifest_broken_elsewhere_holds_its_readable_tenancy_and_approvals(
    write_brain: WriteBrain,
) -> None:
    text = (
        "tenancy: { context: ticket, column: ticket_id }\napprovals: { moderate: none }\n"
        "state: { rows: -3 }\n"
    )
    checks = {f.check for f in doctor(write_brain, {MANIFEST: text}).findings}
    assert "entity.skip" in checks
    assert not checks & {"tenancy.withheld", "approvals.strict"}


def test_a_tenancy_context_whose_file_failed_names_the_failure(write_brain: WriteBrain) -> None:
    files = {
        MANIFEST: "tenancy: { context: ticket, column: ticket_id }\n",
        TICKET: CLEAN[TICKET].replace("when:", "whne:"),
    }
    [finding] = [f for f in doctor(write_brain, files).findings if f.check == "tenancy.context"]
    assert "whose file did not load" in finding.message
    assert "only rooms bound to 'ticket' by name keep to their tenant's rows" in finding.message
