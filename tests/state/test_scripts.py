"""Reading state files as statements: where each ends, and what a `CREATE` makes."""

from __future__ import annotations

import pytest

from keel.brain.specs import SqlFile
from keel.state.scripts import Created, created_by, parsed, statements, views_defined


def test_statements_split_where_sqlite_says_a_statement_ends() -> None:
    script = (
        "-- a dump wraps itself in a transaction\n"
        "BEGIN TRANSACTION;\n"
        "CREATE TABLE a (x TEXT DEFAULT ';'); CREATE TABLE b (y TEXT);\n"
        "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n"
        "  INSERT INTO b VALUES ('x;y');\n"
        "END;\n"
        "COMMIT;\n"
        "-- a trailing comment\n"
    )
    found = [(line, sql.strip()) for line, sql in statements(script)]
    assert found == [
        (3, "CREATE TABLE a (x TEXT DEFAULT ';');"),
        (3, "CREATE TABLE b (y TEXT);"),
        (4, "CREATE TRIGGER t AFTER INSERT ON a BEGIN\n  INSERT INTO b VALUES ('x;y');\nEND;"),
    ]


@pytest.mark.parametrize(
    ("statement", "expected"),
    [
        pytest.param(
            "CREATE TABLE Tickets (id TEXT)",
            ("table", "tickets", None, "Tickets"),
            id="a bare name is folded",
        ),
        pytest.param(
            '-- the card\nCREATE VIEW "Ticket ""Card""" AS SELECT 1',
            ("view", 'Ticket "Card"', None, '"Ticket ""Card"""'),
            id="a quoted name is kept",
        ),
        pytest.param(
            "create or replace view app.open_tickets as select 1",
            ("view", "open_tickets", "app", "app.open_tickets"),
            id="or replace, schema-qualified",
        ),
        pytest.param(
            "CREATE TABLE IF NOT EXISTS [marks] (n)",
            ("table", "marks", None, "[marks]"),
            id="if not exists, bracketed",
        ),
        pytest.param(
            "CREATE UNIQUE INDEX ix_a ON a (x)",
            ("index", "ix_a", None, "ix_a"),
            id="unique index",
        ),
        pytest.param(
            "CREATE TRIGGER `t` AFTER INSERT ON a BEGIN SELECT 1; END",
            ("trigger", "t", None, "`t`"),
            id="trigger, backquoted",
        ),
        pytest.param(
            "CREATE VIRTUAL TABLE docs USING fts5(body)",
            ("table", "docs", None, "docs"),
            id="virtual table",
        ),
    ],
)
def test_created_by_reads_the_kind_and_name(
    statement: str, expected: tuple[str, str, str | None, str]
) -> None:
    made = created_by(statement)
    assert made is not None
    assert (made.kind, made.name, made.schema, made.written) == expected


@pytest.mark.parametrize(
    "statement",
    [
        pytest.param("INSERT INTO a VALUES (1)", id="insert"),
        pytest.param("DROP VIEW v", id="drop"),
        pytest.param("CREATE SEQUENCE s", id="sequence"),
        pytest.param("ALTER TABLE a ADD COLUMN y", id="alter"),
    ],
)
def test_created_by_is_none_for_other_statements(statement: str) -> None:
    assert created_by(statement) is None


def test_if_not_exists_is_marked() -> None:
    made = created_by("CREATE TABLE IF NOT EXISTS marks (n)")
    assert made is not None
    assert made.if_not_exists
    plain = created_by("CREATE TABLE marks (n)")
    assert plain is not None
    assert not plain.if_not_exists


def test_temporary_and_materialized_views_are_marked() -> None:
    assert created_by("CREATE TEMP VIEW v AS SELECT 1") == Created(
        kind="view", name="v", schema=None, written="v", line=1, temporary=True
    )
    made = created_by("CREATE MATERIALIZED VIEW m AS SELECT 1")
    assert made is not None
    assert made.materialized


def test_statements_know_their_line_and_head() -> None:
    file = SqlFile(
        path="state/1.sql",
        text="CREATE TABLE t (x TEXT);\n\nDROP VIEW IF EXISTS v;\nCREATE VIEW v AS SELECT x FROM t;\n",
    )
    [table, drop, view] = parsed(file)
    assert (table.line, table.head, table.drops_a_view) == (1, "CREATE TABLE t (x ...", False)
    assert (drop.line, drop.drops_a_view, drop.creates) == (3, True, None)
    assert view.creates is not None
    assert (view.line, view.creates.kind, view.creates.line) == (4, "view", 4)


def test_views_defined_names_the_file_of_each_view() -> None:
    files = [
        SqlFile(path="state/1.sql", text="CREATE TABLE t (x);\nCREATE VIEW a AS SELECT x FROM t;"),
        SqlFile(path="state/2.sql", text="CREATE VIEW B AS SELECT 1;\n"),
    ]
    assert dict(views_defined(files)) == {"a": "state/1.sql", "b": "state/2.sql"}
