"""Commit pinning over a real git repository, and the content hash without one."""

from __future__ import annotations

import os
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from keel.brain import load_brain
from keel.brain.source import BrainSource
from keel.runs import pinning
from keel.runs.commits import CommitError, Pin, brain_commit, content_hash, snapshot
from keel.runs.pinning import Pinning, git_marks

CONTEXT = "features/desk/ticket.context.md"
ROLE = "features/desk/desk.agent.md"


def context(body: str) -> str:
    return f"---\ndescription: A ticket.\nwhen: [run, ask]\n---\n{body}\n"


FILES = {
    CONTEXT: context("Answer about the ticket."),
    ROLE: "---\ncontexts: [ticket]\ncapabilities: [context:read]\n---\nYou are the desk.\n",
    "features/desk/daily.heartbeat.md": "---\nschedule: '0 8 * * *'\nagent: desk\n---\nGo.\n",
    "constitution/MANIFEST.yaml": "name: pinned\n",
}


@pytest.fixture(autouse=True)
def plain_git(monkeypatch: pytest.MonkeyPatch) -> None:
    """git as it comes: no global or system configuration of this machine."""
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        cwd=repo,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def write(root: Path, files: dict[str, str]) -> None:
    for rel, text in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    """A repository whose first commit holds a brain in `brains/desk/`."""
    top = tmp_path / "repo"
    top.mkdir()
    git(top, "init", "-q")
    write(top / "brains" / "desk", FILES)
    (top / "README.md").write_text("A repository with a brain in it.\n", encoding="utf-8")
    (top / ".gitignore").write_text(".keel/\n", encoding="utf-8")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "first")
    return top


@pytest.fixture
def brain(repo: Path) -> Path:
    return repo / "brains" / "desk"


def test_a_brain_in_a_work_tree_is_pinned_to_head(repo: Path, brain: Path) -> None:
    pin = brain_commit(brain)
    assert pin == Pin(kind="git", id=git(repo, "rev-parse", "HEAD"), path="brains/desk")
    assert pin.label == f"git:{pin.id}"


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda b: (b / CONTEXT).write_text(context("Edited.")), id="edited"),
        pytest.param(lambda b: (b / "features/desk/new.skill.md").write_text("x"), id="added"),
        pytest.param(lambda b: (b / ROLE).unlink(), id="deleted"),
    ],
)
def test_uncommitted_changes_to_brain_files_make_the_pin_dirty(
    brain: Path, change: Callable[[Path], object]
) -> None:
    change(brain)
    pin = brain_commit(brain)
    assert (pin.kind, pin.dirty) == ("git", True)
    assert pin.label.endswith("+dirty")


def test_changes_outside_the_brain_files_leave_it_clean(repo: Path, brain: Path) -> None:
    (repo / "README.md").write_text("Edited.\n", encoding="utf-8")
    (brain / "notes.txt").write_text("not a brain file's folder\n", encoding="utf-8")
    (brain / ".keel").mkdir()
    (brain / ".keel" / "keel.db").write_bytes(b"database")
    assert brain_commit(brain).dirty is False


def test_the_snapshot_holds_the_commit_not_later_edits(
    repo: Path, brain: Path, tmp_path: Path
) -> None:
    pin = brain_commit(brain)
    (brain / CONTEXT).write_text(context("Edited after the pin."), encoding="utf-8")
    (brain / "features/desk/later.context.md").write_text(context("New."), encoding="utf-8")
    git(repo, "add", ".")
    git(repo, "commit", "-q", "-m", "second")

    pinned = snapshot(brain, pin, tmp_path / "cache")
    assert pinned == tmp_path / "cache" / pin.id
    assert (pinned / CONTEXT).read_text(encoding="utf-8") == FILES[CONTEXT]
    assert not (pinned / "features/desk/later.context.md").exists()
    assert not (pinned / "README.md").exists(), "only the brain directory is extracted"
    loaded = load_brain(pinned)
    assert loaded.skips == ()
    assert set(loaded.contexts) == {"ticket"}
    assert loaded.contexts["ticket"].instructions.strip() == "Answer about the ticket."

    now = brain_commit(brain)
    assert now.id != pin.id
    fresh = snapshot(brain, now, tmp_path / "cache")
    assert set(load_brain(fresh).contexts) == {"ticket", "later"}


def test_a_snapshot_is_extracted_once_then_reused(repo: Path, brain: Path) -> None:
    pin = brain_commit(brain)
    first = snapshot(brain, pin)
    assert first == brain / ".keel" / "commits" / pin.id
    assert [p.name for p in first.parent.iterdir()] == [pin.id], "no temporary left behind"
    marker = first / "marker"
    marker.write_text("kept", encoding="utf-8")
    # Without the repository, only the cached copy can answer.
    os.rename(repo / ".git", repo / "moved.git")
    assert snapshot(brain, pin) == first
    assert marker.read_text(encoding="utf-8") == "kept"


def test_a_brain_at_the_top_of_its_repository(tmp_path: Path) -> None:
    top = tmp_path / "brain"
    write(top, FILES)
    git(top, "init", "-q")
    git(top, "add", ".")
    git(top, "commit", "-q", "-m", "first")
    pin = brain_commit(top)
    assert (pin.kind, pin.path, pin.dirty) == ("git", "", False)
    pinned = snapshot(top, pin, tmp_path / "cache")
    assert (pinned / CONTEXT).read_text(encoding="utf-8") == FILES[CONTEXT]


def test_a_commit_that_is_gone_is_an_error_with_the_fix(brain: Path, tmp_path: Path) -> None:
    gone = Pin(kind="git", id="0" * 40, path="brains/desk")
    with pytest.raises(CommitError, match=r"cannot give the brain at commit 000000000000 .*start"):
        snapshot(brain, gone, tmp_path / "cache")
    assert list((tmp_path / "cache").iterdir()) == [], "a failed extraction leaves nothing"


@pytest.mark.parametrize(
    "pin",
    [
        pytest.param(Pin(kind="git", id="../../etc"), id="not-a-sha"),
        pytest.param(Pin(kind="git", id="a" * 40, path="../other"), id="path-out"),
    ],
)
def test_a_pin_that_names_no_commit_is_refused(brain: Path, pin: Pin, tmp_path: Path) -> None:
    with pytest.raises(CommitError, match="pass a pin from brain_commit"):
        snapshot(brain, pin, tmp_path / "cache")


# -- without git ---------------------------------------------------------------------------


@pytest.fixture
def plain(tmp_path: Path) -> Path:
    root = tmp_path / "plain"
    write(root, FILES)
    return root


def test_without_a_repository_the_pin_is_the_content_hash(plain: Path) -> None:
    pin = brain_commit(plain)
    assert pin == Pin(kind="content", id=content_hash(plain))
    assert pin.id.startswith("sha256:")
    assert len(pin.id) == len("sha256:") + 64
    assert pin.label == pin.id


def test_a_content_pin_reads_a_copy_of_the_files_it_hashed(plain: Path, tmp_path: Path) -> None:
    pin = brain_commit(plain)
    copy = snapshot(plain, pin, tmp_path / "cache")
    assert copy != plain.resolve()
    assert content_hash(copy) == pin.id
    (plain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    assert snapshot(plain, pin, tmp_path / "cache") == copy
    assert "Edited." not in (copy / CONTEXT).read_text(encoding="utf-8")


def test_a_content_pin_whose_files_changed_before_any_copy_is_an_error(
    plain: Path, tmp_path: Path
) -> None:
    pin = brain_commit(plain)
    (plain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    with pytest.raises(CommitError, match="no longer those this run started on"):
        snapshot(plain, pin, tmp_path / "cache")


def test_touching_a_file_keeps_the_hash_and_changing_it_does_not(plain: Path) -> None:
    before = content_hash(plain)
    os.utime(plain / CONTEXT, (1_000_000_000, 1_000_000_000))
    assert content_hash(plain) == before
    (plain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    edited = content_hash(plain)
    assert edited != before
    (plain / CONTEXT).write_text(FILES[CONTEXT], encoding="utf-8")
    assert content_hash(plain) == before, "the same bytes give the same hash"


@pytest.mark.parametrize(
    ("rel", "counts"),
    [
        pytest.param("features/desk/extra.skill.md", True, id="brain-file"),
        pytest.param("features/desk/ticket.context.py", True, id="brain-code"),
        pytest.param("README.md", False, id="outside-the-top-folders"),
        pytest.param(".keel/keel.db", False, id="keel-database"),
        pytest.param("features/desk/notes.txt", False, id="not-a-brain-file"),
    ],
)
def test_the_hash_covers_the_files_the_loader_reads(plain: Path, rel: str, counts: bool) -> None:
    before = content_hash(plain)
    write(plain, {rel: "---\ndescription: x\n---\nx\n"})
    assert (content_hash(plain) != before) is counts


def test_a_repository_that_does_not_hold_the_brain_gives_a_content_pin(repo: Path) -> None:
    untracked = repo / "drafts" / "brain"
    write(untracked, FILES)
    pin = brain_commit(untracked)
    assert pin.kind == "content"


def test_a_repository_with_no_commit_gives_a_content_pin(plain: Path) -> None:
    git(plain, "init", "-q")
    assert brain_commit(plain).kind == "content"


def test_without_the_git_program_the_pin_is_the_content_hash(
    brain: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    empty = tmp_path / "no-programs"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    assert brain_commit(brain) == Pin(kind="content", id=content_hash(brain))


# -- the pin as a journal keeps it ------------------------------------------------------------


def test_a_pin_round_trips_through_json(brain: Path) -> None:
    (brain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    pin = brain_commit(brain)
    assert Pin.from_json(pin.to_json()) == pin
    assert pin.to_json() == {
        "kind": "git",
        "id": pin.id,
        "path": "brains/desk",
        "dirty": True,
        "tree": content_hash(brain),
    }


def test_a_dirty_pin_reads_the_edits_it_started_with(brain: Path, tmp_path: Path) -> None:
    (brain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    pin = brain_commit(brain)
    copy = snapshot(brain, pin, tmp_path / "cache")
    (brain / CONTEXT).write_text(context("Edited again."), encoding="utf-8")
    assert "Edited." in (copy / CONTEXT).read_text(encoding="utf-8")
    assert snapshot(brain, pin, tmp_path / "cache") == copy


@pytest.mark.parametrize(
    "data",
    [
        pytest.param("git:abc", id="not-a-mapping"),
        pytest.param({"kind": "svn", "id": "a" * 40}, id="kind"),
        pytest.param({"kind": "git", "id": "HEAD"}, id="sha"),
        pytest.param({"kind": "content", "id": "sha256:xyz"}, id="hash"),
        pytest.param({"kind": "git", "id": "a" * 40, "dirty": "yes"}, id="dirty"),
        pytest.param({"kind": "git", "id": "a" * 40, "tree": "HEAD"}, id="tree"),
    ],
)
def test_what_is_not_a_pin_is_refused(data: object) -> None:
    with pytest.raises(CommitError, match=r"(is not a pin|a pin is a mapping)"):
        Pin.from_json(data)


@pytest.fixture
def many_files(plain: Path) -> Path:
    write(plain, {f"state/{i:03}.sql": f"SELECT {i};\n" for i in range(50)})
    return plain


def test_the_hash_does_not_depend_on_the_order_files_were_written(
    many_files: Path, tmp_path: Path
) -> None:
    other = tmp_path / "other"
    files = {
        str(p.relative_to(many_files)): p.read_text(encoding="utf-8")
        for p in sorted(many_files.rglob("*"), reverse=True)
        if p.is_file()
    }
    write(other, files)
    assert content_hash(other) == content_hash(many_files)


# keel.runs.pinning: the pin of a long-lived process, decided again only after a change


def probed(root: Path) -> BrainSource:
    """A source that looks at the files on every call, so an edit is seen at once."""
    manifest = root / "constitution" / "MANIFEST.yaml"
    manifest.write_text("name: pinned\ncontentProbe:\n  context: 0\n", encoding="utf-8")
    return BrainSource(root, watch=False)


def counting(monkeypatch: pytest.MonkeyPatch) -> list[Path]:
    """Record each call of `brain_commit` that `Pinning` makes."""
    calls: list[Path] = []

    def counted(root: Path) -> Pin:
        calls.append(root)
        return brain_commit(root)

    monkeypatch.setattr(pinning, "brain_commit", counted)
    return calls


def test_an_unchanged_brain_is_pinned_once(
    repo: Path, brain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting(monkeypatch)
    memo = Pinning(probed(brain))
    git(repo, "commit", "-qam", "the probe")  # probed() edits the MANIFEST
    first = memo.pin()
    assert [memo.pin() for _ in range(3)] == [first] * 3
    assert (len(calls), first) == (1, brain_commit(brain))


@pytest.mark.parametrize(
    "change",
    [
        pytest.param(lambda _, b: (b / CONTEXT).write_text(context("Edited.")), id="edited"),
        pytest.param(
            lambda repo, b: ((b / CONTEXT).write_text(context("Edited.")), git(repo, "add", ".")),
            id="staged",
        ),
        pytest.param(
            lambda repo, _: git(repo, "commit", "-q", "--allow-empty", "-m", "empty"),
            id="committed",
        ),
        pytest.param(lambda repo, _: git(repo, "checkout", "-q", "-b", "other"), id="branched"),
    ],
)
def test_a_change_to_the_files_or_to_what_git_has_checked_out_pins_again(
    repo: Path,
    brain: Path,
    change: Callable[[Path, Path], object],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    memo = Pinning(probed(brain))
    git(repo, "commit", "-qam", "the probe")
    calls = counting(monkeypatch)
    memo.pin()
    change(repo, brain)
    assert memo.pin() == brain_commit(brain)
    assert len(calls) == 2


def test_outside_git_the_content_hash_is_kept_until_a_file_changes(
    plain: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls = counting(monkeypatch)
    memo = Pinning(probed(plain))
    first = memo.pin()
    assert memo.pin() == first
    (plain / CONTEXT).write_text(context("Edited."), encoding="utf-8")
    second = memo.pin()
    assert (first.kind, second.kind, len(calls)) == ("content", "content", 2)
    assert second.id == content_hash(plain) != first.id


def test_a_linked_worktree_asks_git_every_time(
    repo: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    git(repo, "worktree", "add", "-q", str(tmp_path / "linked"))
    linked = tmp_path / "linked" / "brains" / "desk"
    assert git_marks(linked) is None
    calls = counting(monkeypatch)
    memo = Pinning(BrainSource(linked, watch=False))
    assert memo.pin() == memo.pin() == brain_commit(linked)
    assert len(calls) == 2
