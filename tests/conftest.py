"""Shared fixtures: small brains written into a temporary directory."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keel.brain import Brain, load_brain
from keel.state.database import apply_sql, connect, creates
from keel.store import Store
from tests.databases import (
    database_url,
    engine,
    postgres_engine,
    postgres_url_in_schema,
    sqlite_engine,
    sqlite_url,
)

__all__ = [
    "database_url",
    "engine",
    "postgres_engine",
    "postgres_url_in_schema",
    "reference_brain",
    "reference_store",
    "sqlite_engine",
    "sqlite_url",
    "write_brain",
]

WriteBrain = Callable[[dict[str, str | bytes]], Path]


@pytest.fixture
def write_brain(tmp_path: Path) -> WriteBrain:
    """Write `{relative path: content}` under a fresh brain root and return the root."""

    def write(files: dict[str, str | bytes]) -> Path:
        root = tmp_path / "brain"
        for rel, content in files.items():
            target = root / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            if isinstance(content, bytes):
                target.write_bytes(content)
            else:
                target.write_text(content, encoding="utf-8")
        root.mkdir(exist_ok=True)
        return root

    return write


EXAMPLE = Path(__file__).parents[1] / "examples" / "brain"


@pytest.fixture
def reference_brain(tmp_path: Path) -> Brain:
    """A copy of examples/brain (without any database it may hold), loaded."""
    root = tmp_path / "reference"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".keel"))
    return load_brain(root)


@pytest.fixture
def reference_store(reference_brain: Brain, database_url: str) -> Iterator[Store]:
    """Keel's store on each database, with the reference brain's state applied."""
    applied_on_creation = creates(database_url)
    engine = connect(database_url, reference_brain)
    if not applied_on_creation:
        apply_sql(engine, reference_brain.state_sql)
    store = Store(engine)
    store.migrate()
    yield store
    engine.dispose()
