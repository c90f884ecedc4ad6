"""Doctor on the brain's state files against its database: a file the database refuses
fails with its line (the views then go unchecked, saying why), and a file the database has
not applied yet, or applied before an edit, is a warning — turns do not see it."""

from __future__ import annotations

from pathlib import Path

from keel.runtime.engine import Engine
from tests.conftest import WriteBrain
from tests.doctor.brains import CLEAN, of

BAD = "state/020_bad.sql"


def test_state_sql_the_database_refuses_fails_with_its_line(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain({**CLEAN, BAD: "-- a note\nTHIS IS NOT SQL;\n"})
    with Engine(root, f"sqlite:///{tmp_path / 'fresh.db'}", watch=False) as engine:
        report = engine.doctor()
    [refused] = of(report, "state.refused")
    assert (refused.level, refused.file) == ("fail", BAD)
    assert "the database refused this SQL" in refused.message
    assert report.failed
    [unchecked] = of(report, "view.unchecked")
    assert f"{BAD} did not apply (state.refused) — fix it" in unchecked.message
    assert "where the database is reachable" not in unchecked.message


def test_a_state_file_the_database_has_not_applied_is_a_warning(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain(dict(CLEAN))
    url = f"sqlite:///{tmp_path / 'k.db'}"
    with Engine(root, url, watch=False) as engine:
        engine.apply_state()
        assert of(engine.doctor(), "state.pending") == []
    more = "state/030_more.sql"
    (root / more).write_text("CREATE TABLE extra (x TEXT);\n", encoding="utf-8")
    (root / "state/001_desk.sql").write_text(
        CLEAN["state/001_desk.sql"] + "-- edited\n", encoding="utf-8"
    )
    with Engine(root, url, watch=False) as engine:
        pending = {f.subject: f for f in of(engine.doctor(), "state.pending")}
    assert set(pending) == {more, "state/001_desk.sql"}
    assert pending[more].level == "warn"
    assert "is new: this database has not applied it, so turns do not see it" in (
        pending[more].message
    )
    assert "changed since this database applied it" in pending["state/001_desk.sql"].message
