"""A run reads the brain as it was when the run started: in a git repository, the commit
it started on (its waits and replays included), while a new chat turn or a new run reads
the brain as it is now; without git, a run records the content hash of the brain's files.

The weather brain's scenario waits for a person's approval before its agent turn, so a
test can change the brain while the run waits; the `weather` context says the sky in its
text and in its code half's output, which tells the two versions apart in a turn.
"""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from keel.runs.commits import content_hash
from tests.runs.brains import ROLE
from tests.runs.conftest import DATABASES, Runs, launched_on, write_files
from tests.runs.processes import finish, keel

CHAT = "tg:chat:desk"
CONTEXT = "features/desk/weather.context.md"
CODE = "features/desk/weather.context.py"


def weather(sky: str) -> dict[str, str]:
    """The brain's two files that say the sky: the context's text and its code half."""
    return {
        CONTEXT: (
            f"---\ndescription: The weather.\nwhen: [always]\n---\nThe forecast says {sky}.\n"
        ),
        CODE: f"""
from keel.code import define_context


def render(entity, ctx):
    return [{{"key": "sky", "text": "The code says {sky}."}}]


context = define_context(render=render)
""",
    }


WEATHER_BRAIN: dict[str, str] = {
    # The test's engine probes the files on every call (no watcher, no 2 s pause): a run
    # pins what the engine sees (keel.runs.pinning), and these tests edit, then run at once.
    "constitution/MANIFEST.yaml": (
        "contexts:\n  codeTimeoutMs: 5000\ncontentProbe:\n  context: 0\n"
    ),
    "features/desk/writer.agent.md": ROLE.format(
        description="Writes the weather report.", extra="", persona="You write the weather."
    ),
    "features/desk/note.heartbeat.md": (
        '---\ndescription: A note.\nschedule: "0 8 * * *"\nagent: writer\n'
        f"bot: nova\nchat: {CHAT}\n---\nWrite a note.\n"
    ),
    "features/desk/report.scenario.md": (
        f"---\ndescription: The weather report.\nagent: writer\nbot: nova\nchat: {CHAT}\n---\n"
        "Ask, then write.\n"
    ),
    "features/desk/report.pipeline.py": """
from keel.code import define_pipeline


async def run(ctx, vars):
    card = await ctx.request_approval(text="Write the weather report?")
    if not await ctx.await_approval(card):
        return {"written": False}
    answer = await ctx.run_agent(agent="writer", prompt="Write the weather report.")
    await ctx.send(text=answer["text"])
    return {"written": True}


pipeline = define_pipeline(run)
""",
    **weather("nothing yet"),
}


def git(repo: Path, *args: str) -> str:
    """git in the brain's repository, with no configuration of this machine's."""
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    done = subprocess.run(
        ["git", "-c", "user.name=Test", "-c", "user.email=test@example.org", *args],
        cwd=repo,
        env=env,
        capture_output=True,
        text=True,
        check=True,
    )
    return done.stdout.strip()


def commit(repo: Path, message: str) -> str:
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", message)
    return git(repo, "rev-parse", "HEAD")


@pytest.fixture(
    scope="module",
    params=DATABASES,
)
def pinned(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Runs]:
    """The weather brain at the top of a git repository, with this process's runtime."""
    folder = tmp_path_factory.mktemp("pinning")
    brain = write_files(folder / "brain", {**WEATHER_BRAIN, ".gitignore": ".keel/\n"})
    git(brain, "init", "-q")
    commit(brain, "the weather brain")
    yield from launched_on(request.param, brain, folder)


def said(turn: dict[str, Any]) -> str:
    """Everything a turn's assembled blocks say."""
    return "\n".join(block["text"] for block in turn["blocks"])


def says(turn: dict[str, Any], sky: str) -> bool:
    text = said(turn)
    return f"The forecast says {sky}." in text and f"The code says {sky}." in text


@pytest.mark.parametrize(
    ("waits", "change"),
    [
        pytest.param("here", "committed", id="waiting-here-committed"),
        pytest.param("here", "dirty", id="waiting-here-dirty"),
        pytest.param("replayed", "committed", id="replayed-by-another-process"),
    ],
)
def test_a_run_reads_the_commit_it_started_on_while_new_turns_read_the_new_files(
    pinned: Runs, request: pytest.FixtureRequest, waits: str, change: str
) -> None:
    old, new = f"sun ({request.node.callspec.id})", f"rain ({request.node.callspec.id})"
    write_files(pinned.brain, weather(old))
    started_on = commit(pinned.brain, f"the forecast says {old}")
    model = pinned.script(f"report-{waits}-{change}", [{"text": "Report written."}])

    if waits == "here":  # the run waits in this process, its workflow thread parked
        record = pinned.json("scenario", "report", "--model", model)
    else:  # the run waits in the journal: its process ended, another takes it over
        words = ["report", "--model", model, "--db", pinned.db, "--json"]
        status, out, err = finish(keel("scenario", str(pinned.brain), *words))
        assert status == 0, err
        record = json.loads(out)
    assert (record["status"], record["pin"]) == ("waiting", f"git:{started_on}")
    [card] = record["cards"]

    write_files(pinned.brain, weather(new))
    now_on = commit(pinned.brain, f"the forecast says {new}") if change == "committed" else None

    after = pinned.json("approve", card["id"], "--yes")
    assert (after["status"], after["pin"]) == ("done", f"git:{started_on}")
    if waits == "replayed":
        assert record["executor"] != after["executor"] == pinned.runtime.executor
    [turn] = after["turns"]
    assert [a["context"] for a in turn["attached"]] == ["weather"]
    assert says(turn, old), said(turn)
    assert not says(turn, new)
    assert [m["text"] for m in after["messages"]][1:] == ["Report written."]

    chat = pinned.json("turn", "--role", "writer", "--chat", CHAT, "--input", "Weather?")
    assert says(chat, new), said(chat)

    fresh = pinned.json("run", "heartbeat:note", "--model", "none")
    if now_on is not None:
        assert fresh["pin"] == f"git:{now_on}"
        assert says(fresh["turns"][0], new), said(fresh["turns"][0])
    else:
        # Edits not committed yet: the new run says it started on a dirty tree, and reads
        # the commit (keel.runs.commits) until they are committed.
        assert fresh["pin"] == f"git:{started_on}+dirty"
        commit(pinned.brain, "the edits, committed")


def test_without_git_a_run_records_the_content_hash_of_the_brain(tmp_path: Path) -> None:
    brain = write_files(tmp_path / "brain", {**WEATHER_BRAIN, **weather("fog")})
    db = f"sqlite:///{(tmp_path / 'keel.db').as_posix()}"
    status, out, err = finish(
        keel("run", str(brain), "heartbeat:note", "--model", "none", "--db", db, "--json")
    )
    assert status == 0, err
    record = json.loads(out)
    assert record["status"] == "done"
    assert record["pin"] == content_hash(brain)
    assert record["pin"].startswith("sha256:")
    assert says(record["turns"][0], "fog")
