"""A store with Keel's tables (the turn journal among them) on each database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from keel.brain import Brain
from keel.state.database import apply_sql, connect, creates
from keel.store import Store


@pytest.fixture
def journal_store(reference_brain: Brain, database_url: str) -> Iterator[Store]:
    """Keel's store with the journal on each database, the reference brain's state applied."""
    applied_on_creation = creates(database_url)
    engine = connect(database_url, reference_brain)
    if not applied_on_creation:
        apply_sql(engine, reference_brain.state_sql)
    store = Store(engine)
    store.migrate()
    yield store
    engine.dispose()
