"""No turn waits on a view longer than `state.readTimeoutMs`: whatever reads it — a linked
context, the role's own state, `context_open` — a view that never ends is a stub, the
turn carries a warning naming the view and the knob, and the turn is recorded."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from keel.state.views import too_slow
from tests.conftest import WriteBrain
from tests.runtime.driver import view_rows, view_stub
from tests.state.guard import guarded

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
HERE = Conversation(bot="b", chat="c:desk")
MS = 50
FOREVER = "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n) SELECT i FROM n"

BRAIN: dict[str, str | bytes] = {
    "constitution/MANIFEST.yaml": f"state: {{ rows: 5, readTimeoutMs: {MS} }}\n",
    "state/001.sql": (
        "CREATE TABLE notes (id TEXT, note TEXT);\n"
        "INSERT INTO notes VALUES ('n1', 'first'), ('n2', 'second');\n"
        "CREATE VIEW note_list AS SELECT id, note FROM notes;\n"
        f"CREATE VIEW forever AS {FOREVER};\n"
        f"CREATE VIEW forever_queue AS {FOREVER};\n"
    ),
    "features/a/notes.context.md": (
        "---\nwhen: [always, ask]\ndescription: Notes.\ndata: [forever, note_list]\n---\nNotes.\n"
    ),
    "features/a/desk.agent.md": (
        "---\ncontexts: [notes]\ncapabilities: [context:read]\nstate: [forever_queue]\n---\nDesk.\n"
    ),
}


@pytest.fixture
def engine(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    with Engine(write_brain(dict(BRAIN)), database_url, watch=False) as engine:
        engine.apply_state()
        yield engine


def _request(text: str = "hello") -> TurnRequest:
    return TurnRequest(conversation=HERE, now=NOW, role="desk", input=text)


def test_a_context_view_that_never_ends_is_a_stub_and_the_turn_is_recorded(
    engine: Engine,
) -> None:
    with guarded(engine.database):
        prepared, _ = engine.prepare(_request())
        again, _ = engine.prepare(_request("and again"))
    (block,) = [a.block.text for a in prepared.attached if a.link.context == "notes"]
    assert view_stub(block, "forever") == too_slow(MS)
    assert view_rows(block, "note_list") == [["n1", "first"], ["n2", "second"]]
    assert prepared.id is not None
    assert again.turn == prepared.turn + 1, "the first turn committed"
    warned = [w for w in prepared.log if "'forever'" in w]
    assert warned == [
        f"view 'forever' took longer than state.readTimeoutMs ({MS} ms) and shows as a stub — "
        "make it end sooner (a recursive query needs a stop, a filter an index), or raise "
        "state.readTimeoutMs in constitution/MANIFEST.yaml"
    ]


def test_a_role_state_view_that_never_ends_is_a_stub_with_a_warning(engine: Engine) -> None:
    with guarded(engine.database):
        prepared, assembly = engine.prepare(_request())
    (queue,) = [r for r in prepared.renders if r.view == "forever_queue"]
    assert queue.problem == too_slow(MS)
    assert any(too_slow(MS) in s.text for s in assembly.sections if s.id == "render.forever_queue")
    assert any(
        "view 'forever_queue' took longer than state.readTimeoutMs" in w for w in prepared.log
    )


def test_context_open_of_a_view_that_never_ends_answers_with_the_stub(engine: Engine) -> None:
    with guarded(engine.database):
        text = engine.open(_request(), "notes")
    assert view_stub(text, "forever") == too_slow(MS)
    assert view_rows(text, "note_list") == [["n1", "first"], ["n2", "second"]]
