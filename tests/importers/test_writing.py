"""The import writes and removes only inside the brain: never through a link, never a FIFO."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from keel.errors import UsageError
from keel.importers import import_rules
from keel.importers.generated import marker
from keel.importers.writing import Writes
from tests.importers.conftest import WriteTree

RULES: dict[str, str | bytes] = {"CLAUDE.md": "Use pnpm.\n", "AGENTS.md": "Small commits.\n"}
ROLE = "---\ncontexts: []\ncapabilities: [context:read]\n---\nYou code.\n"


def outside(tmp_path: Path) -> Path:
    """A folder beside the brain, which no import may write into."""
    folder = tmp_path / "outside"
    folder.mkdir(exist_ok=True)
    return folder


def tree(root: Path) -> dict[str, bytes | str]:
    """Every entry under `root`: a file's bytes, a link's target, a folder's mark."""
    found: dict[str, bytes | str] = {}
    for folder, dirs, files in os.walk(root):
        for name in dirs + files:
            path = Path(folder, name)
            rel = path.relative_to(root).as_posix()
            if path.is_symlink():
                found[rel] = f"-> {os.readlink(path)}"
            elif path.is_file():
                found[rel] = path.read_bytes()
            else:
                found[rel] = "dir" if path.is_dir() else "special"
    return found


@pytest.mark.parametrize(
    "target", [pytest.param("out", id="out-of-the-brain"), pytest.param("in", id="in-the-brain")]
)
def test_a_feature_folder_that_is_a_link_refuses_the_import_up_front(
    repo: WriteTree, brain: Path, tmp_path: Path, target: str
) -> None:
    elsewhere = outside(tmp_path) if target == "out" else brain / "features/other"
    elsewhere.mkdir(exist_ok=True)
    (brain / "features/repo").symlink_to(elsewhere, target_is_directory=True)
    where = "out of the brain" if target == "out" else "elsewhere in the brain"
    message = (
        f"features/repo is a symbolic link {where} ({elsewhere.resolve()}) — keel import "
        "writes only into real folders of the brain (the loader does not follow a folder "
        "link there either); replace the link with a folder, or import with another --feature"
    )
    source = repo(RULES)
    before = tree(tmp_path)
    with pytest.raises(UsageError, match=re.escape(message)):
        import_rules(source, brain, role="coder")
    assert tree(tmp_path) == before


def test_a_features_folder_linked_out_of_the_brain_refuses_the_import_up_front(
    repo: WriteTree, brain: Path, tmp_path: Path
) -> None:
    elsewhere = outside(tmp_path)
    (brain / "features").rename(elsewhere / "features")
    (brain / "features").symlink_to(elsewhere / "features", target_is_directory=True)
    source = repo(RULES)
    before = tree(tmp_path)
    message = (
        f"features is a symbolic link out of the brain ({elsewhere.resolve()}/features) — "
        "keel import writes only inside the brain (the loader does not read it either); "
        "replace the link with a folder"
    )
    with pytest.raises(UsageError, match=re.escape(message)):
        import_rules(source, brain, role="coder")
    assert tree(tmp_path) == before


def test_an_imported_file_that_is_a_link_out_is_refused_not_written_through(
    repo: WriteTree, brain: Path, tmp_path: Path
) -> None:
    source = repo(RULES)
    import_rules(source, brain)
    # The file an earlier run wrote, swapped for a link to a file that looks imported.
    secret = outside(tmp_path) / "target.md"
    secret.write_text(f"---\n{marker('CLAUDE.md')}\nwhen: [always]\n---\nTheirs.\n")
    link = brain / "features/repo/claude-md.context.md"
    link.unlink()
    link.symlink_to(secret)
    (source / "CLAUDE.md").write_text("Use pnpm, always.\n")
    report = import_rules(source, brain)
    assert secret.read_text().endswith("Theirs.\n")
    assert link.is_symlink()
    assert [str(n) for n in report.refused] == [
        f"features/repo/claude-md.context.md: a symbolic link (to {secret.resolve()}) — keel "
        "import never writes through a link nor removes one; remove the link, then re-run"
    ]
    assert [r.context for r in report.rules] == ["agents-md"], "the rest is imported"


def test_a_link_inside_the_brain_is_not_written_through_either(
    repo: WriteTree, brain: Path
) -> None:
    source = repo(RULES)
    import_rules(source, brain)
    kept = brain / "features/repo/kept.md"
    link = brain / "features/repo/agents-md.context.md"
    link.rename(kept)
    link.symlink_to("kept.md")
    (source / "AGENTS.md").write_text("Smaller commits.\n")
    report = import_rules(source, brain)
    assert "Small commits." in kept.read_text()
    assert [n.path for n in report.refused] == ["features/repo/agents-md.context.md"]


def test_a_fifo_where_a_file_goes_is_refused_without_waiting(repo: WriteTree, brain: Path) -> None:
    (brain / "features/repo").mkdir()
    os.mkfifo(brain / "features/repo/claude-md.context.md")
    report = import_rules(repo(RULES), brain)
    assert [str(n) for n in report.refused] == [
        "features/repo/claude-md.context.md: not a regular file (a folder, a FIFO or a device) "
        "— keel import writes only plain files; move it away, then re-run"
    ]
    assert [r.context for r in report.rules] == ["agents-md"]


def test_a_role_file_that_is_a_link_out_is_refused_and_left_alone(
    repo: WriteTree, brain: Path, tmp_path: Path
) -> None:
    role = outside(tmp_path) / "coder.agent.md"
    role.write_text(ROLE)
    (brain / "features/team").mkdir()
    (brain / "features/team/coder.agent.md").symlink_to(role)
    report = import_rules(repo(RULES), brain, role="coder")
    assert role.read_text() == ROLE
    assert report.role is None
    assert [n.path for n in report.refused] == ["features/team/coder.agent.md"]
    assert report.refused[0].message.startswith("cannot read the role file (")
    assert "outside the brain" in report.refused[0].message


@pytest.mark.parametrize(
    "name",
    [
        pytest.param("features/team/coder.agent.md", id="the-role"),
        pytest.param("features/other/stuck.agent.md", id="another-role"),
    ],
)
def test_a_role_file_that_is_a_fifo_is_never_opened(
    repo: WriteTree, brain: Path, name: str
) -> None:
    (brain / name).parent.mkdir(parents=True)
    os.mkfifo(brain / name)
    report = import_rules(repo(RULES), brain, role="coder")
    assert {r.context for r in report.rules} == {"agents-md", "claude-md"}
    if name.endswith("coder.agent.md"):
        assert [n.path for n in report.refused] == [name]
        assert "a named pipe (FIFO)" in report.refused[0].message


def test_nothing_is_made_outside_the_brain_not_even_a_folder(brain: Path, tmp_path: Path) -> None:
    (brain / "features/linked").symlink_to(outside(tmp_path), target_is_directory=True)
    writes = Writes(root=brain.resolve())
    assert not writes.put("features/linked/deep/x.context.md", "x")
    assert not writes.remove("features/linked/x.context.md")
    assert list(outside(tmp_path).iterdir()) == []
    assert [n.message.split(" — ")[0] for n in writes.refused] == [
        f"features/linked is a symbolic link out of the brain ({outside(tmp_path).resolve()})"
    ] * 2


def test_a_write_is_sorted_by_what_it_did(brain: Path) -> None:
    writes = Writes(root=brain.resolve())
    assert writes.put("features/f/a.context.md", "one")
    assert writes.put("features/f/a.context.md", "one")
    assert writes.put("features/f/a.context.md", "two")
    assert writes.remove("features/f/a.context.md")
    assert writes.remove("features/f/gone.context.md")
    assert (writes.written, writes.unchanged, writes.updated, writes.removed) == (
        ["features/f/a.context.md"],
        ["features/f/a.context.md"],
        ["features/f/a.context.md"],
        ["features/f/a.context.md", "features/f/gone.context.md"],
    )
