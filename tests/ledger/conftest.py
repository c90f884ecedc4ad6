"""The ledger's tests read turns prepared on each database: through the library into a
store with the journal (`journal_store`), or through the real `keel` command (`keel`)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.ledger.journaled import journal_store
from tests.runtime.driver import Keel, keel_on

__all__ = ["journal_store", "keel"]


@pytest.fixture
def keel(tmp_path: Path, database_url: str) -> Keel:
    """`keel` on a copy of the reference brain, once on SQLite and once on PostgreSQL."""
    return keel_on(tmp_path, database_url)
