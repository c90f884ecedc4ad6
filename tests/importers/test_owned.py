"""The brain's ids come from file names; ownership from the import's line, in the feature only."""

from __future__ import annotations

from pathlib import Path

from keel.importers import import_rules
from keel.importers.generated import WRITTEN, marker, owner_of
from keel.importers.owned import scan_brain
from tests.importers.conftest import write_files


def test_ids_owned_files_and_roles_are_read_from_the_tree(brain: Path) -> None:
    write_files(
        brain,
        {
            "features/rules/a.context.md": f"---\n{marker('A.md')}\nwhen: [always]\n---\nA.\n",
            "features/rules/a.context.py": f"{marker('A.md')}\n",
            "features/rules/mine.context.md": "---\nwhen: [always]\n---\nMine.\n",
            "features/rules/FEATURE.md": f"---\n{WRITTEN}\n---\n",
            "features/rules/deep/b.context.md": f"---\n{marker('B.md')}\nwhen: [always]\n---\nB.\n",
            "features/other/broken.context.md": "---\nwhne: [always]\n---\nDoes not load.\n",
            "features/other/.hidden/c.context.md": "---\nwhen: [always]\n---\nNot read.\n",
            "features/other/coder.agent.md": "---\ncontexts: []\n---\nPersona.\n",
        },
    )
    files = scan_brain(brain, "rules")
    assert set(files.contexts) == {"a", "mine", "b", "broken", "greeting"}
    assert files.roles["coder"] == ("features/other/coder.agent.md",)
    assert dict(files.owned) == {
        "features/rules/a.context.md": "A.md",
        "features/rules/a.context.py": "A.md",
    }, "only the feature's own folder, not below it"
    assert files.written == {"features/rules/FEATURE.md"}
    assert "features/rules/mine.context.md" in files.present
    assert files.previous_ids() == {"A.md": "a"}


def test_a_brain_without_the_feature_has_nothing_owned(tmp_path: Path) -> None:
    files = scan_brain(tmp_path, "rules")
    assert (dict(files.contexts), dict(files.owned), files.present) == ({}, {}, frozenset())


def test_files_an_earlier_version_marked_are_still_the_import_s(shop: Path, brain: Path) -> None:
    import_rules(shop, brain)
    imported = sorted((brain / "features/shop").glob("*.context.*"))
    for path in imported:
        text = path.read_text(encoding="utf-8")
        source = owner_of(text)
        assert source is not None
        # As versions before quoting wrote it: the path as it was, unquoted.
        old = marker(source).replace(f'"{source}"', source, 1)
        path.write_text(text.replace(marker(source), old), encoding="utf-8")
    report = import_rules(shop, brain)
    assert (report.refused, report.written, report.removed) == ((), (), ())
    assert sorted(report.updated) == [f"features/shop/{p.name}" for p in imported]
    assert all(
        p.read_text(encoding="utf-8").startswith(('---\n# imported from "', '# imported from "'))
        for p in imported
    )
