"""A run's agent editing its brain: a `heartbeat_update` of `reach` is what the next run
carries; an `access_widen` waits on a card, and access.yaml is unchanged until a person
approves it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from tests.runs.brains import ROLE, RUNS_BRAIN
from tests.runs.conftest import Runs, runs_of, script, write_files
from tests.runs.processes import finish, keel

ACCESS = "bots:\n  nova:\n    chats:\n      'tg:chat:board':\n        role: keeper\n"
FILES = {
    **RUNS_BRAIN,
    # The runtime here follows the brain by stat probes (no watcher): probe at every run, so
    # the next run's pin is taken from the files as they are now.
    "constitution/MANIFEST.yaml": "contexts:\n  codeTimeoutMs: 5000\ncontentProbe: {context: 0}\n",
    "constitution/access.yaml": ACCESS,
    "features/keep/keeper.agent.md": ROLE.format(
        description="Tends the brain.",
        extra="",
        persona="You tend the brain.",
    ).replace("message:send]", "message:send, brain:edit, access:widen]"),
    "features/keep/tend.heartbeat.md": (
        '---\ndescription: Tend.\nschedule: "0 7 * * *"\nagent: keeper\nreach: [notice]\n'
        "bot: nova\nchat: tg:chat:board\n---\nTend the brain.\n"
    ),
}


runs = runs_of(FILES, "selfedit")


def run(runs: Runs, name: str, calls: list[dict[str, Any]]) -> dict[str, Any]:
    steps: list[dict[str, Any]] = [{"tool_calls": calls}] if calls else []
    model = runs.script(name, [*steps, {"text": "Done."}])
    record: dict[str, Any] = runs.json("run", "heartbeat:tend", "--model", model)
    return record


def test_a_heartbeat_update_of_reach_is_the_next_runs_reach(runs: Runs) -> None:
    update = {"name": "heartbeat_update", "arguments": {"id": "tend", "reach": ["topic"]}}
    first = run(runs, "update-reach", [update])
    assert first["status"] == "done"
    assert first["reach"] == [{"context": "notice", "entity": None}]
    # The live brain was edited, not the snapshot the run was pinned to.
    assert "reach:\n  - topic\n" in (runs.brain / "features/keep/tend.heartbeat.md").read_text()
    second = run(runs, "after-update", [])
    assert second["reach"] == [{"context": "topic", "entity": None}]


def test_an_access_widen_waits_for_a_card_and_writes_nothing_meanwhile(runs: Runs) -> None:
    widen = {
        "name": "access_widen",
        "arguments": {"bot": "nova", "chat": "tg:chat:board", "bind": {"rating": "f1"}},
    }
    record = run(runs, "widen", [widen])
    assert record["status"] == "waiting"
    [card] = record["cards"]
    assert (card["tool"], card["risk"], card["status"]) == ("access_widen", "dangerous", "pending")
    assert (runs.brain / "constitution/access.yaml").read_text() == ACCESS
    # The card says what the edit does, checked as it will be when it runs.
    assert card["summary"] == (
        "access_widen: edit constitution/access.yaml\n"
        "- for bot nova, chat tg:chat:board\n- bound rating=f1"
    )


def test_an_edit_that_would_be_refused_asks_nobody(runs: Runs) -> None:
    widen = {
        "name": "access_widen",
        "arguments": {"bot": "nova", "chat": "tg:chat:board", "bind": {"no-such": "x"}},
    }
    record = run(runs, "widen-nothing", [widen])
    assert (record["status"], record["cards"]) == ("done", [])
    [request] = [s for s in record["steps"] if s["name"] == "request"][1:]
    assert request["status"] == "done"
    assert (runs.brain / "constitution/access.yaml").read_text() == ACCESS
    # What the agent tried stays on the run's record, refused.
    [check] = [s for s in record["steps"] if s["name"] == "check"]
    assert check["status"] == "failed"
    assert check["detail"].startswith("access_widen refused before its card: ")
    assert "no-such" in check["detail"]


def _keel_json(*args: str) -> Any:
    code, out, err = finish(keel(*args, "--json"))
    assert code == 0, (code, out, err)
    return json.loads(out)


def test_a_widen_approved_from_another_process_replays_its_check_as_taken(
    tmp_path: Path, database_url: str
) -> None:
    # `keel approve` in a process of its own resumes the run by replaying it: the check
    # before the first card must replay as it was taken, not look again at the file its
    # own call has since written (it would refuse it, and the replay would go astray).
    brain = write_files(tmp_path / "brain", FILES)
    widen = [
        {
            "name": "access_widen",
            "arguments": {"bot": "nova", "chat": "tg:chat:board", "bind": {"rating": key}},
        }
        for key in ("f1", "f2")
    ]
    steps: list[dict[str, Any]] = [
        {"tool_calls": [widen[0]]},
        {"tool_calls": [widen[1]]},
        {"text": "Done."},
    ]
    model = script(tmp_path, "widen-twice", steps)
    db = ["--db", database_url]
    record = _keel_json("run", str(brain), "heartbeat:tend", "--model", model, *db)
    [card] = record["cards"]
    after = _keel_json("approve", str(brain), card["id"], "--yes", *db)
    assert "rating: f1" in (brain / "constitution/access.yaml").read_text()
    [pending] = [c for c in after["cards"] if c["status"] == "pending"]
    assert pending["summary"] == (
        "access_widen: edit constitution/access.yaml\n"
        "- for bot nova, chat tg:chat:board\n- bound rating=f2 (was f1)"
    )
    done = _keel_json("approve", str(brain), pending["id"], "--yes", *db)
    assert done["status"] == "done", done
    assert "rating: f2" in (brain / "constitution/access.yaml").read_text()
