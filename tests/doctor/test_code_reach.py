"""Doctor on what brain code is handed: secrets in MANIFEST `code.env`, and queries that
name a tenant's table by its schema."""

from __future__ import annotations

import pytest

from tests.conftest import WriteBrain
from tests.doctor.brains import doctor, of, only

MANIFEST = "constitution/MANIFEST.yaml"
CODE = "features/desk/ticket.context.py"


@pytest.mark.parametrize(
    ("name", "said"),
    [
        pytest.param("OPENAI_API_KEY", "looks like a secret", id="api-key"),
        pytest.param("GITHUB_TOKEN", "looks like a secret", id="token"),
        pytest.param("PGPASSWORD", "looks like a secret", id="password"),
        pytest.param("DATABASE_URL", "looks like a secret", id="database-url"),
        pytest.param("SENTRY_DSN", "looks like a secret", id="dsn"),
        pytest.param("KEEL_SERVE_TOKEN", "Keel never passes its own KEEL_* variables", id="keel"),
    ],
)
def test_a_declared_variable_that_looks_like_a_secret_warns(
    write_brain: WriteBrain, name: str, said: str
) -> None:
    manifest = f"name: desk\ncode:\n  network: false\n  env:\n    - TZ_REGION\n    - {name}\n"
    finding = only(doctor(write_brain, {MANIFEST: manifest}), "code.env")
    assert (finding.level, finding.file, finding.line) == ("warn", MANIFEST, 6)
    assert finding.message.startswith(f"code.env {'names' if 'KEEL' in name else 'passes'} {name}")
    assert said in finding.message


def test_plain_declared_variables_are_fine(write_brain: WriteBrain) -> None:
    manifest = "code: { env: [BRAIN_REGION, HTTP_PROXY, TZ] }\n"
    assert doctor(write_brain, {MANIFEST: manifest}).findings == ()


QUERIES = '''\
from keel.code import define_context

CARD = """
SELECT t.subject
FROM main.tickets AS t
WHERE t.ticket_id = :id
"""


def render(ticket, ctx):
    ctx.query("SELECT * FROM queue")
    ctx.query('SELECT 1 FROM public."ticket_card"')
    return [{"key": "card", "text": str(ctx.query(CARD, {"id": ticket}))}]


context = define_context(render=render)
'''


def test_a_query_naming_a_tenant_table_by_its_schema_warns(write_brain: WriteBrain) -> None:
    report = doctor(
        write_brain,
        {MANIFEST: "tenancy: { context: ticket, column: ticket_id }\n", CODE: QUERIES},
    )
    found = [(f.level, f.file, f.line, f.subject) for f in of(report, "code.query")]
    assert found == [
        ("warn", CODE, 5, "context 'ticket'"),
        ("warn", CODE, 12, "context 'ticket'"),
    ]
    first, second = of(report, "code.query")
    assert first.message.startswith(
        "a query names main.tickets, which has the tenant's column ticket_id: in a room "
        "pinned to a tenant Keel refuses it"
    )
    assert first.message.endswith("write tickets")
    assert 'public."ticket_card"' in second.message
    # queue has no ticket_id: nothing to keep to a tenant, nothing to say.
    assert {f.check for f in report.findings} <= {"code.query", "tenancy.global-views"}
    # Without a tenancy no room is pinned: a qualified name is a plain read.
    plain = doctor(write_brain, {MANIFEST: "name: desk\n", CODE: QUERIES})
    assert of(plain, "code.query") == []
