"""Fixtures for the coding-agent doors: brains, engines on each database, MCP clients."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keel.link.values import Conversation
from keel.mcp.room import Room
from keel.runtime.engine import Engine
from keel.tools import CODING_TOOLS
from tests.mcp.brains import DEV_BRAIN
from tests.runtime.driver import copy_reference

ACME = Room(conversation=Conversation(bot="nova", chat="tg:chat:-1002000000101"))
DEV = Room(conversation=Conversation(bot="cli", chat="cli"))

Engines = Callable[[Path], Engine]


@pytest.fixture
def anyio_backend() -> str:
    """anyio's pytest plugin runs the async tests; asyncio only (no trio here)."""
    return "asyncio"


@pytest.fixture
def engines(database_url: str) -> Iterator[Engines]:
    """Engines with the coding tools on a brain, each on the test's database (both kinds)."""
    opened: list[Engine] = []

    def open_engine(root: Path) -> Engine:
        engine = Engine(root, database_url, tools=CODING_TOOLS, watch=False)
        opened.append(engine)
        engine.apply_state()
        return engine

    yield open_engine
    for engine in opened:
        engine.close()


@pytest.fixture
def dev_brain(write_brain: Callable[[dict[str, str | bytes]], Path]) -> Path:
    return write_brain(DEV_BRAIN)


@pytest.fixture
def dev_engine(engines: Engines, dev_brain: Path) -> Engine:
    return engines(dev_brain)


@pytest.fixture
def reference_engine(engines: Engines, tmp_path: Path) -> Engine:
    return engines(copy_reference(tmp_path / "reference"))
