"""Reading brain files: only regular files inside the brain, within their size, never blocking.

Each case is checked through `load_brain` and through a live `BrainSource` (which reads
files itself when they change), so both paths skip the same things for the same reasons.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from keel.brain import Brain, load_brain
from keel.brain.limits import MAX_FILE_BYTES, MAX_SQL_BYTES
from keel.brain.reading import read_file
from keel.brain.source import BrainSource
from keel.errors import ContentError
from tests.conftest import WriteBrain

GOOD = "---\ndescription: Tickets.\nwhen: [run, ask]\n---\nBe kind.\n"
BAD = "features/a/bad.context.md"
Make = Callable[[Path], None]


class FakeClock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def _fifo(root: Path) -> None:
    os.mkfifo(root / BAD)


def _fifo_link(root: Path) -> None:
    os.mkfifo(root / "pipe")
    (root / BAD).symlink_to(root / "pipe")


def _link_to(target: str) -> Make:
    return lambda root: (root / BAD).symlink_to(target)


def _outside(root: Path) -> None:
    outside = root.parent / "elsewhere.context.md"
    outside.write_text(GOOD, encoding="utf-8")
    (root / BAD).symlink_to(outside)


def _relative_escape(root: Path) -> None:
    (root.parent / "secret.md").write_text(GOOD, encoding="utf-8")
    (root / BAD).symlink_to("../../../secret.md")


def _directory(root: Path) -> None:
    (root / BAD).mkdir()


def _socket(root: Path) -> None:
    with socket.socket(socket.AF_UNIX) as server:
        server.bind(str(root / BAD))


def _too_big(root: Path) -> None:
    (root / BAD).write_bytes(b"---\nwhen: [run]\n---\n" + b"x" * MAX_FILE_BYTES)


def _loop(root: Path) -> None:
    (root / BAD).symlink_to(root / BAD)


SKIPPED = [
    pytest.param(_fifo, "a named pipe (FIFO)", id="fifo"),
    pytest.param(_fifo_link, "a named pipe (FIFO)", id="link-to-fifo"),
    pytest.param(
        _link_to("/dev/zero"), "a symbolic link to a file outside the brain", id="dev-zero"
    ),
    pytest.param(
        _link_to("/dev/null"), "a symbolic link to a file outside the brain", id="dev-null"
    ),
    pytest.param(_outside, "a symbolic link to a file outside the brain", id="link-out"),
    pytest.param(_relative_escape, "outside the brain", id="relative-link-out"),
    pytest.param(_directory, "this is a directory, not a regular file", id="directory"),
    pytest.param(_socket, "a socket", id="socket"),
    pytest.param(_too_big, "over the limit of 1,048,576 bytes", id="too-big"),
    pytest.param(_link_to("nowhere.md"), "cannot read: No such file or directory", id="dangling"),
    pytest.param(_loop, "cannot read: Too many levels of symbolic links", id="loop"),
]


@pytest.fixture
def brain_root(write_brain: WriteBrain) -> Path:
    return write_brain({"features/a/good.context.md": GOOD})


def _only_bad_skip(brain: Brain) -> str:
    assert set(brain.contexts) == {"good"}, brain.skips
    [skip] = brain.skips
    assert skip.path == BAD
    return skip.reason


@pytest.mark.parametrize(("make", "reason"), SKIPPED)
def test_the_loader_skips_what_is_not_a_regular_file_inside_the_brain(
    brain_root: Path, make: Make, reason: str
) -> None:
    make(brain_root)
    assert reason in _only_bad_skip(load_brain(brain_root))


@pytest.fixture
def source(brain_root: Path) -> Iterator[tuple[BrainSource, FakeClock]]:
    clock = FakeClock()
    with BrainSource(brain_root, clock=clock, watch=False) as live:
        yield live, clock


@pytest.mark.parametrize(("make", "reason"), SKIPPED)
def test_the_live_source_skips_the_same_when_it_appears(
    brain_root: Path, source: tuple[BrainSource, FakeClock], make: Make, reason: str
) -> None:
    live, clock = source
    assert live.current().skips == ()
    make(brain_root)
    clock.now += 60
    assert reason in _only_bad_skip(live.current())


def test_a_link_inside_the_brain_is_followed(brain_root: Path) -> None:
    (brain_root / "shared").mkdir()
    (brain_root / "shared" / "kept.md").write_text(GOOD, encoding="utf-8")
    (brain_root / "features/a/linked.context.md").symlink_to("../../shared/kept.md")
    brain = load_brain(brain_root)
    assert brain.skips == ()
    assert brain.contexts["linked"].instructions == "Be kind."


def test_a_sql_file_may_be_larger_than_a_content_file(brain_root: Path) -> None:
    rows = "INSERT INTO t VALUES (1);\n" * (MAX_FILE_BYTES // 26 + 10)
    (brain_root / "state").mkdir()
    (brain_root / "state/001.sql").write_text(rows, encoding="utf-8")
    brain = load_brain(brain_root)
    assert brain.skips == ()
    assert len(brain.state_sql[0].text) > MAX_FILE_BYTES
    assert MAX_SQL_BYTES > MAX_FILE_BYTES


def test_a_top_folder_linking_inside_the_brain_is_followed(write_brain: WriteBrain) -> None:
    root = write_brain({"content/features/a/good.context.md": GOOD})
    (root / "features").symlink_to(root / "content/features")
    brain = load_brain(root)
    assert brain.skips == ()
    assert set(brain.contexts) == {"good"}


def test_a_top_folder_linking_out_of_the_brain_is_one_skip(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain({"constitution/MANIFEST.yaml": "name: x\n"})
    elsewhere = tmp_path / "elsewhere"
    (elsewhere / "a").mkdir(parents=True)
    (elsewhere / "a" / "good.context.md").write_text(GOOD, encoding="utf-8")
    (root / "features").symlink_to(elsewhere)
    for brain in (load_brain(root), BrainSource(root, watch=False).current()):
        assert brain.contexts == {}
        [skip] = brain.skips
        assert skip.path == "features"
        assert "a symbolic link to a folder outside the brain" in skip.reason


def test_a_top_folder_that_is_a_file_is_a_skip(write_brain: WriteBrain) -> None:
    root = write_brain({"features/a/good.context.md": GOOD, "state": "not a folder\n"})
    brain = load_brain(root)
    [skip] = brain.skips
    assert (skip.path, skip.reason) == (
        "state",
        "'state' must be a folder, but this is a file — move it",
    )


def test_a_folder_link_below_the_top_is_a_skip_not_a_walk(brain_root: Path) -> None:
    (brain_root / "features/a/loop").symlink_to(brain_root / "features")
    for brain in (load_brain(brain_root), BrainSource(brain_root, watch=False).current()):
        assert set(brain.contexts) == {"good"}
        [skip] = brain.skips
        assert skip.path == "features/a/loop"
        assert "a symbolic link to a folder" in skip.reason


def test_access_yaml_as_a_directory_fails_the_file_whole(brain_root: Path) -> None:
    (brain_root / "constitution/access.yaml").mkdir(parents=True)
    brain = load_brain(brain_root)
    assert brain.access.broken is not None
    assert "this is a directory, not a regular file" in brain.access.broken.reason
    assert brain.access.refusal("nova", "tg:chat:-1") is not None


def test_a_name_that_is_not_utf8_is_a_skip_that_can_be_printed(brain_root: Path) -> None:
    os.makedirs(os.fsencode(brain_root / "features/a") + b"/\xff\xfe")
    with open(os.fsencode(brain_root / "features/a") + b"/x\xff.context.md", "w") as handle:
        handle.write(GOOD)
    for brain in (load_brain(brain_root), BrainSource(brain_root, watch=False).current()):
        assert set(brain.contexts) == {"good"}
        reasons = {skip.path: skip.reason for skip in brain.skips}
        assert reasons == {
            "features/a/\ufffd\ufffd": "the name is not valid UTF-8 — rename it",
            "features/a/x\ufffd.context.md": "the name is not valid UTF-8 — rename it",
        }
        for skip in brain.skips:
            str(skip).encode("utf-8")


def test_a_fixed_file_loads_again_in_the_live_source(
    brain_root: Path, source: tuple[BrainSource, FakeClock]
) -> None:
    live, clock = source
    _fifo(brain_root)
    clock.now += 60
    assert live.current().skips != ()
    (brain_root / BAD).unlink()
    (brain_root / BAD).write_text(GOOD, encoding="utf-8")
    clock.now += 60
    brain = live.current()
    assert brain.skips == ()
    assert set(brain.contexts) == {"good", "bad"}


def test_read_file_names_what_it_refuses(brain_root: Path) -> None:
    _fifo(brain_root)
    with pytest.raises(ContentError, match=r"bad\.context\.md: this is a named pipe"):
        read_file(str(brain_root), BAD)
    assert read_file(str(brain_root), "features/a/good.context.md") == GOOD.encode()


def _grown(monkeypatch: pytest.MonkeyPatch, by: int) -> None:
    """Both stats say the file is `by` bytes shorter than it is: it grew after them."""

    def shorter(real: Callable[..., os.stat_result]) -> Callable[..., os.stat_result]:
        def stat(target: object) -> os.stat_result:
            st = list(real(target))
            st[6] -= by  # st_size
            return os.stat_result(st)

        return stat

    monkeypatch.setattr("keel.brain.reading.os.lstat", shorter(os.lstat))
    monkeypatch.setattr("keel.brain.reading.os.fstat", shorter(os.fstat))


def test_a_file_that_grew_after_its_stat_is_read_to_its_end(
    brain_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _grown(monkeypatch, by=len(GOOD) - 3)
    assert read_file(str(brain_root), "features/a/good.context.md") == GOOD.encode()


def test_a_file_that_grew_past_the_limit_after_its_stat_is_refused(
    brain_root: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    big = brain_root / "features/a/big.context.md"
    big.write_bytes(b"x" * (MAX_FILE_BYTES + 10))
    _grown(monkeypatch, by=20)
    with pytest.raises(ContentError, match="grew past the limit"):
        read_file(str(brain_root), "features/a/big.context.md")
