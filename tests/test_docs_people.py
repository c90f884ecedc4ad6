"""docs/people.md runs as written, on the page's own small brain: the runs test brain whose
MANIFEST.yaml is the page's `people:` block, word for word, with the page's operators'
role written where its first line says. Each `$ keel` command of the page then runs in
order and prints the lines the page shows under it.

The page starts from a card that is already waiting; the test makes it the way a reader
would, by running the guarded heartbeat on a scripted model that asks to send a message.
Only what truly varies is normalised: a run id's random tail (the page's ids are mapped to
the ones this run made). Commands run as in a terminal wide enough for the page's lines."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from tests.runs.brains import RUNS_BRAIN
from tests.runs.conftest import write_files
from tests.test_docs_tutorial import FENCE, Ids, commands, normalised, shell

DOC = Path(__file__).parents[1] / "docs" / "people.md"
# What the guarded heartbeat's scripted model does: ask to post a notice, then say nothing.
NOTICE = {"name": "send_message", "arguments": {"text": "The lift is out today."}}


def page_blocks() -> list[tuple[str, str]]:
    """(language, text) of each fenced block of the page."""
    return [(lang, text) for lang, _, text in FENCE.findall(DOC.read_text(encoding="utf-8"))]


def yaml_block(first_line: str, *, keep: bool = False) -> str:
    """The page's YAML block whose first line is `first_line`, without that line unless
    `keep` (a line of YAML, not a comment naming the file)."""
    found = [text for lang, text in page_blocks() if lang == "yaml" and text.startswith(first_line)]
    assert len(found) == 1, f"the page has one YAML block opening with {first_line!r}"
    return found[0] if keep else found[0].split("\n", 1)[1]


def page_brain(folder: Path) -> Path:
    manifest = "contexts:\n  codeTimeoutMs: 5000\n" + yaml_block("# constitution/MANIFEST.yaml")
    ops = yaml_block("# features/support/ops.agent.md")
    return write_files(
        folder / "brain",
        {
            **RUNS_BRAIN,
            "constitution/MANIFEST.yaml": manifest,
            "features/support/ops.agent.md": ops,
        },
    )


def test_every_command_of_the_page_prints_what_the_page_shows(tmp_path: Path) -> None:
    page_brain(tmp_path)
    (tmp_path / "notice.json").write_text(
        json.dumps([{"tool_calls": [NOTICE]}, {"text": ""}]), encoding="utf-8"
    )
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "400",  # the page shows each printed line whole
        "KEEL_HOOK_SERVER": "off",
    }
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    # Every file of the brain loads, the page's operators' role among them.
    doctor = shell("keel doctor brain --json", tmp_path, env)
    assert doctor.returncode == 0, doctor.stdout + doctor.stderr
    assert json.loads(doctor.stdout)["checks"] == []

    waiting = shell(
        "keel run brain heartbeat:guarded --model scripted:notice.json --json", tmp_path, env
    )
    assert waiting.returncode == 0, waiting.stderr
    run = json.loads(waiting.stdout)
    assert run["status"] == "waiting"
    ids = Ids()
    ids.mine["heartbeat-guarded-1a2b3c4d"] = run["id"]

    consoles = [text for lang, text in page_blocks() if lang == "" and text.startswith("$ keel")]
    ran = [command for console in consoles for command in commands(console)]
    assert ran, "the page's commands were found"
    for command in ran:
        done = shell(ids.to_mine(command.line), tmp_path, env)
        refused = command.expected.startswith("refused:")
        # A refused decision exits 3, as the page says; anything else succeeds.
        assert done.returncode == (3 if refused else 0), done.stdout + done.stderr
        assert normalised(ids.to_page(done.stdout)) == normalised(command.expected), (
            f"the page's output drifted for:\n$ {command.line}\n--- printed\n{done.stdout}"
        )

    # What the page says of the refusal afterwards: the card stays pending, and the
    # refusal is listed under it, in `runs show` and in its `--json`.
    shown = shell(f"keel runs brain show {run['id']}", tmp_path, env)
    assert "refused tg:user:5: tg:user:5 may not decide message:send cards" in shown.stdout
    record = json.loads(shell(f"keel runs brain show {run['id']} --json", tmp_path, env).stdout)
    [card] = record["cards"]
    assert card["status"] == "pending"
    assert [set(r) for r in card["refused"]] == [{"by", "at", "reason"}]


def test_the_operators_chat_block_sends_cards_to_its_chat(tmp_path: Path) -> None:
    """The page's `approvals: {chat:}` block, added to its brain, is read: the doctor names
    its chat, which no bot of that brain may speak in yet, as the page's Doctor table says."""
    brain = page_brain(tmp_path)
    manifest = brain / "constitution" / "MANIFEST.yaml"
    block = yaml_block("approvals:\n  chat:", keep=True)
    manifest.write_text(manifest.read_text(encoding="utf-8") + block, encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    doctor = shell("keel doctor brain --json", tmp_path, env)
    checks = json.loads(doctor.stdout)["checks"]
    assert [(c["check"], c["level"], c["subject"]) for c in checks] == [
        ("approvals.chat", "fail", "tg:chat:-100123456")
    ]
