"""Fixtures for the import tests: the fixture repository, fresh brains, small source trees."""

from __future__ import annotations

import shutil
from collections.abc import Callable
from pathlib import Path

import pytest

from keel.brain.scaffold import scaffold_files

FIXTURES = Path(__file__).parent / "fixtures"

WriteTree = Callable[[dict[str, str | bytes]], Path]


def write_files(root: Path, files: dict[str, str | bytes]) -> Path:
    for rel, content in files.items():
        target = root / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        if isinstance(content, bytes):
            target.write_bytes(content)
        else:
            target.write_text(content, encoding="utf-8")
    return root


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    """A copy of the fixture repository `shop`, safe to change."""
    target = tmp_path / "shop"
    shutil.copytree(FIXTURES / "shop", target)
    return target


@pytest.fixture
def brain(tmp_path: Path) -> Path:
    """A new brain as `keel init` writes it."""
    return write_files(tmp_path / "brain", dict(scaffold_files("test")))


@pytest.fixture
def repo(tmp_path: Path) -> WriteTree:
    """Write `{relative path: content}` as a source repository named `repo`."""

    def write(files: dict[str, str | bytes]) -> Path:
        return write_files(tmp_path / "repo", files)

    return write
