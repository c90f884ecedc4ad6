"""`keel.brain.edit`: an edit is checked as the loader reads it, written atomically inside the
brain only, and committed when the brain is a git repository."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from keel.brain import load_brain
from keel.brain.edit import (
    AccessChange,
    edit_access,
    edit_entity,
    live_brain,
    widening,
    write_atomically,
)
from keel.brain.specs import ReachEntry
from keel.errors import Refused

WriteBrain = Callable[[dict[str, str | bytes]], Path]

HEARTBEAT = "features/news/daily.heartbeat.md"
ACCESS = "constitution/access.yaml"

FILES: dict[str, str | bytes] = {
    "features/news/news.agent.md": "---\ndescription: Writes.\ncontexts: ['*']\n---\nWrite.\n",
    "features/news/other.agent.md": "---\ndescription: Other.\n---\nOther.\n",
    "features/news/topic.context.md": "---\ndescription: Topic.\nwhen: [run]\n---\nRivers.\n",
    "features/news/weather.context.md": "---\ndescription: Sky.\nwhen: [run]\n---\nRain.\n",
    "features/news/client.context.md": (
        "---\ndescription: A client.\nwhen: [chat]\nentity: client id\n---\nThe client.\n"
    ),
    HEARTBEAT: (
        "---\n# when the news goes out\nschedule: '0 8 * * *'\nagent: news\nreach: [topic]\n"
        "---\nWrite the news.\n"
    ),
    "features/news/opened.hook.md": "---\nevent: ticket.opened\nagent: news\n---\nAnswer.\n",
    ACCESS: (
        "bots:\n  nova:\n    default: {role: news}\n    chats:\n"
        "      'tg:chat:1':\n        title: Client one  # the first client\n"
        "        role: news\n        contexts: {client: c1}\n"
    ),
}


def _edit(root: Path, **changes: object) -> str:
    return edit_entity(
        load_brain(root), "heartbeat", "daily", changes, author="news", message="edit"
    ).git


def test_an_edit_keeps_comments_and_other_keys_and_loads(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    said = _edit(root, reach=["weather", {"context": "topic"}], body="Write it short.")
    assert said == "not a git repository"
    text = (root / HEARTBEAT).read_text()
    assert "# when the news goes out" in text
    assert "schedule: '0 8 * * *'" in text
    assert text.endswith("---\nWrite it short.\n")
    entity = load_brain(root).entity("heartbeat", "daily")
    assert entity is not None
    assert entity.reach == (ReachEntry(context="weather"), ReachEntry(context="topic"))
    assert entity.prompt == "Write it short."


def test_null_removes_a_key(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    _edit(root, reach=None)
    entity = load_brain(root).entity("heartbeat", "daily")
    assert entity is not None
    assert entity.reach is None


@pytest.mark.parametrize(
    ("changes", "reason"),
    [
        pytest.param({"schedule": "every day"}, "schedule", id="cron"),
        pytest.param({"event": "x.y"}, "event", id="key-a-heartbeat-has-not"),
        pytest.param({"reach": [{"entity": "k"}]}, "context", id="reach-shape"),
        pytest.param({"agent": "no such id!"}, "agent", id="bad-id"),
    ],
)
def test_an_edit_that_would_not_load_is_refused_and_nothing_is_written(
    write_brain: WriteBrain, changes: dict[str, object], reason: str
) -> None:
    root = write_brain(FILES)
    before = (root / HEARTBEAT).read_bytes()
    with pytest.raises(Refused, match=rf"would not load.*{HEARTBEAT}:\d+: .*{reason}"):
        _edit(root, **changes)
    assert (root / HEARTBEAT).read_bytes() == before


def test_a_refused_edit_leaves_no_temporary_file(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused):
        _edit(root, schedule="never")
    assert not [p for p in (root / "features/news").iterdir() if p.name.startswith(".")]


def test_an_unknown_entity_is_refused_with_a_suggestion(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused, match="no heartbeat 'daly' in this brain — did you mean 'daily'"):
        edit_entity(load_brain(root), "heartbeat", "daly", {"agent": "x"}, author="a", message="m")
    with pytest.raises(Refused, match=re.escape("no heartbeat '../../x'")):
        edit_entity(
            load_brain(root), "heartbeat", "../../x", {"agent": "x"}, author="a", message="m"
        )


def test_a_broken_file_can_be_fixed_by_an_edit(write_brain: WriteBrain) -> None:
    broken = {**FILES, HEARTBEAT: "---\nschedule: nope\nagent: news\n---\nWrite.\n"}
    root = write_brain(broken)
    assert load_brain(root).entity("heartbeat", "daily") is None
    _edit(root, schedule="0 9 * * *")
    assert load_brain(root).entity("heartbeat", "daily") is not None


def test_a_file_linked_out_of_the_brain_is_never_written(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain(FILES)
    outside = tmp_path / "outside.md"
    outside.write_text(str(FILES[HEARTBEAT]))
    brain = load_brain(root)  # loaded while the file is still the brain's own
    (root / HEARTBEAT).unlink()
    os.symlink(outside, root / HEARTBEAT)
    with pytest.raises(Refused, match="symbolic link"):
        edit_entity(brain, "heartbeat", "daily", {"agent": "other"}, author="a", message="m")
    assert outside.read_text() == FILES[HEARTBEAT]


def test_a_folder_linked_out_of_the_brain_is_never_written(
    write_brain: WriteBrain, tmp_path: Path
) -> None:
    root = write_brain(FILES)
    brain = load_brain(root)
    elsewhere = tmp_path / "elsewhere"
    (root / "features/news").rename(elsewhere)
    os.symlink(elsewhere, root / "features/news")
    with pytest.raises(Refused, match="out of the brain"):
        edit_entity(brain, "heartbeat", "daily", {"agent": "other"}, author="a", message="m")
    assert "agent: news" in (elsewhere / "daily.heartbeat.md").read_text()


def _git(root: Path, *args: str) -> str:
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_SYSTEM": os.devnull}
    done = subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=Tester", "-c", "user.email=t@example.com", *args],
        capture_output=True,
        text=True,
        check=True,
        env=env,
    )
    return done.stdout


def test_a_git_brain_commits_the_file_as_the_role(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_brain(FILES)
    _git(root, "init", "-q")
    _git(root, "add", "-A")
    _git(root, "commit", "-q", "-m", "start")
    (root / "features/news/topic.context.md").write_text("---\nwhen: [run]\n---\nSeas.\n")
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", os.devnull)
    said = edit_entity(
        load_brain(root),
        "heartbeat",
        "daily",
        {"agent": "other"},
        author="news",
        message='heartbeat_update({"id": "daily", "agent": "other"})',
    )
    assert said.git == "committed"
    log = _git(root, "log", "-1", "--format=%an|%s", "--name-only")
    assert log.splitlines()[0] == 'news|heartbeat_update({"id": "daily", "agent": "other"})'
    assert log.split()[-1] == HEARTBEAT
    # Only the edited file is committed: another change in the brain stays uncommitted.
    assert "topic.context.md" in _git(root, "status", "--porcelain")


# -- access.yaml -----------------------------------------------------------------------------


def _access(root: Path, change: AccessChange) -> str:
    return edit_access(load_brain(root), change, author="news", message="m").path


def test_access_narrowing_is_not_widening(write_brain: WriteBrain) -> None:
    brain = load_brain(write_brain(FILES))
    assert widening(brain, AccessChange(bot="nova", chat="tg:chat:1", title="One")) is None
    assert widening(brain, AccessChange(bot="nova", chat="tg:chat:1", unbind=("client",))) is None


@pytest.mark.parametrize(
    ("change", "why"),
    [
        pytest.param(
            AccessChange(bot="nova", chat="tg:chat:1", bind={"topic": None}), "binding", id="bind"
        ),
        pytest.param(AccessChange(bot="nova", chat="tg:chat:2", title="New"), "new rule", id="new"),
        pytest.param(
            AccessChange(bot="nova", chat="tg:chat:1", role="other"), "named by no rule", id="role"
        ),
    ],
)
def test_a_widening_is_named(write_brain: WriteBrain, change: AccessChange, why: str) -> None:
    reason = widening(load_brain(write_brain(FILES)), change)
    assert reason is not None
    assert why in reason


def test_access_edits_keep_comments_and_load(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    _access(root, AccessChange(bot="nova", chat="tg:chat:1", title="One", unbind=("client",)))
    text = (root / ACCESS).read_text()
    assert "# the first client" in text
    (rule,) = load_brain(root).access.group_rules("tg:chat:1")
    assert (rule.title, dict(rule.contexts)) == ("One", {})
    _access(root, AccessChange(bot="nova", chat="tg:chat:1", bind={"client": "c2"}))
    (rule,) = load_brain(root).access.group_rules("tg:chat:1")
    assert dict(rule.contexts) == {"client": "c2"}


def test_an_access_edit_that_would_not_load_is_refused(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    before = (root / ACCESS).read_bytes()
    with pytest.raises(Refused, match=rf"would not load.*{ACCESS}:\d+: "):
        _access(root, AccessChange(bot="nova", chat="tg:chat:1", title="a\x00b"))
    assert (root / ACCESS).read_bytes() == before


def test_an_edit_from_a_pinned_snapshot_goes_to_the_live_brain(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    pinned = root / ".keel" / "commits" / "tree-abc"
    shutil.copytree(root / "features", pinned / "features")
    shutil.copytree(root / "constitution", pinned / "constitution")
    brain = live_brain(load_brain(pinned))
    assert brain.root == root.resolve()
    edit_entity(brain, "heartbeat", "daily", {"agent": "other"}, author="a", message="m")
    assert "agent: other" in (root / HEARTBEAT).read_text()
    assert "agent: news" in (pinned / HEARTBEAT).read_text()
    elsewhere = load_brain(root)
    assert live_brain(elsewhere) is elsewhere


@pytest.mark.parametrize(
    ("bind", "reason"),
    [
        pytest.param(
            {"clinet": "c1"}, "no context 'clinet' in this brain — did you mean", id="name"
        ),
        pytest.param({"client": None}, "'client' is keyed by client id", id="no-key"),
        pytest.param({"topic": "t1"}, "'topic' names no entity", id="extra-key"),
    ],
)
def test_a_binding_no_turn_could_use_is_refused(
    write_brain: WriteBrain, bind: dict[str, str | None], reason: str
) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused, match=re.escape(reason)):
        _access(root, AccessChange(bot="nova", chat="tg:chat:1", bind=bind))
    assert (root / ACCESS).read_text() == FILES[ACCESS]


@pytest.mark.parametrize(
    ("change", "said"),
    [
        (
            AccessChange(bot="nova", chat="default", bind={"client": "c1"}),
            "the default rule is a template for many chats: it binds no contexts",
        ),
        (
            AccessChange(bot="nova", chat="tg:chat:1", unbind=("weather",)),
            "the rule binds no context 'weather' — nothing to remove",
        ),
        (
            AccessChange(bot="nova", chat="tg:chat:1", title="Client one"),
            f"{ACCESS} already says that — nothing changed",
        ),
    ],
    ids=["template-binds", "unbind-missing", "no-change"],
)
def test_an_access_change_that_cannot_apply_is_refused_and_writes_nothing(
    write_brain: WriteBrain, change: AccessChange, said: str
) -> None:
    root = write_brain(FILES)
    before = (root / ACCESS).read_bytes()
    with pytest.raises(Refused, match=re.escape(said)):
        _access(root, change)
    assert (root / ACCESS).read_bytes() == before


@pytest.mark.parametrize(
    ("text", "said"),
    [
        ("- a list\n", "is not a mapping with `bots:`"),
        ("bots:\n  nova: [a]\n", f"{ACCESS}: bots.nova is not a mapping"),
        ("bots:\n  nova:\n    chats: {'tg:chat:1': 3}\n", "bots.nova.chats.tg:chat:1 is not a"),
        (
            "bots:\n  nova:\n    chats: {'tg:chat:1': {role: news, contexts: [a]}}\n",
            "the rule's contexts: is not a mapping",
        ),
    ],
    ids=["not-a-mapping", "bot-a-list", "rule-a-number", "contexts-a-list"],
)
def test_an_access_file_of_the_wrong_shape_is_left_for_a_person(
    write_brain: WriteBrain, text: str, said: str
) -> None:
    root = write_brain({**FILES, ACCESS: text})
    with pytest.raises(Refused, match=re.escape(said)):
        _access(root, AccessChange(bot="nova", chat="tg:chat:1", bind={"client": "c2"}))
    assert (root / ACCESS).read_text() == text


def test_an_access_edit_writes_a_missing_access_file(write_brain: WriteBrain) -> None:
    files = {k: v for k, v in FILES.items() if k != ACCESS}
    root = write_brain({**files, "constitution/MANIFEST.yaml": "name: t\n"})
    _access(root, AccessChange(bot="nova", chat="tg:chat:9", role="news", bind={"client": "c9"}))
    (rule,) = load_brain(root).access.group_rules("tg:chat:9")
    assert (rule.role, dict(rule.contexts)) == ("news", {"client": "c9"})


@pytest.mark.parametrize(
    ("kind", "ident", "changes", "said"),
    [
        ("schedule", "daily", {"agent": "news"}, "'schedule' is not a heartbeat, hook or scenario"),
        ("heartbeat", "daily", {"colour": "red"}, "cannot change colour"),
        ("heartbeat", "daily", {}, "nothing to change"),
        ("heartbeat", "daily", {"agent": "news"}, "already says that — nothing changed"),
    ],
    ids=["kind", "unknown-key", "empty", "same"],
)
def test_an_entity_edit_that_cannot_apply_is_refused(
    write_brain: WriteBrain, kind: str, ident: str, changes: dict[str, object], said: str
) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused, match=re.escape(said)):
        edit_entity(load_brain(root), kind, ident, changes, author="news", message="m")
    assert (root / HEARTBEAT).read_text() == FILES[HEARTBEAT]


def test_a_check_without_write_says_what_would_change_and_writes_nothing(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(FILES)
    brain = load_brain(root)
    edited = edit_entity(
        brain, "heartbeat", "daily", {"reach": ["weather"]}, author="n", message="m", write=False
    )
    assert (edited.path, edited.changed, edited.git) == (HEARTBEAT, ("reach",), "not written")
    assert (root / HEARTBEAT).read_text() == FILES[HEARTBEAT]


def test_a_scenarios_inline_hook_is_edited_in_its_scenario_not_here(
    write_brain: WriteBrain,
) -> None:
    scenario = "features/news/launch.scenario.md"
    text = "---\nagent: news\nhooks:\n  - event: ticket.closed\n---\nLaunch.\n"
    root = write_brain({**FILES, scenario: text})
    with pytest.raises(Refused, match=r"written inline in scenario 'launch'.*edit that scenario"):
        edit_entity(
            load_brain(root), "hook", "launch-ticket-closed", {"agent": "other"}, author="a",
            message="m",
        )  # fmt: skip
    assert (root / scenario).read_text() == text


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param("Write the news.\n", "has no frontmatter between '---' lines", id="none"),
        pytest.param("---\nagent: news\nWrite.\n", "its frontmatter is never closed", id="open"),
        pytest.param("---\n- agent\n---\nWrite.\n", "is not a mapping of keys", id="a-list"),
        pytest.param("---\nagent: [news\n---\nWrite.\n", ":3: ", id="broken-yaml"),
    ],
)
def test_a_file_whose_frontmatter_cannot_be_edited_is_left_for_a_person(
    write_brain: WriteBrain, text: str, said: str
) -> None:
    root = write_brain({**FILES, HEARTBEAT: text})
    brain = load_brain(root)
    assert brain.entity("heartbeat", "daily") is None  # skipped, but found by its name
    with pytest.raises(Refused, match=re.escape(said) + ".*fix it by hand first"):
        edit_entity(brain, "heartbeat", "daily", {"agent": "other"}, author="a", message="m")
    assert (root / HEARTBEAT).read_text() == text


def test_an_edit_the_whole_brain_would_skip_is_refused_with_the_loaders_reason(
    write_brain: WriteBrain,
) -> None:
    scenario = "features/news/launch.scenario.md"
    text = "---\nagent: news\nhooks:\n  - event: ticket.closed\n    id: opened\n---\nGo.\n"
    root = write_brain({**FILES, scenario: text})
    # The file parses alone; only the whole brain knows its hook's id is taken.
    with pytest.raises(Refused, match=rf"would not load.*{scenario}: its inline hook 'opened'"):
        edit_entity(
            load_brain(root), "scenario", "launch", {"body": "Launch."}, author="a", message="m"
        )
    assert (root / scenario).read_text() == text


def test_removing_a_key_the_file_does_not_have_changes_nothing(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused, match="already says that"):
        _edit(root, thread=None)
    _edit(root, thread=None, agent="other")
    text = (root / HEARTBEAT).read_text()
    assert "agent: other" in text
    assert "thread" not in text


def test_a_file_linked_inside_the_brain_is_read_but_never_written_through(
    write_brain: WriteBrain,
) -> None:
    root = write_brain(FILES)
    target = root / "features/news/daily.md.txt"
    target.write_text(str(FILES[HEARTBEAT]))
    (root / HEARTBEAT).unlink()
    os.symlink(target, root / HEARTBEAT)
    with pytest.raises(Refused, match=r"is a symbolic link — .*replace the link with the file"):
        _edit(root, agent="other")
    assert target.read_text() == FILES[HEARTBEAT]
    assert (root / HEARTBEAT).is_symlink()


@pytest.mark.parametrize(
    ("rel", "said"),
    [
        pytest.param("features/news", "features/news is not a regular file", id="a-folder"),
        pytest.param("features/../x.md", "features/..: not a brain folder", id="dot-dot"),
        pytest.param("nowhere/x.md", "nowhere does not exist in the brain", id="no-folder"),
        pytest.param(f"{ACCESS}/x.yaml", f"{ACCESS} is not a folder inside the brain", id="a-file"),
    ],
)
def test_a_write_to_what_is_not_a_brain_file_is_refused(
    write_brain: WriteBrain, rel: str, said: str
) -> None:
    root = write_brain(FILES)
    with pytest.raises(Refused, match=re.escape(said)):
        write_atomically(root, rel, "text\n")
    assert not (root / "x.md").exists()
    assert (root / ACCESS).read_text() == FILES[ACCESS]


def test_a_write_that_fails_leaves_the_file_and_no_temporary_file(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_brain(FILES)

    def refuse(_src: str, _dst: str) -> None:
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", refuse)
    with pytest.raises(OSError, match="disk full"):
        write_atomically(root, HEARTBEAT, "new\n")
    assert (root / HEARTBEAT).read_text() == FILES[HEARTBEAT]
    assert not [p for p in (root / "features/news").iterdir() if p.name.startswith(".")]


def test_without_the_git_program_an_edit_is_written_uncommitted(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_brain(FILES)
    _git(root, "init", "-q")
    monkeypatch.setattr(shutil, "which", lambda _name: None)
    assert _edit(root, agent="other") == "not a git repository"
    assert "agent: other" in (root / HEARTBEAT).read_text()


def test_a_commit_git_refuses_leaves_the_file_written_and_says_why(
    write_brain: WriteBrain, monkeypatch: pytest.MonkeyPatch
) -> None:
    root = write_brain(FILES)
    _git(root, "init", "-q")
    _git(root, "config", "user.email", "brain@example.com")  # the repository's own identity
    _git(root, "config", "user.name", "Brain")
    hook = root / ".git/hooks/pre-commit"
    hook.write_text("#!/bin/sh\necho 'no commits today' >&2\nexit 1\n")
    hook.chmod(0o755)
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", os.devnull)
    monkeypatch.setenv("GIT_CONFIG_SYSTEM", os.devnull)
    said = _edit(root, agent="other")
    assert said == "not committed: git commit failed (no commits today)"
    assert "agent: other" in (root / HEARTBEAT).read_text()


def test_an_access_change_to_a_bots_template_sets_its_role(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    _access(root, AccessChange(bot="nova", chat="default", role="other"))
    assert "default: {role: other}" in (root / ACCESS).read_text()
    assert "default" in {r.scope for r in load_brain(root).access.rules if r.role == "other"}


def test_an_access_change_for_a_bot_written_empty_fills_it_in(write_brain: WriteBrain) -> None:
    root = write_brain({**FILES, ACCESS: "bots:\n  nova:\n"})
    _access(root, AccessChange(bot="nova", chat="tg:chat:3", role="news", bind={"client": "c3"}))
    (rule,) = load_brain(root).access.group_rules("tg:chat:3")
    assert (rule.role, dict(rule.contexts)) == ("news", {"client": "c3"})


def test_binding_what_a_rule_binds_already_changes_only_the_rest(write_brain: WriteBrain) -> None:
    root = write_brain(FILES)
    change = AccessChange(bot="nova", chat="tg:chat:1", title="One", bind={"client": "c1"})
    edited = edit_access(load_brain(root), change, author="news", message="m")
    assert edited.changed == ("for bot nova, chat tg:chat:1", "title One (was Client one)")


def test_unbinding_the_tenancy_context_is_widening(write_brain: WriteBrain) -> None:
    manifest = {"constitution/MANIFEST.yaml": "tenancy: { context: client, column: client_id }\n"}
    brain = load_brain(write_brain({**FILES, **manifest}))
    reason = widening(brain, AccessChange(bot="nova", chat="tg:chat:1", unbind=("client",)))
    assert reason is not None
    assert "'client' is the brain's tenancy context" in reason


@pytest.mark.parametrize(
    ("text", "said"),
    [
        pytest.param(b"bots: \xff\n", "cannot read it", id="not-utf8"),
        pytest.param(b"bots: [nova]\n", "the parent of bots.nova is not a mapping", id="bots-list"),
    ],
)
def test_an_access_file_that_cannot_be_read_as_rules_is_left_for_a_person(
    write_brain: WriteBrain, text: bytes, said: str
) -> None:
    root = write_brain({**FILES, ACCESS: text})
    with pytest.raises(Refused, match=re.escape(said)):
        _access(root, AccessChange(bot="nova", chat="tg:chat:1", title="One"))
    assert (root / ACCESS).read_bytes() == text
