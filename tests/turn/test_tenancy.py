"""Tenancy: in a room pinned to a tenant, every view with the tenant's column shows only
the tenant's rows — whatever context, role or run brought it."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime

import pytest

from keel.brain.specs import ReachEntry
from keel.link.values import Conversation, RunRef, TurnRequest
from keel.runtime.engine import Engine
from tests.conftest import WriteBrain
from tests.runtime.driver import view_rows

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
ACME = Conversation(bot="b", chat="c:acme")
NOBODY = Conversation(bot="b", chat="c:none")
OWNER = Conversation(bot="b", chat="c:owner")

BRAIN: dict[str, str | bytes] = {
    "constitution/MANIFEST.yaml": "tenancy: { context: client, column: client_slug }\n",
    "constitution/access.yaml": (
        "bots:\n  b:\n    default: { role: other }\n    chats:\n"
        "      'c:acme': { role: desk, contexts: { client: acme } }\n"
        "      'c:none': { role: desk, contexts: { client: } }\n"
    ),
    "state/001.sql": (
        "CREATE TABLE notes (id TEXT, client_slug TEXT, note TEXT);\n"
        "INSERT INTO notes VALUES ('n1', 'acme', 'acme note'), ('n2', 'globex', 'globex note'),"
        " ('n3', NULL, 'agency note');\n"
        "CREATE VIEW all_notes AS SELECT id, client_slug, note FROM notes;\n"
        "CREATE VIEW note_list AS SELECT id, note FROM notes;\n"
        "CREATE VIEW client_card AS SELECT DISTINCT client_slug FROM notes"
        " WHERE client_slug IS NOT NULL;\n"
        "CREATE VIEW desk_notes AS SELECT client_slug, note FROM notes;\n"
        "CREATE VIEW desk_count AS SELECT COUNT(*) AS notes FROM notes;\n"
    ),
    "features/a/client.context.md": (
        "---\nentity: client slug\nwhen: [chat, ask]\ndescription: A client.\n"
        "data: [{ view: client_card, by: client_slug }]\n---\nThe client.\n"
    ),
    "features/a/notes.context.md": (
        "---\nwhen: [run, ask]\ndescription: Notes.\ndata: [all_notes, note_list]\n---\nNotes.\n"
    ),
    "features/a/desk.agent.md": "---\ncontexts: [client]\ncapabilities: [context:read]\n---\nDesk.\n",
    "features/a/other.agent.md": (
        "---\ncontexts: ['*']\ncapabilities: [context:read]\nstate: [desk_notes, desk_count]\n"
        "---\nOther.\n"
    ),
    "features/a/sweep.heartbeat.md": "---\nschedule: '0 9 * * *'\nagent: other\n---\nSweep.\n",
}


@pytest.fixture
def engine(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    with Engine(write_brain(dict(BRAIN)), database_url, watch=False) as engine:
        engine.apply_state()
        yield engine


def notes_seen(text: str) -> list[str]:
    rows = view_rows(text, "all_notes")
    assert rows is not None, text
    return [row[2] for row in rows]


def test_a_view_another_role_opens_in_a_pinned_room_shows_the_tenants_rows(engine: Engine) -> None:
    request = TurnRequest(conversation=ACME, now=NOW, role="other")
    assert notes_seen(engine.open(request, "notes")) == ["acme note"]


def test_a_run_in_a_pinned_room_sees_the_tenants_rows(engine: Engine) -> None:
    run = RunRef(kind="heartbeat", id="sweep")
    prepared, _ = engine.prepare(TurnRequest(conversation=ACME, now=NOW, run=run))
    (block,) = [a.block.text for a in prepared.attached if a.link.context == "notes"]
    assert notes_seen(block) == ["acme note"]


def test_a_roles_own_state_is_filtered_only_where_the_view_has_the_column(engine: Engine) -> None:
    request = TurnRequest(conversation=ACME, now=NOW, role="other")
    prepared, _ = engine.prepare(request)
    notes, count = prepared.renders
    assert [row[1] for row in notes.rows] == ["acme note"]
    assert count.rows == ((3,),), "a view without the tenant's column is global"


def test_outside_a_pinned_room_every_tenant_shows(engine: Engine) -> None:
    request = TurnRequest(conversation=OWNER, now=NOW, role="other")
    assert notes_seen(engine.open(request, "notes")) == ["acme note", "globex note", "agency note"]


def test_a_room_pinned_to_no_tenant_shows_no_tenants_rows(engine: Engine) -> None:
    request = TurnRequest(conversation=NOBODY, now=NOW, role="other")
    text = engine.open(request, "notes")
    assert '<view name="all_notes">(no rows)</view>' in text
    assert "acme note" in text, "note_list has no tenant column: it stays global"


def test_an_open_of_the_tenant_context_itself_is_held_to_the_pin(engine: Engine) -> None:
    request = TurnRequest(
        conversation=ACME, now=NOW, role="other", open=(ReachEntry(context="client"),)
    )
    prepared, _ = engine.prepare(request)
    assert [(a.link.context, a.link.entity) for a in prepared.attached] == [("client", "acme")]


# -- a settings file that does not load leaves the room stricter, never looser -------------


def engine_with(write_brain: WriteBrain, database_url: str, path: str, text: str) -> Engine:
    brain = dict(BRAIN)
    brain[path] = text
    engine = Engine(write_brain(brain), database_url, watch=False)
    engine.apply_state()
    return engine


MANIFEST = "constitution/MANIFEST.yaml"
UNREADABLE = "tenancy: { context: client, column: client_slug }\nstate: rows: 5\n"
OTHER_KEY_WRONG = (
    "tenancy: { context: client, column: client_slug }\nstate: { rows: 99999999999 }\n"
)


@pytest.fixture
def broken_manifest(write_brain: WriteBrain, database_url: str) -> Iterator[Engine]:
    with engine_with(write_brain, database_url, MANIFEST, UNREADABLE) as engine:
        yield engine


def test_an_unreadable_manifest_withholds_every_view_in_a_pinned_room(
    broken_manifest: Engine,
) -> None:
    assert broken_manifest.brain.manifest.broken is not None
    run = RunRef(kind="heartbeat", id="sweep")
    prepared, _ = broken_manifest.prepare(TurnRequest(conversation=ACME, now=NOW, run=run))
    (block,) = [a.block.text for a in prepared.attached if a.link.context == "notes"]
    assert "acme note" not in block
    assert "agency note" not in block
    assert "while constitution/MANIFEST.yaml does not load" in block
    assert all("MANIFEST.yaml" in (r.problem or "") for r in prepared.renders)
    assert any("MANIFEST.yaml" in line and "withheld" in line for line in prepared.log)


def test_an_unreadable_manifest_withholds_views_an_open_reads_in_a_pinned_room(
    broken_manifest: Engine,
) -> None:
    text = broken_manifest.open(TurnRequest(conversation=ACME, now=NOW, role="other"), "notes")
    assert "acme note" not in text
    assert "agency note" not in text
    assert "MANIFEST.yaml" in text


def test_an_unreadable_manifest_leaves_rooms_without_a_pin_as_they_were(
    broken_manifest: Engine,
) -> None:
    request = TurnRequest(conversation=OWNER, now=NOW, role="other")
    assert notes_seen(broken_manifest.open(request, "notes")) == [
        "acme note",
        "globex note",
        "agency note",
    ]
    prepared, _ = broken_manifest.prepare(request)
    assert not any("withheld" in line for line in prepared.log)


def test_a_manifest_broken_elsewhere_keeps_its_tenancy_as_written(
    write_brain: WriteBrain, database_url: str
) -> None:
    with engine_with(write_brain, database_url, MANIFEST, OTHER_KEY_WRONG) as e:
        assert e.brain.manifest.broken is not None
        request = TurnRequest(conversation=ACME, now=NOW, role="other")
        assert notes_seen(e.open(request, "notes")) == ["acme note"]


def test_a_tenancy_context_that_does_not_load_still_holds_its_rooms(
    write_brain: WriteBrain, database_url: str
) -> None:
    typo = str(BRAIN["features/a/client.context.md"]).replace("when:", "whne:")
    with engine_with(write_brain, database_url, "features/a/client.context.md", typo) as engine:
        assert "client" in engine.brain.failed_contexts
        request = TurnRequest(conversation=ACME, now=NOW, role="other")
        assert notes_seen(engine.open(request, "notes")) == ["acme note"]
        nobody = TurnRequest(conversation=NOBODY, now=NOW, role="other")
        assert '<view name="all_notes">(no rows)</view>' in engine.open(nobody, "notes")
