"""What a render's code can reach on a turn, on SQLite and PostgreSQL: no connection string,
only reads, and in a pinned room only the tenant's rows — while the turn goes on."""

from __future__ import annotations

import json
from collections.abc import Iterator
from datetime import UTC, datetime

import pytest
from sqlalchemy import create_engine, text
from sqlalchemy.engine import make_url

from keel.link.values import Conversation, TurnRequest
from keel.runtime.engine import Engine
from tests.conftest import WriteBrain

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ACME = Conversation(bot="b", chat="c:acme")
OWNER = Conversation(bot="b", chat="c:owner")

# Each statement's rows (or why it failed) become one section of the board context.
BOARD = """
import gc, json, os

from keel.code import CallFailed, define_context


def render(entity, ctx):
    try:
        schema = ctx.query("SELECT current_schema() AS s")[0]["s"]
    except CallFailed:
        schema = "main"
    statements = {
        "notes": "SELECT id FROM notes ORDER BY id",
        "qualified": f"SELECT id FROM {schema}.notes",
        "counted": "SELECT notes FROM note_count",
        "write": "UPDATE notes SET note = 'changed'",
    }
    sections = []
    for key, sql in statements.items():
        try:
            said = json.dumps([row.get("id", row.get("notes")) for row in ctx.query(sql)])
        except CallFailed as refused:
            said = f"{refused.kind}: {refused}"
        sections.append({"key": key, "text": said})
    needle = NEEDLE
    found = [v for o in gc.get_objects() if isinstance(o, dict)
             for v in o.values() if isinstance(v, str) and needle in v]
    found += [v for v in os.environ.values() if needle in v or "://" in v]
    sections.append({"key": "reach", "text": json.dumps(found)})
    return sections


context = define_context(render=render)
"""
# A render that lets the refusal go: the turn shows it as a warning, and goes on.
RAW = """
from keel.code import CallFailed, define_context


def render(entity, ctx):
    try:
        schema = ctx.query("SELECT current_schema() AS s")[0]["s"]
    except CallFailed:
        schema = "main"
    return [{"key": "n", "text": str(ctx.query(f"SELECT id FROM {schema}.notes"))}]


context = define_context(render=render)
"""


def _brain(needle: str) -> dict[str, str | bytes]:
    return {
        "constitution/MANIFEST.yaml": "tenancy: { context: client, column: client_slug }\n",
        "constitution/access.yaml": (
            "bots:\n  b:\n    default: { role: desk }\n    chats:\n"
            "      'c:acme': { role: desk, contexts: { client: acme } }\n"
        ),
        "state/001.sql": (
            "CREATE TABLE notes (id TEXT, client_slug TEXT, note TEXT);\n"
            "INSERT INTO notes VALUES ('n1', 'acme', 'a'), ('n2', 'globex', 'g'),"
            " ('n3', NULL, 'agency');\n"
            "CREATE VIEW note_count AS SELECT COUNT(*) AS notes FROM notes;\n"
        ),
        "features/a/client.context.md": (
            "---\nentity: client slug\nwhen: [chat, ask]\ndescription: A client.\n---\nClient.\n"
        ),
        "features/a/board.context.md": (
            "---\nwhen: [always]\ndescription: The board.\nchars: 6000\n---\nBoard.\n"
        ),
        "features/a/board.context.py": BOARD.replace("NEEDLE", repr(needle)),
        "features/a/raw.context.md": "---\nwhen: [always]\ndescription: Raw.\n---\nRaw.\n",
        "features/a/raw.context.py": RAW,
        "features/a/desk.agent.md": (
            "---\ncontexts: [client, board, raw]\ncapabilities: [context:read]\n"
            "contexts_budget: { maxActive: 5, turnChars: 100000 }\n---\nDesk.\n"
        ),
    }


def _needle(url: str) -> str:
    """What names this database in a connection string: the SQLite file, the schema."""
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return str(parsed.database).rsplit("/", 1)[-1]
    options = str(parsed.query.get("options", ""))
    return options.rpartition("=")[2]


@pytest.fixture
def engine(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    needle = _needle(database_url)
    assert needle
    with Engine(write_brain(_brain(needle)), database_url, watch=False) as engine:
        engine.apply_state()
        yield engine


def _sections(engine: Engine, room: Conversation) -> tuple[dict[str, str], str]:
    prepared, _ = engine.prepare(TurnRequest(conversation=room, now=NOW, input="hello"))
    (board,) = [a.block.text for a in prepared.attached if a.link.context == "board"]
    sections = {}
    for part in board.split('<section name="')[1:]:
        key, _, rest = part.partition('">\n')
        sections[key] = rest.split("\n</section>", 1)[0]
    return sections, "\n".join(prepared.log)


def test_a_pinned_rooms_render_reads_only_its_tenants_rows(engine: Engine) -> None:
    pinned, warnings = _sections(engine, ACME)
    assert json.loads(pinned["notes"]) == ["n1"]
    assert pinned["qualified"].startswith("Refused: ctx.query reads ")
    assert "by its schema's name" in pinned["qualified"]
    assert "note_count, which has no client_slug column" in pinned["counted"]
    # A render that lets the refusal through fails alone; the turn says why, and goes on.
    assert "features/a/raw.context.py:10: render raised CallFailed: ctx.query reads" in warnings
    owner, _ = _sections(engine, OWNER)
    assert json.loads(owner["notes"]) == ["n1", "n2", "n3"]
    assert json.loads(owner["qualified"]) == ["n1", "n2", "n3"]
    assert json.loads(owner["counted"]) == [3]


def test_a_render_can_only_read_and_the_next_turn_goes_on(
    engine: Engine, database_url: str
) -> None:
    for room in (ACME, OWNER, ACME):
        sections, _ = _sections(engine, room)
        write = sections["write"]
        assert write.startswith(("Refused: ctx.query only reads", "StoreError: ")), write
    check = create_engine(database_url)
    try:
        with check.connect() as conn:
            notes = conn.execute(text("SELECT note FROM notes ORDER BY id")).scalars().all()
    finally:
        check.dispose()
    assert notes == ["a", "g", "agency"]


def test_a_render_finds_no_connection_string_in_its_worker(engine: Engine) -> None:
    sections, _ = _sections(engine, OWNER)
    assert json.loads(sections["reach"]) == []
