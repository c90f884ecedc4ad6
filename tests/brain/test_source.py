"""The live brain: edits reach the next snapshot, and only what changed is parsed again."""

from __future__ import annotations

import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from keel.brain import source as source_module
from keel.brain.files import Parsed
from keel.brain.loader import load_brain, parse_path
from keel.brain.source import BrainSource
from tests.conftest import WriteBrain

ROLE = "---\ncontexts: [ticket]\ncapabilities: [context:read]\n---\nYou are support.\n"
HOUR_NS = 3600 * 10**9


def context(body: str, when: str = "[run, ask]") -> str:
    return f"---\ndescription: A context.\nwhen: {when}\n---\n{body}\n"


class FakeClock:
    """Monotonic seconds that move only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float = 60.0) -> None:
        self.now += seconds


class CountingParse:
    """The real parse step, remembering which paths it was asked to parse."""

    def __init__(self) -> None:
        self.paths: list[str] = []

    def __call__(self, root: Path, path: str, raw: bytes | None) -> Parsed:
        self.paths.append(path)
        return parse_path(root, path, raw)

    def take(self) -> list[str]:
        taken, self.paths = sorted(self.paths), []
        return taken


@pytest.fixture
def brain_root(write_brain: WriteBrain) -> Path:
    return write_brain(
        {
            "features/support/ticket.context.md": context("Answer the ticket."),
            "features/support/refunds.context.md": context("Refunds need approval."),
            "features/support/support.agent.md": ROLE,
            "features/billing/chase.context.md": context("Chase politely."),
        }
    )


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def parse() -> CountingParse:
    return CountingParse()


def settled_clock() -> int:
    """A wall clock an hour ahead: every file looks long settled, so only stamps count."""
    return time.time_ns() + HOUR_NS


@pytest.fixture(params=["fresh", "settled"])
def source(
    request: pytest.FixtureRequest, brain_root: Path, clock: FakeClock, parse: CountingParse
) -> Iterator[BrainSource]:
    """A stat-mode source, with files just written and with files long settled.

    Just-written files are re-checked by content on every probe; settled ones only when
    their stamp (or their folder's mtime) moves. Both paths must find every change.
    """
    wall = settled_clock if request.param == "settled" else time.time_ns
    with BrainSource(brain_root, watch=False, clock=clock, parse=parse, wall_clock=wall) as live:
        parse.take()
        yield live


def write(root: Path, rel: str, text: str) -> None:
    target = root / rel
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(text, encoding="utf-8")


def instructions(source: BrainSource, ident: str) -> str:
    return source.current().contexts[ident].instructions


def test_the_first_snapshot_is_the_same_as_a_fresh_load(
    brain_root: Path, source: BrainSource
) -> None:
    assert source.current() == load_brain(brain_root)
    assert set(source.current().contexts) == {"ticket", "refunds", "chase"}


def test_nothing_changed_gives_the_same_snapshot_object(
    source: BrainSource, clock: FakeClock, parse: CountingParse
) -> None:
    first = source.current()
    clock.advance()
    assert source.current() is first
    clock.advance()
    assert source.current() is first
    assert parse.take() == []


def test_an_edit_reparses_only_the_edited_file(
    brain_root: Path, source: BrainSource, clock: FakeClock, parse: CountingParse
) -> None:
    before = source.current()
    write(brain_root, "features/support/ticket.context.md", context("Answer within the SLA."))
    clock.advance()
    after = source.current()
    assert after is not before
    assert after.contexts["ticket"].instructions == "Answer within the SLA."
    assert after.contexts["refunds"] is before.contexts["refunds"]
    assert parse.take() == ["features/support/ticket.context.md"]


def test_the_probe_waits_for_the_manifest_interval(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    # No MANIFEST: the default interval is two seconds.
    first = source.current()
    write(brain_root, "features/support/ticket.context.md", context("New words."))
    clock.advance(1.9)
    assert source.current() is first
    clock.advance(0.2)
    assert instructions(source, "ticket") == "New words."

    write(brain_root, "constitution/MANIFEST.yaml", "contentProbe: { context: 30 }\n")
    clock.advance(2.0)
    assert source.current().manifest.content_probe_seconds == 30
    probed = source.current()
    write(brain_root, "features/support/ticket.context.md", context("Newer words."))
    clock.advance(29.0)
    assert source.current() is probed
    clock.advance(1.0)
    assert instructions(source, "ticket") == "Newer words."


def test_a_zero_interval_probes_on_every_call(brain_root: Path, clock: FakeClock) -> None:
    write(brain_root, "constitution/MANIFEST.yaml", "contentProbe: { context: 0 }\n")
    with BrainSource(brain_root, watch=False, clock=clock) as live:
        write(brain_root, "features/billing/chase.context.md", context("Chase twice."))
        assert instructions(live, "chase") == "Chase twice."  # the clock never moved


def test_a_same_size_edit_within_one_timestamp_tick_is_seen(
    brain_root: Path, clock: FakeClock, parse: CountingParse
) -> None:
    with BrainSource(brain_root, watch=False, clock=clock, parse=parse) as live:
        parse.take()
        path = brain_root / "features/support/ticket.context.md"
        stamp = path.stat()
        path.write_text(context("Answer the TICKET."), encoding="utf-8")  # same length
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        assert (path.stat().st_mtime_ns, path.stat().st_size) == (
            stamp.st_mtime_ns,
            stamp.st_size,
        )
        clock.advance()
        assert instructions(live, "ticket") == "Answer the TICKET."
        assert parse.take() == ["features/support/ticket.context.md"]


def test_a_settled_file_is_trusted_by_its_stamp(brain_root: Path, clock: FakeClock) -> None:
    # An hour after the last write, a file whose mtime and size did not move is not read
    # again: that is what keeps a probe at one stat per file.
    later = CountingParse()
    with BrainSource(
        brain_root, watch=False, clock=clock, parse=later, wall_clock=settled_clock
    ) as live:
        first = live.current()
        path = brain_root / "features/support/ticket.context.md"
        stamp = path.stat()
        path.write_text(context("Answer the TICKET."), encoding="utf-8")
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))
        later.take()
        clock.advance()
        assert live.current() is first
        assert later.take() == []


def test_touching_a_file_without_changing_it_costs_no_parse(
    brain_root: Path, source: BrainSource, clock: FakeClock, parse: CountingParse
) -> None:
    first = source.current()
    path = brain_root / "features/support/ticket.context.md"
    os.utime(path, ns=(path.stat().st_atime_ns, path.stat().st_mtime_ns + 5 * 10**9))
    clock.advance()
    assert source.current() is first
    assert parse.take() == []


def test_added_and_deleted_files_come_and_go(
    brain_root: Path, source: BrainSource, clock: FakeClock, parse: CountingParse
) -> None:
    write(brain_root, "features/billing/rates.context.md", context("Quote the rates."))
    clock.advance()
    assert instructions(source, "rates") == "Quote the rates."
    assert parse.take() == ["features/billing/rates.context.md"]

    (brain_root / "features/support/refunds.context.md").unlink()
    clock.advance()
    assert set(source.current().contexts) == {"ticket", "chase", "rates"}
    assert parse.take() == []


def test_a_renamed_file_changes_its_id(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    old = brain_root / "features/support/refunds.context.md"
    old.rename(old.with_name("returns.context.md"))
    clock.advance()
    brain = source.current()
    assert "refunds" not in brain.contexts
    assert brain.contexts["returns"].instructions == "Refunds need approval."


def test_a_new_subdirectory_with_a_context_is_found(
    brain_root: Path, source: BrainSource, clock: FakeClock, parse: CountingParse
) -> None:
    write(brain_root, "features/support/evening/film/film.context.md", context("Pick a film."))
    clock.advance()
    brain = source.current()
    assert brain.contexts["film"].dir == ("evening", "film")
    assert brain.by_dir[("support", ("evening", "film"))] == ("film",)
    assert parse.take() == ["features/support/evening/film/film.context.md"]


def test_a_new_feature_and_constitution_are_found(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    write(brain_root, "features/coach/morning.context.md", context("Plan the day."))
    write(brain_root, "constitution/access.yaml", "bots:\n  nova:\n    default: { role: s }\n")
    clock.advance()
    brain = source.current()
    assert brain.contexts["morning"].feature == "coach"
    assert [(r.bot, r.scope, r.role) for r in brain.access.rules] == [("nova", "default", "s")]


def test_a_removed_folder_takes_everything_under_it(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    write(brain_root, "features/billing/deep/er/late.context.md", context("Late fees."))
    clock.advance()
    assert "late" in source.current().contexts
    shutil.rmtree(brain_root / "features/billing")
    clock.advance()
    brain = source.current()
    assert set(brain.contexts) == {"ticket", "refunds"}
    assert "billing" not in brain.features


def test_a_file_that_breaks_is_skipped_and_comes_back_when_fixed(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    path = "features/support/ticket.context.md"
    write(brain_root, path, "---\nwhen: [run, reploy]\n---\nAnswer.\n")
    clock.advance()
    broken = source.current()
    assert "ticket" not in broken.contexts
    assert {"refunds", "chase"} <= set(broken.contexts)
    assert [(s.path, s.line) for s in broken.skips] == [(path, 2)]
    assert "did you mean 'reply'?" in broken.skips[0].reason

    write(brain_root, path, context("Answer again."))
    clock.advance()
    fixed = source.current()
    assert fixed.skips == ()
    assert fixed.contexts["ticket"].instructions == "Answer again."


def test_a_hot_snapshot_always_equals_a_fresh_load(
    brain_root: Path, source: BrainSource, clock: FakeClock
) -> None:
    steps: list[Callable[[], Any]] = [
        lambda: write(brain_root, "features/support/a/b/deep.context.md", context("Deep.")),
        lambda: write(brain_root, "features/support/FEATURE.md", "---\nenabled: false\n---\n"),
        lambda: write(brain_root, "features/billing/chase.context.md", "not frontmatter"),
        lambda: write(brain_root, "features/billing/dup/ticket.context.md", context("Twin.")),
        lambda: (brain_root / "features/support/FEATURE.md").unlink(),
        lambda: shutil.rmtree(brain_root / "features/support/a"),
        lambda: write(brain_root, "features/billing/chase.context.py", "x = 1\n"),
        lambda: write(brain_root, "state/001.sql", "CREATE TABLE t (a TEXT);\n"),
    ]
    for step in steps:
        step()
        clock.advance()
        assert source.current() == load_brain(brain_root)


def wait_for(condition: Callable[[], bool], seconds: float = 10.0) -> None:
    """Poll until `condition` holds; fail (not hang) when it never does."""
    deadline = time.monotonic() + seconds
    while not condition():
        if time.monotonic() > deadline:
            pytest.fail(f"still not true after {seconds} s")
        time.sleep(0.01)


def watcher_threads() -> list[threading.Thread]:
    return [t for t in threading.enumerate() if t.name == "keel-brain-watch"]


def test_watch_mode_sees_edits_additions_and_deletions(
    brain_root: Path, parse: CountingParse
) -> None:
    with BrainSource(brain_root, watch=True, parse=parse) as live:
        assert live.mode == "watch"
        first = live.current()
        parse.take()
        assert live.current() is first

        write(brain_root, "features/support/ticket.context.md", context("Watched edit."))
        wait_for(lambda: instructions(live, "ticket") == "Watched edit.")
        assert parse.take() == ["features/support/ticket.context.md"]

        write(brain_root, "features/coach/evening/film.context.md", context("A film."))
        wait_for(lambda: "film" in live.current().contexts)
        assert live.current().contexts["film"].dir == ("evening",)

        (brain_root / "features/billing/chase.context.md").unlink()
        wait_for(lambda: "chase" not in live.current().contexts)
        assert live.current() == load_brain(brain_root)
    closed: str = live.mode  # closing the source stops the watcher: it probes by stat
    assert closed == "stat"
    assert watcher_threads() == []


def test_watch_mode_ignores_keel_own_files(brain_root: Path, parse: CountingParse) -> None:
    with BrainSource(brain_root, watch=True, parse=parse) as live:
        first = live.current()
        parse.take()
        write(brain_root, "features/support/.keel/scratch.context.md", context("Hidden."))
        write(brain_root, ".keel/keel.db", "rows")
        write(brain_root, "features/support/ticket.context.md", context("Seen."))
        wait_for(lambda: live.current() is not first)
        assert "scratch" not in live.current().contexts
        assert set(parse.paths) == {"features/support/ticket.context.md"}


class _NoInotify:
    def __init__(self, *_args: object) -> None:
        raise OSError(28, "OS file watch limit reached")


class _DyingNotify:
    def __init__(self, *_args: object) -> None:
        pass

    def watch(self, *_args: object) -> Any:
        raise RuntimeError("the watcher lost its inotify queue")

    def close(self) -> None:
        pass


def test_a_watcher_that_cannot_start_falls_back_to_stat(
    brain_root: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(source_module, "RustNotify", _NoInotify)
    with (
        caplog.at_level(logging.WARNING, logger="keel.brain.source"),
        BrainSource(brain_root, watch=True, clock=clock) as live,
    ):
        assert live.mode == "stat"
        assert "cannot watch the brain for edits" in caplog.text
        assert "watch limit reached" in caplog.text
        write(brain_root, "features/support/ticket.context.md", context("By stat."))
        clock.advance()
        assert instructions(live, "ticket") == "By stat."


def test_a_watcher_that_dies_falls_back_to_stat(
    brain_root: Path,
    clock: FakeClock,
    monkeypatch: pytest.MonkeyPatch,
    caplog: pytest.LogCaptureFixture,
) -> None:
    monkeypatch.setattr(source_module, "RustNotify", _DyingNotify)
    with (
        caplog.at_level(logging.WARNING, logger="keel.brain.source"),
        BrainSource(brain_root, watch=True, clock=clock) as live,
    ):
        write(brain_root, "features/support/ticket.context.md", context("Missed by watch."))
        wait_for(lambda: live.current() is not None and live.mode == "stat")
        assert "the brain watcher stopped" in caplog.text
        # The fallback's first probe found the edit the dead watcher never reported.
        assert instructions(live, "ticket") == "Missed by watch."


def test_a_dangling_link_is_a_skip_not_a_silent_gap(tmp_path: Path) -> None:
    root = tmp_path / "brain"
    (root / "features" / "a").mkdir(parents=True)
    (root / "features/a/a.context.md").write_text("---\nwhen: [run]\n---\nx\n", "utf-8")
    (root / "features/a/gone.context.md").symlink_to(root / "features/a/nowhere.md")
    with BrainSource(root, watch=False) as live:
        brain = live.current()
    assert [s.path for s in brain.skips] == ["features/a/gone.context.md"]
    assert brain.skips[0].reason.startswith("cannot read")
