"""Database fixtures for the whole suite: a SQLite file, a PostgreSQL schema, or both.

`engine` runs a test once on each (ids "sqlite" and "postgres"). PostgreSQL is the real
server named by KEEL_TEST_POSTGRES (default: postgres@127.0.0.1:5432/test); every test gets
a schema of its own, with a random name, dropped with everything in it afterwards — so tests
can run in parallel processes against one server. A server that cannot be reached fails
the tests that need it: nothing is skipped.
"""

from __future__ import annotations

import os
import secrets
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from sqlalchemy import Connection, Engine, create_engine
from sqlalchemy.engine import URL, make_url

from keel.store.sql import STORE_BEGINS

DEFAULT_POSTGRES = "postgresql+psycopg://postgres@127.0.0.1:5432/test"


def postgres_url() -> URL:
    """The test server's URL, with psycopg 3 as the driver whatever the URL names."""
    url = make_url(os.environ.get("KEEL_TEST_POSTGRES") or DEFAULT_POSTGRES)
    if url.drivername in ("postgresql", "postgres"):
        url = url.set(drivername="postgresql+psycopg")
    return url


@pytest.fixture
def sqlite_engine(tmp_path: Path) -> Iterator[Engine]:
    """A SQLite database in a fresh file."""
    engine = create_engine(f"sqlite:///{(tmp_path / 'keel.db').as_posix()}")
    yield engine
    engine.dispose()


@contextmanager
def fresh_schema() -> Iterator[URL]:
    """The test server's URL with its search_path on a new schema, dropped afterwards."""
    url = postgres_url()
    schema = f"keel_test_{secrets.token_hex(8)}"
    admin = create_engine(url)
    try:
        with admin.begin() as conn:
            conn.exec_driver_sql(f'CREATE SCHEMA "{schema}"')
        try:
            yield url.update_query_dict({"options": f"-csearch_path={schema}"})
        finally:
            with admin.begin() as conn:
                conn.exec_driver_sql(f'DROP SCHEMA "{schema}" CASCADE')
    finally:
        admin.dispose()


@pytest.fixture
def postgres_engine() -> Iterator[Engine]:
    """The PostgreSQL test server, inside a fresh schema that is dropped afterwards."""
    with fresh_schema() as url:
        engine = create_engine(url)
        try:
            yield engine
        finally:
            engine.dispose()


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def engine(request: pytest.FixtureRequest) -> Engine:
    """Each database in turn: the test runs once on SQLite and once on PostgreSQL."""
    name: str = request.param
    fixture: Engine = request.getfixturevalue(f"{name}_engine")
    return fixture


@pytest.fixture
def sqlite_url(tmp_path: Path) -> str:
    """The URL of a SQLite file that does not exist yet (Keel creates it)."""
    return f"sqlite:///{(tmp_path / 'state.db').as_posix()}"


@pytest.fixture
def postgres_url_in_schema() -> Iterator[str]:
    """A PostgreSQL URL whose search_path is a fresh schema, dropped afterwards."""
    with fresh_schema() as url:
        yield url.render_as_string(hide_password=False)


@pytest.fixture(
    params=[
        pytest.param("sqlite", id="sqlite"),
        pytest.param("postgres", id="postgres", marks=pytest.mark.postgres),
    ]
)
def database_url(request: pytest.FixtureRequest) -> str:
    """Each database in turn, as a URL: a new SQLite file, or a fresh PostgreSQL schema.

    Neither holds the brain's state yet: apply it with `keel state apply --db URL`
    (a new SQLite file gets it by itself on first connect).
    """
    fixture: str = request.getfixturevalue(
        "sqlite_url" if request.param == "sqlite" else "postgres_url_in_schema"
    )
    return fixture


# -- a database that refuses a write ---------------------------------------------------------

# The database itself refuses a write (a trigger), so the failure takes the real path.
REFUSAL = "this database refuses the run"


@contextmanager
def refusing(db: Engine, table: str, events: tuple[str, ...], when: str) -> Iterator[None]:
    """While inside, `db` refuses each of `events` on `table` when `when` holds."""
    sqlite = db.dialect.name == "sqlite"
    if not sqlite:
        when = when.replace("%", "%%")  # the driver's placeholders
    with _writing(db) as conn:
        if sqlite:
            # Read the schema first: a pooled connection may still hold an older one, and
            # SQLite checks a new trigger's name against what the connection holds.
            conn.exec_driver_sql("SELECT count(*) FROM sqlite_master")
            for event in events:
                conn.exec_driver_sql(
                    f"CREATE TRIGGER keel_test_refuse_{event.lower()} BEFORE {event} ON {table} "
                    f"WHEN {when} BEGIN SELECT RAISE(ABORT, '{REFUSAL}'); END"
                )
        else:
            conn.exec_driver_sql(
                "CREATE FUNCTION keel_test_refuse() RETURNS trigger LANGUAGE plpgsql AS "
                f"$$ BEGIN RAISE EXCEPTION '{REFUSAL}'; END $$"
            )
            conn.exec_driver_sql(
                f"CREATE TRIGGER keel_test_refuse BEFORE {' OR '.join(events)} ON {table} "
                f"FOR EACH ROW WHEN ({when}) EXECUTE FUNCTION keel_test_refuse()"
            )
    try:
        yield
    finally:
        with _writing(db) as conn:
            if sqlite:
                conn.exec_driver_sql("SELECT count(*) FROM sqlite_master")
                for event in events:
                    conn.exec_driver_sql(f"DROP TRIGGER keel_test_refuse_{event.lower()}")
            else:
                conn.exec_driver_sql(f"DROP TRIGGER keel_test_refuse ON {table}")
                conn.exec_driver_sql("DROP FUNCTION keel_test_refuse()")


@contextmanager
def _writing(db: Engine) -> Iterator[Connection]:
    """A transaction on `db`; on SQLite one that holds the write lock from its start. A
    deferred one that reads first is refused at once (SQLITE_BUSY), not queued, when another
    connection writes before its own first write — a running worker writes at any time."""
    if db.dialect.name != "sqlite":
        with db.begin() as conn:
            yield conn
        return
    # The store's option keeps Keel's `begin` hook from sending a deferred BEGIN first.
    with db.execution_options(**{STORE_BEGINS: True}).begin() as conn:
        conn.exec_driver_sql("BEGIN IMMEDIATE")
        yield conn
