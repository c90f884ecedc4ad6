"""`apply_state` and `state_status`: each state file runs once, a changed one is reported.

Every test runs on SQLite and on PostgreSQL, on a database Keel did not create (so nothing
is applied until the test applies it).
"""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path

import pytest
from sqlalchemy import Engine, create_engine, inspect, select, text

from keel.brain.specs import SqlFile
from keel.errors import StoreError
from keel.state.database import apply_sql
from keel.state.files import apply_state, file_sha256, state_status
from keel.store import MIGRATIONS, Store
from keel.store import schema as keel_schema
from tests.state import starters

NOW = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
LATER = datetime(2026, 11, 30, 9, 30, tzinfo=UTC)

TABLES = SqlFile(
    path="state/10_tables.sql",
    text="CREATE TABLE marks (n INTEGER PRIMARY KEY, label TEXT);\n"
    "INSERT INTO marks VALUES (1, 'one'), (2, 'two'), (3, 'three');\n",
)
VIEWS = SqlFile(
    path="state/20_views.sql",
    text="-- the marks worth showing\nCREATE VIEW big_marks AS SELECT n, label FROM marks WHERE n > 1;\n"
    "CREATE VIEW mark_count AS SELECT count(*) AS total FROM big_marks;\n",
)
ROWS = SqlFile(path="state/30_rows.sql", text="INSERT INTO marks VALUES (4, 'four');\n")
EXTRA = SqlFile(path="state/40_extra.sql", text="CREATE TABLE extra (x TEXT);\n")


def _scalar(engine: Engine, sql: str) -> object:
    with engine.connect() as conn:
        return conn.execute(text(sql)).scalar_one()


def _statuses(engine: Engine, files: list[SqlFile]) -> list[tuple[str, str]]:
    return [(f.path, f.status) for f in state_status(engine, files)]


def _recorded(engine: Engine) -> list[tuple[str, str]]:
    table = keel_schema.state_files
    with engine.connect() as conn:
        rows = conn.execute(select(table.c.path, table.c.sha256).order_by(table.c.path))
        return [(path, sha) for path, sha in rows]


def test_apply_twice_runs_each_file_once(engine: Engine) -> None:
    files = [TABLES, VIEWS, ROWS]
    first = apply_state(engine, files, clock=lambda: NOW)
    assert first.ran == (TABLES.path, VIEWS.path, ROWS.path)
    assert first.applied == first.ran
    second = apply_state(engine, files, clock=lambda: LATER)
    assert (second.ran, second.adopted, second.rebuilt) == ((), (), ())
    assert second.applied == first.applied
    assert _scalar(engine, "SELECT total FROM mark_count") == 3
    assert _recorded(engine) == [(f.path, file_sha256(f)) for f in files]
    status = state_status(engine, files)
    assert [(f.status, f.applied_at) for f in status] == [("applied", NOW)] * 3


def test_files_run_in_name_order_whatever_order_they_come_in(engine: Engine) -> None:
    report = apply_state(engine, [ROWS, VIEWS, TABLES])
    assert report.ran == (TABLES.path, VIEWS.path, ROWS.path)
    assert _scalar(engine, "SELECT total FROM mark_count") == 3


def test_a_new_file_runs_alone(engine: Engine) -> None:
    apply_state(engine, [TABLES, VIEWS])
    report = apply_state(engine, [TABLES, VIEWS, ROWS])
    assert report.ran == (ROWS.path,)
    assert _scalar(engine, "SELECT count(*) FROM marks") == 4


def test_a_failing_file_applies_nothing_and_names_its_line(engine: Engine) -> None:
    bad = SqlFile(path="state/50_bad.sql", text="CREATE TABLE fine (x TEXT);\n\nSELEKT 1;\n")
    with pytest.raises(StoreError, match=r"^state/50_bad\.sql:3: the database refused .*"):
        apply_state(engine, [TABLES, bad])
    assert not inspect(engine).has_table("marks")
    assert _statuses(engine, [TABLES, bad]) == [(TABLES.path, "new"), (bad.path, "new")]


def test_status_changes_nothing(engine: Engine) -> None:
    files = state_status(engine, [TABLES])
    assert [(f.status, f.advice) for f in files] == [("new", "not applied yet: applying runs it")]
    assert inspect(engine).get_table_names() == []


def test_a_changed_file_is_reported_with_the_way_forward_and_not_run(engine: Engine) -> None:
    apply_state(engine, [TABLES, VIEWS], clock=lambda: NOW)
    edited = SqlFile(path=TABLES.path, text=TABLES.text + "INSERT INTO marks VALUES (9, 'nine');\n")
    report = apply_state(engine, [edited, VIEWS, EXTRA])
    assert report.ran == (EXTRA.path,)
    assert [f.path for f in report.changed] == [TABLES.path]
    changed = report.changed[0]
    assert changed.sha256 == file_sha256(edited)
    assert changed.applied_sha256 == file_sha256(TABLES)
    assert changed.advice is not None
    assert changed.advice.startswith("changed since it was applied (2026-11-29 18:00 UTC)")
    assert "line 1: CREATE TABLE marks (n ..." in changed.advice
    assert "put the change in a new file such as state/10_tables_2.sql" in changed.advice
    assert _scalar(engine, "SELECT count(*) FROM marks") == 3
    assert report.applied == (VIEWS.path, EXTRA.path)


def test_a_changed_view_file_suggests_rebuilding_its_views(engine: Engine) -> None:
    apply_state(engine, [TABLES, VIEWS])
    edited = SqlFile(path=VIEWS.path, text=VIEWS.text.replace("n > 1", "n > 2"))
    [_, changed] = state_status(engine, [TABLES, edited])
    assert changed.status == "changed"
    assert changed.advice is not None
    assert "it only defines views, so `keel state apply --rebuild-views`" in changed.advice


def test_rebuild_views_creates_the_changed_views_again(engine: Engine) -> None:
    apply_state(engine, [TABLES, VIEWS], clock=lambda: NOW)
    edited = SqlFile(
        path=VIEWS.path,
        text="DROP VIEW IF EXISTS mark_count;\n"
        + VIEWS.text.replace("n > 1", "n > 2").replace("count(*) AS total", "count(*) AS marks"),
    )
    report = apply_state(engine, [TABLES, edited], rebuild_views=True, clock=lambda: LATER)
    assert report.rebuilt == (VIEWS.path,)
    assert report.ran == ()
    assert _scalar(engine, "SELECT marks FROM mark_count") == 1
    assert [(f.path, f.status, f.applied_at) for f in report.files] == [
        (TABLES.path, "applied", NOW),
        (VIEWS.path, "applied", LATER),
    ]
    assert _recorded(engine)[1] == (VIEWS.path, file_sha256(edited))
    assert _scalar(engine, "SELECT count(*) FROM marks") == 3


def test_rebuild_views_refuses_a_changed_file_that_does_more_and_applies_nothing(
    engine: Engine,
) -> None:
    apply_state(engine, [TABLES, VIEWS])
    edited = SqlFile(path=TABLES.path, text=TABLES.text.replace("'one'", "'uno'"))
    views = SqlFile(path=VIEWS.path, text=VIEWS.text.replace("n > 1", "n > 2"))
    with pytest.raises(
        StoreError,
        match=r"^state/10_tables\.sql changed since it was applied and does more than define "
        r"views \(line 1: CREATE TABLE marks \(n \.\.\.\): --rebuild-views re-creates views "
        r"only, never tables or rows — .* state/10_tables_2\.sql \(nothing was applied\)$",
    ):
        apply_state(engine, [edited, views, EXTRA], rebuild_views=True)
    assert not inspect(engine).has_table("extra")
    assert _scalar(engine, "SELECT count(*) FROM big_marks") == 2


def test_rebuild_views_never_drops_a_table(engine: Engine) -> None:
    # A views-only file now names a table of another file: dropping it must be refused.
    apply_state(engine, [TABLES, VIEWS])
    edited = SqlFile(path=VIEWS.path, text="CREATE VIEW marks AS SELECT 1 AS n;\n")
    with pytest.raises(StoreError, match=r"^state/20_views\.sql:1: cannot drop view 'marks'"):
        apply_state(engine, [TABLES, edited], rebuild_views=True)
    assert _scalar(engine, "SELECT count(*) FROM marks") == 3
    assert _scalar(engine, "SELECT total FROM mark_count") == 2


def test_status_lists_applied_changed_new_and_missing(engine: Engine) -> None:
    apply_state(engine, [TABLES, VIEWS, ROWS])
    edited = SqlFile(path=VIEWS.path, text=VIEWS.text + "-- reviewed\n")
    files = state_status(engine, [TABLES, edited, EXTRA])
    assert [(f.path, f.status) for f in files] == [
        (TABLES.path, "applied"),
        (VIEWS.path, "changed"),
        (ROWS.path, "missing"),
        (EXTRA.path, "new"),
    ]
    missing = files[2]
    assert missing.sha256 is None
    assert missing.applied_sha256 == file_sha256(ROWS)
    assert missing.advice is not None
    assert "no longer among the brain's state files" in missing.advice


def test_line_endings_are_no_change() -> None:
    crlf = SqlFile(path=TABLES.path, text=TABLES.text.replace("\n", "\r\n"))
    assert file_sha256(crlf) == file_sha256(TABLES)
    assert file_sha256(ROWS) != file_sha256(TABLES)


def _older_keel(engine: Engine, files: list[SqlFile]) -> None:
    """A database as the previous Keel left it: state applied, Keel's first tables, no record."""
    apply_sql(engine, files)
    Store(engine, migrations=MIGRATIONS[:3]).migrate()


def test_a_database_an_older_keel_filled_is_recorded_without_running_again(
    engine: Engine,
) -> None:
    files = [TABLES, VIEWS, ROWS]
    _older_keel(engine, files)
    before = state_status(engine, files)
    assert [f.status for f in before] == ["new"] * 3
    assert all("applying records it without running it" in (f.advice or "") for f in before)
    first = apply_state(engine, files)
    assert (first.ran, first.adopted) == ((), (TABLES.path, VIEWS.path, ROWS.path))
    second = apply_state(engine, files)
    assert (second.ran, second.adopted) == ((), ())
    assert _scalar(engine, "SELECT count(*) FROM marks") == 4
    assert Store(engine).applied() == tuple(name for name, _ in MIGRATIONS)


def test_a_database_the_previous_connect_made_applies_twice(engine: Engine) -> None:
    # The previous connect() applied state/*.sql and left Keel's tables to the store.
    apply_sql(engine, [TABLES, VIEWS])
    assert apply_state(engine, [TABLES, VIEWS]).adopted == (TABLES.path, VIEWS.path)
    report = apply_state(engine, [TABLES, VIEWS, EXTRA])
    assert (report.ran, report.adopted) == ((EXTRA.path,), ())


def test_an_older_database_runs_the_files_added_since(engine: Engine) -> None:
    _older_keel(engine, [TABLES, VIEWS])
    report = apply_state(engine, [TABLES, VIEWS, EXTRA])
    assert (report.ran, report.adopted) == ((EXTRA.path,), (TABLES.path, VIEWS.path))
    assert inspect(engine).has_table("extra")


def test_a_table_created_if_not_exists_says_nothing_about_whether_a_file_ran(
    engine: Engine,
) -> None:
    _older_keel(engine, [TABLES])
    mixed = SqlFile(
        path="state/50_mixed.sql",
        text="CREATE TABLE IF NOT EXISTS marks (n INTEGER PRIMARY KEY, label TEXT);\n"
        "CREATE VIEW first_mark AS SELECT min(n) AS n FROM marks;\n",
    )
    report = apply_state(engine, [TABLES, mixed])
    assert (report.ran, report.adopted) == ((mixed.path,), (TABLES.path,))
    assert _scalar(engine, "SELECT n FROM first_mark") == 1


def test_an_older_database_that_holds_part_of_a_file_is_refused(engine: Engine) -> None:
    _older_keel(engine, [TABLES])
    both = SqlFile(path=TABLES.path, text=TABLES.text + "CREATE TABLE labels (x TEXT);\n")
    with pytest.raises(
        StoreError,
        match=r"^state/10_tables\.sql creates 'marks', 'labels', and the database has 'marks' "
        r"but not 'labels', so it is neither applied nor new — .* \(nothing was applied\)$",
    ):
        apply_state(engine, [both])
    assert not inspect(engine).has_table("keel_state_files")
    assert not inspect(engine).has_table("labels")


@pytest.mark.postgres
def test_six_processes_applying_together_on_postgresql_apply_each_file_once(
    postgres_url_in_schema: str, tmp_path: Path
) -> None:
    root = tmp_path / "brain"
    for file in (TABLES, VIEWS, ROWS):
        target = root / file.path
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(file.text, encoding="utf-8")
    [outcomes] = starters.together("apply", root, 6, [postgres_url_in_schema])
    assert [o for o in outcomes if o[1] != "ok"] == []
    ran = sorted(o[2] for o in outcomes)
    assert ran == [()] * 5 + [(TABLES.path, VIEWS.path, ROWS.path)]
    engine = create_engine(postgres_url_in_schema)
    try:
        assert _scalar(engine, "SELECT count(*) FROM marks") == 4
        assert [path for path, _ in _recorded(engine)] == [TABLES.path, VIEWS.path, ROWS.path]
    finally:
        engine.dispose()
