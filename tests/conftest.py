"""Shared fixtures: small brains written into a temporary directory."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

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
