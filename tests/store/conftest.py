"""The store's tests run on SQLite and on PostgreSQL, against migrated, empty databases."""

from __future__ import annotations

import pytest
from sqlalchemy import Engine

from keel.store import Store

__all__ = ["store"]


@pytest.fixture
def store(engine: Engine) -> Store:
    """A store on each database, migrated."""
    made = Store(engine)
    made.migrate()
    return made
