"""The reference brain in a folder of its own, and the Bot API double, for the bot's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.runtime.driver import copy_reference
from tests.telegram.double import TOKEN, BotAPIDouble, running_double


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The reference brain copied to `brain/` in a fresh working folder, with a token."""
    copy_reference(tmp_path / "brain")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("KEEL_TELEGRAM_TOKEN", TOKEN)
    return tmp_path


@pytest.fixture
def double() -> Iterator[BotAPIDouble]:
    """The Bot API double, serving for one test."""
    with running_double() as made:
        yield made
