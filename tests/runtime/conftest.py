"""Runtime tests drive whole turns on each database."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.runtime.driver import Keel, keel_on

__all__ = ["keel"]


@pytest.fixture
def keel(tmp_path: Path, database_url: str) -> Keel:
    """`keel` on a copy of the reference brain, once on SQLite and once on PostgreSQL."""
    return keel_on(tmp_path, database_url)
