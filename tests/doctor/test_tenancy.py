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
