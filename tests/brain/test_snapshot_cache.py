"""The snapshot cache: a warm cache parses nothing, an edit reaches the next call, and a
cache file that is not the cache's is never trusted."""

from __future__ import annotations

import json
import os
import pickle
import shutil
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from keel.brain import snapshot_cache
from keel.brain.files import Parsed
from keel.brain.loader import load_brain, parse_path
from keel.brain.snapshot import Brain
from keel.brain.snapshot_cache import CACHE_FILE, CachedSource, FollowedSource, cached_brain
from tests.conftest import EXAMPLE, WriteBrain

HOUR_NS = 3600 * 10**9
ROLE = "---\ncontexts: [ticket, refunds]\ncapabilities: [context:read]\n---\nYou are support.\n"
TICKET = "features/support/ticket.context.md"


def context(body: str) -> str:
    return f"---\ndescription: A context.\nwhen: [always]\n---\n{body}\n"


def later() -> int:
    """An hour from now: every file written by the test has long settled."""
    return time.time_ns() + HOUR_NS


class CountingParse:
    """The real parse, remembering what it parsed."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, root: Path, path: str, raw: bytes | None = None) -> Parsed:
        self.paths.append(path)
        return parse_path(root, path, raw)

    def take(self) -> list[str]:
        taken, self.paths = sorted(self.paths), []
        return taken


@pytest.fixture
def parses(monkeypatch: pytest.MonkeyPatch) -> CountingParse:
    counting = CountingParse()
    monkeypatch.setattr(snapshot_cache, "parse_path", counting)
    return counting


@pytest.fixture
def brain_root(write_brain: WriteBrain) -> Path:
    return write_brain(
        {
            TICKET: context("Answer the ticket."),
            "features/support/refunds.context.md": context("Refunds need approval."),
            "features/support/support.agent.md": ROLE,
        }
    )


@pytest.fixture
def reference(tmp_path: Path) -> Path:
    root = tmp_path / "reference"
    shutil.copytree(EXAMPLE, root, ignore=shutil.ignore_patterns(".keel"))
    return root


def instructions(brain: Brain) -> dict[str, str]:
    return {ident: spec.instructions for ident, spec in brain.contexts.items()}


def test_a_warm_cache_parses_nothing_and_gives_the_brain_the_loader_gives(
    reference: Path, parses: CountingParse
) -> None:
    cold = cached_brain(reference, wall_clock=later)
    assert len(parses.take()) > 50
    assert (reference / CACHE_FILE).is_file()
    warm = cached_brain(reference, wall_clock=later)
    assert parses.take() == []
    assert cold == warm == load_brain(reference)


def test_an_edited_context_is_parsed_again_and_reaches_the_snapshot(
    brain_root: Path, parses: CountingParse
) -> None:
    cached_brain(brain_root, wall_clock=later)
    parses.take()
    (brain_root / TICKET).write_text(context("Answer the ticket within the hour."))
    brain = cached_brain(brain_root, wall_clock=later)
    assert parses.take() == [TICKET]
    assert instructions(brain)["ticket"] == "Answer the ticket within the hour."
    assert brain == load_brain(brain_root)


def test_a_removed_context_leaves_and_a_new_one_arrives(
    brain_root: Path, parses: CountingParse
) -> None:
    cached_brain(brain_root, wall_clock=later)
    parses.take()
    (brain_root / "features/support/refunds.context.md").unlink()
    (brain_root / "features/support/tone.context.md").write_text(context("Be kind."))
    brain = cached_brain(brain_root, wall_clock=later)
    assert parses.take() == ["features/support/tone.context.md"]
    assert instructions(brain) == {"ticket": "Answer the ticket.", "tone": "Be kind."}
    stored = json.loads((brain_root / CACHE_FILE).read_text())
    assert "features/support/refunds.context.md" not in stored["files"]


def test_a_file_put_back_with_its_old_time_is_parsed_again(brain_root: Path) -> None:
    ticket = brain_root / TICKET
    cached_brain(brain_root, wall_clock=later)
    before = ticket.stat()
    ticket.write_text(context("Answer the TICKET."))  # the same size
    os.utime(ticket, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert ticket.stat().st_size == before.st_size
    brain = cached_brain(brain_root, wall_clock=later)
    assert instructions(brain)["ticket"] == "Answer the TICKET."


@pytest.fixture
def coarse(monkeypatch: pytest.MonkeyPatch) -> int:
    """A file system whose clock did not move: every file keeps one signature whatever is
    written to it. Returns the time it says every file changed."""
    stamp = time.time_ns()
    monkeypatch.setattr(snapshot_cache, "_signature", lambda _path: (10, stamp, stamp, 1))
    return stamp


@pytest.mark.parametrize(
    ("written_after", "seen"),
    [
        # Written one second after the file changed: the signature cannot be trusted yet,
        # so the bytes are compared, and the edit is seen.
        pytest.param(1, "Answer the ticket, now.", id="racy-entry-checks-the-bytes"),
        # Written long after: the signature is trusted. (With a real clock, an edit now
        # would have moved it.)
        pytest.param(3600, "Answer the ticket.", id="settled-entry-trusts-the-signature"),
    ],
)
def test_an_edit_the_signature_cannot_show_is_caught_while_the_entry_is_racy(
    brain_root: Path, coarse: int, written_after: int, seen: str
) -> None:
    cached_brain(brain_root, wall_clock=lambda: coarse + written_after * 10**9)
    (brain_root / TICKET).write_text(context("Answer the ticket, now."))
    brain = cached_brain(brain_root, wall_clock=lambda: coarse + (written_after + 1) * 10**9)
    assert instructions(brain)["ticket"] == seen


def test_a_racy_entry_is_written_again_once_it_has_settled(
    brain_root: Path, coarse: int, parses: CountingParse
) -> None:
    cache = brain_root / CACHE_FILE
    cached_brain(brain_root, wall_clock=lambda: coarse)
    assert json.loads(cache.read_text())["written"] == coarse
    cached_brain(brain_root, wall_clock=lambda: coarse + 10**9)  # still racy: not rewritten
    assert json.loads(cache.read_text())["written"] == coarse
    cached_brain(brain_root, wall_clock=lambda: coarse + 3 * 10**9)
    assert json.loads(cache.read_text())["written"] == coarse + 3 * 10**9
    assert parses.take() == sorted(
        ["features/support/refunds.context.md", "features/support/support.agent.md", TICKET]
    )


class Payload:
    """What a pickle could make Keel do if the cache were unpickled: create a file."""

    def __init__(self, marker: Path) -> None:
        self.marker = marker

    def __reduce__(self) -> tuple[Any, ...]:
        return (os.mkdir, (str(self.marker),))


Mangle = Callable[[dict[str, Any], Path], bytes]


def forged(data: dict[str, Any], tweak: Callable[[dict[str, Any]], None]) -> bytes:
    """The cache with the ticket's instructions forged, and `tweak` applied: a reader that
    trusted any of it would show the forged text."""
    data["files"][TICKET]["spec"]["instructions"] = "FORGED"
    tweak(data)
    return json.dumps(data).encode()


def spec_of(data: dict[str, Any], rel: str) -> dict[str, Any]:
    spec: dict[str, Any] = data["files"][rel]["spec"]
    return spec


HOSTILE: list[Any] = [
    pytest.param(lambda _data, _tmp: b"not json", id="not-json"),
    pytest.param(lambda data, _tmp: json.dumps(data).encode()[:200], id="truncated"),
    pytest.param(lambda _data, _tmp: b"\xff\xfe\x00", id="not-utf8"),
    pytest.param(lambda _data, _tmp: b"[" * 100_000, id="nested-too-deep"),
    pytest.param(lambda _data, tmp: pickle.dumps(Payload(tmp / "pwned")), id="a-pickle"),
    pytest.param(lambda _data, _tmp: b'{"format": NaN}', id="nan"),
    pytest.param(
        lambda data, _tmp: forged(data, lambda d: spec_of(d, TICKET).update(chars="9")),
        id="wrong-type",
    ),
    pytest.param(
        lambda data, _tmp: forged(data, lambda d: spec_of(d, TICKET).update(extra=1)),
        id="unknown-field",
    ),
    pytest.param(
        lambda data, _tmp: forged(data, lambda d: spec_of(d, TICKET).update(id="refunds")),
        id="another-files-spec",
    ),
    pytest.param(
        lambda data, _tmp: forged(data, lambda d: d["files"][TICKET].update(digest=7)),
        id="bad-digest",
    ),
    pytest.param(
        lambda data, _tmp: forged(data, lambda d: d["files"].update({"../etc/passwd": {}})),
        id="a-path-outside",
    ),
    pytest.param(lambda data, _tmp: forged(data, lambda d: d.update(format=99)), id="format"),
    pytest.param(lambda data, _tmp: forged(data, lambda d: d.update(root="/")), id="other-root"),
    pytest.param(lambda data, _tmp: forged(data, lambda d: d.update(code=[])), id="other-code"),
    pytest.param(lambda data, _tmp: forged(data, lambda d: d.update(more=1)), id="extra-key"),
]


@pytest.mark.parametrize("mangle", HOSTILE)
def test_a_cache_that_is_not_the_caches_is_ignored_and_rebuilt(
    brain_root: Path, tmp_path: Path, parses: CountingParse, mangle: Mangle
) -> None:
    cache = brain_root / CACHE_FILE
    cached_brain(brain_root, wall_clock=later)
    parses.take()
    cache.write_bytes(mangle(json.loads(cache.read_text()), tmp_path))

    brain = cached_brain(brain_root, wall_clock=later)
    assert instructions(brain)["ticket"] == "Answer the ticket."
    assert brain == load_brain(brain_root)
    assert len(parses.take()) == 3, "every file parsed again"
    assert not (tmp_path / "pwned").exists()
    cached_brain(brain_root, wall_clock=later)
    assert parses.take() == [], "and the cache written anew"


def test_a_brain_whose_cache_cannot_be_written_parses_every_time(
    brain_root: Path, parses: CountingParse
) -> None:
    (brain_root / ".keel").write_text("a file where the folder would go")
    for _ in range(2):
        assert cached_brain(brain_root, wall_clock=later) == load_brain(brain_root)
        assert len(parses.take()) == 3
    assert list(brain_root.glob(".keel*")) == [brain_root / ".keel"], "no file left behind"


def test_a_brain_copied_elsewhere_starts_afresh(
    brain_root: Path, tmp_path: Path, parses: CountingParse
) -> None:
    cached_brain(brain_root, wall_clock=later)
    copy = shutil.copytree(brain_root, tmp_path / "copy")
    parses.take()
    brain = cached_brain(copy, wall_clock=later)
    assert len(parses.take()) == 3
    assert brain.root == copy.resolve()


def test_another_loader_starts_afresh(
    brain_root: Path, parses: CountingParse, monkeypatch: pytest.MonkeyPatch
) -> None:
    cached_brain(brain_root, wall_clock=later)
    parses.take()
    code = snapshot_cache._code_signature()
    monkeypatch.setattr(snapshot_cache, "_code_signature", lambda: [*code, ["new.py", 1, 2, 3]])
    cached_brain(brain_root, wall_clock=later)
    assert len(parses.take()) == 3


def test_a_file_the_loader_cannot_read_is_never_kept(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain({TICKET: context("Answer.")})
    (tmp_path / "outside.md").write_text(context("Not the brain's."))
    os.symlink(tmp_path / "outside.md", root / "features/support/outside.context.md")
    brain = cached_brain(root, wall_clock=later)
    assert brain == load_brain(root)
    assert any("outside.context.md" in skip.path for skip in brain.skips)
    stored = json.loads((root / CACHE_FILE).read_text())
    assert "features/support/outside.context.md" not in stored["files"]


def test_the_cached_source_holds_one_snapshot(brain_root: Path) -> None:
    source = CachedSource(brain_root)
    first = source.current()
    (brain_root / TICKET).write_text(context("Changed while the command ran."))
    assert source.current() is first
    source.close()
    assert instructions(CachedSource(brain_root).current())["ticket"] == (
        "Changed while the command ran."
    )


# -- the followed source: a long-lived process that answers as a new one would -------------


def test_the_followed_source_reads_again_only_when_a_file_moved(
    brain_root: Path, parses: CountingParse
) -> None:
    source = FollowedSource(brain_root, wall_clock=later)
    first = source.current()
    parses.take()
    assert source.refresh() is first, "nothing moved: the same snapshot, nothing read"
    (brain_root / TICKET).write_text(context("Edited between two prompts."))
    edited = source.refresh()
    assert parses.take() == [TICKET]
    assert instructions(edited)["ticket"] == "Edited between two prompts."
    (brain_root / "features/support/refunds.context.md").unlink()
    assert "refunds" not in source.refresh().contexts
    assert source.refresh() == cached_brain(brain_root, wall_clock=later)


def test_the_followed_source_reads_again_while_a_file_is_too_fresh_to_trust(
    brain_root: Path,
) -> None:
    source = FollowedSource(brain_root)  # the files were written just now
    first = source.current()
    assert source.refresh() is not first, "a signature within the clock's tick proves nothing"
    assert source.refresh() == first
