"""The seed: played into a new database once, never again, and never into one with turns."""

from __future__ import annotations

import logging
from datetime import UTC, datetime
from pathlib import Path

import pytest

from keel.errors import ContentError
from keel.runtime.engine import Engine
from keel.web.seed import read_seed, seed_once
from tests.runtime.driver import REFERENCE, copy_reference
from tests.web.conftest import prepared_brain

NOW = datetime(2026, 11, 29, 19, 0, tzinfo=UTC)


def test_the_reference_seed_plays_every_worked_example(
    tmp_path: Path, database_url: str, caplog: pytest.LogCaptureFixture
) -> None:
    seed = read_seed(REFERENCE)
    assert seed is not None
    brain = prepared_brain(tmp_path, database_url)
    with Engine(brain, database_url, watch=False) as engine, caplog.at_level(logging.INFO):
        seeded = seed_once(engine, now=NOW)
        assert seeded.played == len(seed.steps)
        assert [
            r.message
            for r in caplog.records
            if r.levelno >= logging.WARNING and r.name == "keel.seed"
        ] == []
        turns = engine.turns(limit=1000)
        assert len(turns) == sum(step.turn is not None for step in seed.steps)
        assert max(t.request.now for t in turns) == NOW
        # The dashboard's first page has turns with stubs and with refusals to show.
        assert any(t.stubbed for t in turns)
        assert any(t.refused for t in turns)
        assert {t.role for t in turns} == set(engine.brain.roles)
        # Played once: a second start (or a second server) plays nothing.
        again = seed_once(engine, now=NOW)
        assert again.played == 0
        assert "was seeded on 2026-11-29" in again.note
        assert len(engine.turns(limit=1000)) == len(turns)


def test_a_database_that_holds_turns_is_not_seeded(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    url = f"sqlite:///{(tmp_path / 'k.db').as_posix()}"
    with Engine(brain, url, watch=False) as engine:
        from keel.link.values import Conversation, TurnRequest

        engine.prepare(
            TurnRequest(conversation=Conversation(bot="nova", chat="tg:user:1"), now=NOW)
        )
        seeded = seed_once(engine, now=NOW)
        assert (seeded.played, seeded.note) == (0, "not played: the database already held turns")
        assert len(engine.turns()) == 1
        assert "already held turns" in seed_once(engine, now=NOW).note


def test_a_brain_without_a_seed_plays_nothing(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").unlink()
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        assert seed_once(engine).note == "no seed.yaml in the brain"
        assert engine.turns() == ()


@pytest.mark.parametrize(
    ("text", "message"),
    [
        pytest.param(
            "version: 2\nsteps: []\n", r"seed.yaml:1: version: Input should be 1", id="version"
        ),
        pytest.param(
            "version: 1\nsteps:\n  - turn: {bot: nova}\n    bind: {context: x, chat: y}\n",
            r"seed.yaml:3: steps.0: .*exactly one of",
            id="two-kinds",
        ),
        pytest.param(
            "version: 1\nsteps:\n  - turn: {chatt: x}\n",
            r"seed.yaml:3: steps.0.turn.chatt: Extra inputs",
            id="unknown-field",
        ),
        pytest.param("version: 1\nsteps: [\n", r"seed.yaml", id="broken-yaml"),
    ],
)
def test_a_broken_seed_names_its_line_and_is_not_played(
    tmp_path: Path, text: str, message: str
) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").write_text(text, encoding="utf-8")
    with pytest.raises(ContentError, match=message):
        read_seed(brain)
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        assert seed_once(engine).note.startswith("not played: seed.yaml")
        assert engine.turns() == ()


def test_a_step_the_brain_refuses_is_skipped_and_logged(
    tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    brain = copy_reference(tmp_path / "brain")
    (brain / "seed.yaml").write_text(
        "version: 1\nsteps:\n"
        "  - turn: {bot: nova, chat: 'tg:user:1', role: nosuch}\n"
        "  - send: {bot: nova, chat: 'tg:user:1', text: hi, run: 'heartbeat:evening-film'}\n"
        "  - send: {bot: nova, chat: 'tg:user:1', text: ok, refused: true}\n"
        "  - turn: {bot: nova, chat: 'tg:user:1', input: hello, answer: hi}\n",
        encoding="utf-8",
    )
    with Engine(brain, f"sqlite:///{tmp_path / 'k.db'}", watch=False) as engine:
        seeded = seed_once(engine, now=NOW)
        assert seeded.played == 2
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        assert any("step 1 skipped: no role 'nosuch'" in w for w in warnings), warnings
        assert any("step 2 skipped" in w and "keyed" in w for w in warnings), warnings
        assert any("step 3 was sent, but the seed expects it refused" in w for w in warnings)
        assert [m.text for m in engine.history("tg:user:1")] == ["ok", "hello", "hi"]
