"""Reading the database's tables and views into a `Schema`."""

from __future__ import annotations

import pytest
from sqlalchemy import create_engine, text

from keel.errors import StoreError
from keel.state.schema import Schema, read_schema


def test_read_schema_lists_tables_and_views_with_their_columns() -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE TABLE tickets (ticket_id TEXT, subject TEXT, status TEXT)"))
        conn.execute(text("CREATE VIEW open_tickets AS SELECT ticket_id, subject FROM tickets"))
    schema = read_schema(engine)
    assert schema.names == ("open_tickets", "tickets")
    assert schema.has("open_tickets")
    assert schema.has("tickets")
    assert not schema.has("Tickets")
    assert schema.columns("tickets") == ("ticket_id", "subject", "status")
    assert schema.columns("open_tickets") == ("ticket_id", "subject")
    assert schema.columns("nothing") == ()
    assert schema.views == frozenset({"open_tickets"})


def test_an_empty_database_has_an_empty_schema() -> None:
    schema = read_schema(create_engine("sqlite://"))
    assert schema == Schema()
    assert not schema.has("x")


def test_a_view_over_a_missing_table_is_named() -> None:
    engine = create_engine("sqlite://")
    with engine.begin() as conn:
        conn.execute(text("CREATE VIEW orphan AS SELECT a FROM gone"))
    with pytest.raises(StoreError, match=r"cannot read the columns of 'orphan' in sqlite://"):
        read_schema(engine)
