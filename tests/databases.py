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
from sqlalchemy import Engine, create_engine
from sqlalchemy.engine import URL, make_url

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
