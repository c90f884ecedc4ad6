"""`ctx.query` run by Keel: in the turn's transaction, read only, and pinned to the room's
tenant as views are — on SQLite and PostgreSQL."""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, text

from keel.brain import load_brain
from keel.errors import Refused, StoreError
from keel.link.values import Tenant
from keel.state.database import apply_sql, connect, creates
from keel.state.queries import plain, run_query
from tests.conftest import WriteBrain

STATE = """
CREATE TABLE notes (id TEXT, client_slug TEXT, note TEXT);
INSERT INTO notes VALUES ('n1', 'acme', 'acme note'), ('n2', 'globex', 'globex note'),
    ('n3', NULL, 'agency note');
CREATE TABLE rates (tier TEXT, price INTEGER);
INSERT INTO rates VALUES ('gold', 30), ('silver', 20);
CREATE VIEW client_notes AS SELECT n.id, n.client_slug, r.price FROM notes AS n, rates AS r
    WHERE r.tier = 'gold';
CREATE VIEW note_count AS SELECT COUNT(*) AS notes FROM notes;
"""
ACME = Tenant(column="client_slug", key="acme")
SOON = 30.0


@pytest.fixture
def db(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    brain = load_brain(write_brain({"state/001.sql": STATE}))
    applied = creates(database_url)
    engine = connect(database_url, brain)
    if not applied:
        apply_sql(engine, brain.state_sql)
    yield engine
    engine.dispose()


def _query(
    conn: Connection, sql: str, params: object = None, tenant: Tenant | None = None
) -> list[dict[str, object]]:
    deadline = time.monotonic() + SOON
    return run_query(conn, sql, params, tenant=tenant, deadline=deadline)  # type: ignore[arg-type]


def _ids(rows: list[dict[str, object]]) -> list[object]:
    return [row["id"] for row in rows]


def test_an_unpinned_query_reads_every_row_with_named_parameters(db: Engine) -> None:
    with db.connect() as conn, conn.begin():
        assert _ids(_query(conn, "SELECT id FROM notes ORDER BY id")) == ["n1", "n2", "n3"]
        rows = _query(conn, "SELECT note FROM notes WHERE id = :id", {"id": "n2"})
    assert rows == [{"note": "globex note"}]


def test_a_pinned_query_sees_only_the_tenants_rows_of_every_relation_with_its_column(
    db: Engine,
) -> None:
    with db.connect() as conn, conn.begin():
        assert _ids(_query(conn, "SELECT id FROM notes ORDER BY id", tenant=ACME)) == ["n1"]
        assert _ids(_query(conn, "SELECT id FROM client_notes", tenant=ACME)) == ["n1"]
        joined = _query(
            conn,
            "SELECT n.id, c.price FROM notes AS n JOIN client_notes AS c ON c.id = n.id",
            tenant=ACME,
        )
        assert joined == [{"id": "n1", "price": 30}]
        # A table without the column is not the tenant's: it reads whole, as views do.
        assert len(_query(conn, "SELECT tier FROM rates", tenant=ACME)) == 2
        # The shadows went with the savepoint: the turn's own reads see every row again.
        assert conn.execute(text("SELECT COUNT(*) FROM notes")).scalar_one() == 3


def test_the_same_statement_again_and_again_keeps_to_each_rooms_tenant(db: Engine) -> None:
    """Drivers keep statements they ran often prepared; one prepared outside a pinned room
    must not read past the shadows of a pinned one, nor the other way round."""
    globex = Tenant(column="client_slug", key="globex")
    sql = "SELECT id FROM notes ORDER BY id"
    with db.connect() as conn, conn.begin():
        for _ in range(4):
            assert _ids(_query(conn, sql)) == ["n1", "n2", "n3"]
            assert _ids(_query(conn, sql, tenant=ACME)) == ["n1"]
            assert _ids(_query(conn, sql, tenant=globex)) == ["n2"]


def test_a_room_pinned_to_no_tenant_sees_none_of_the_tenants_rows(db: Engine) -> None:
    nobody = Tenant(column="client_slug", key=None)
    with db.connect() as conn, conn.begin():
        assert _query(conn, "SELECT id FROM notes", tenant=nobody) == []
        assert len(_query(conn, "SELECT tier FROM rates", tenant=nobody)) == 2


def test_a_room_whose_tenancy_is_unknown_reads_nothing(db: Engine) -> None:
    unknown = Tenant(column=None, key=None, withheld="withheld: MANIFEST.yaml did not load")
    refused = pytest.raises(Refused, match=r"refused in this room: withheld: MANIFEST")
    with db.connect() as conn, conn.begin(), refused:
        _query(conn, "SELECT tier FROM rates", tenant=unknown)


def test_the_key_is_bound_never_spliced(db: Engine) -> None:
    odd = Tenant(column="client_slug", key="acme' OR '1'='1")
    with db.connect() as conn, conn.begin():
        assert _query(conn, "SELECT id FROM notes", tenant=odd) == []


def _schema(conn: Connection) -> str:
    if conn.dialect.name == "sqlite":
        return "main"
    return str(conn.execute(text("SELECT current_schema()")).scalar_one())


def test_a_schema_qualified_read_of_a_tenant_relation_is_refused_when_pinned(
    db: Engine,
) -> None:
    with db.connect() as conn, conn.begin():
        schema = _schema(conn)
        qualified = f'SELECT id FROM {schema}."notes"'
        assert len(_query(conn, qualified)) == 3, "outside a pinned room it is a plain read"
        with pytest.raises(Refused, match=rf"reads {schema}\.notes by its schema's name"):
            _query(conn, qualified, tenant=ACME)
        with pytest.raises(Refused, match=r"write client_notes alone"):
            _query(conn, f"SELECT id FROM {schema}.client_notes", tenant=ACME)


def test_a_view_that_reads_tenant_rows_without_the_column_is_refused_when_pinned(
    db: Engine,
) -> None:
    with db.connect() as conn, conn.begin():
        assert _query(conn, "SELECT notes FROM note_count") == [{"notes": 3}]
        with pytest.raises(Refused, match=r"note_count, which has no client_slug column"):
            _query(conn, "SELECT notes FROM note_count", tenant=ACME)


@pytest.mark.parametrize(
    "sql",
    [
        pytest.param("UPDATE notes SET note = 'changed'", id="update"),
        pytest.param("DELETE FROM notes", id="delete"),
        pytest.param("INSERT INTO notes VALUES ('n9', 'acme', 'x')", id="insert"),
        pytest.param("DROP TABLE notes", id="drop"),
        pytest.param("SELECT 1; DELETE FROM notes", id="two-statements"),
        pytest.param("COMMIT", id="commit"),
        pytest.param(
            "WITH gone AS (DELETE FROM notes RETURNING id) SELECT id FROM gone", id="cte-delete"
        ),
    ],
)
def test_a_write_is_refused_and_the_turns_transaction_goes_on(db: Engine, sql: str) -> None:
    with db.connect() as conn, conn.begin():
        conn.execute(text("INSERT INTO rates VALUES ('bronze', 10)"))  # the turn's own write
        with pytest.raises((Refused, StoreError)):
            _query(conn, sql)
        with pytest.raises((Refused, StoreError)):
            _query(conn, sql, tenant=ACME)
        # The turn's transaction is still open and still its own: it writes and commits.
        conn.execute(text("INSERT INTO rates VALUES ('tin', 5)"))
    with db.connect() as conn:
        assert conn.execute(text("SELECT COUNT(*) FROM notes")).scalar_one() == 3
        assert conn.execute(text("SELECT note FROM notes WHERE id = 'n1'")).scalar_one() == (
            "acme note"
        )
        assert conn.execute(text("SELECT COUNT(*) FROM rates")).scalar_one() == 4


def test_the_refusal_says_what_the_statement_would_have_done(db: Engine) -> None:
    with db.connect() as conn, conn.begin():
        if conn.dialect.name == "sqlite":
            with pytest.raises(Refused, match=r"ctx.query only reads: .* would update notes"):
                _query(conn, "UPDATE notes SET note = 'x'")
        else:
            with pytest.raises(StoreError, match=r"syntax error"):
                _query(conn, "UPDATE notes SET note = 'x'")
            with pytest.raises(StoreError, match=r"read-only transaction"):
                _query(conn, "SELECT set_config('transaction_read_only', 'off', true)")


def test_a_query_sees_what_the_turn_wrote_before_it(db: Engine) -> None:
    with db.connect() as conn, conn.begin():
        conn.execute(text("INSERT INTO notes VALUES ('n4', 'acme', 'new this turn')"))
        assert _ids(_query(conn, "SELECT id FROM notes ORDER BY id", tenant=ACME)) == ["n1", "n4"]


def test_a_query_past_the_calls_time_is_stopped(db: Engine) -> None:
    spin = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 100000000) "
        "SELECT COUNT(*) AS c FROM n"
    )
    with db.connect() as conn, conn.begin():
        with pytest.raises(StoreError, match=r"ran past the call's time"):
            run_query(conn, spin, None, tenant=None, deadline=time.monotonic() + 0.2)
        with pytest.raises(Refused, match=r"came after the call's time was up"):
            run_query(conn, "SELECT 1", None, tenant=None, deadline=time.monotonic() - 1)
        assert _query(conn, "SELECT COUNT(*) AS c FROM notes") == [{"c": 3}]


def test_more_rows_than_a_render_can_use_are_refused(db: Engine) -> None:
    many = (
        "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < 10001) "
        "SELECT i FROM n"
    )
    with db.connect() as conn, conn.begin():
        assert len(_query(conn, many.replace("10001", "10000"))) == 10_000
        with pytest.raises(Refused, match=r"more than 10000 rows"):
            _query(conn, many)


@pytest.mark.postgres
def test_a_search_path_that_puts_pg_temp_last_refuses_pinned_queries(
    postgres_url_in_schema: str, write_brain: WriteBrain
) -> None:
    brain = load_brain(write_brain({"state/001.sql": STATE}))
    engine = connect(postgres_url_in_schema, brain)
    apply_sql(engine, brain.state_sql)
    try:
        with engine.connect() as conn, conn.begin():
            schema = _schema(conn)
            conn.execute(text(f'SET LOCAL search_path = "{schema}", pg_temp'))
            with pytest.raises(Refused, match=r"search_path names pg_temp after other schemas"):
                _query(conn, "SELECT id FROM notes", tenant=ACME)
            assert len(_query(conn, "SELECT id FROM notes")) == 3
    finally:
        engine.dispose()


@pytest.mark.parametrize(
    ("value", "shown"),
    [
        pytest.param(Decimal("8000.00"), 8000, id="whole-decimal"),
        pytest.param(Decimal("12.5"), 12.5, id="decimal"),
        pytest.param(Decimal("NaN"), "NaN", id="nan-decimal"),
        pytest.param(float("inf"), "inf", id="inf"),
        pytest.param(datetime(2025, 4, 1, 9, 30, tzinfo=UTC), "2025-04-01T09:30:00+00:00", id="ts"),
        pytest.param(date(2025, 4, 1), "2025-04-01", id="date"),
        pytest.param(timedelta(minutes=90), 5400.0, id="interval"),
        pytest.param(b"\x00\xff", "00ff", id="bytes"),
        pytest.param(memoryview(b"ab"), "6162", id="memoryview"),
        pytest.param([1, Decimal("2")], [1, 2], id="array"),
        pytest.param({"a": date(2025, 1, 2)}, {"a": "2025-01-02"}, id="json"),
        pytest.param(Path("x"), "x", id="other"),
    ],
)
def test_values_come_back_as_json(value: object, shown: object) -> None:
    assert plain(value) == shown
