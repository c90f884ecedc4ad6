"""Fixtures for brain code tests: a brain directory and a code runner shared by a module."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from keel.code import CodeRunner


@pytest.fixture(scope="module")
def code_root(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("brain")


@pytest.fixture(scope="module")
def shared_runner(code_root: Path) -> Iterator[CodeRunner]:
    with CodeRunner(code_root) as runner:
        yield runner


@pytest.fixture
def runner(shared_runner: CodeRunner) -> CodeRunner:
    """The module's runner, with every worker ready (a test before may have killed some)."""
    assert shared_runner.wait_ready(30)
    return shared_runner
