"""docs/tutorial.md runs as written, in order, in an empty folder: each file block is
written where its info string says (```yaml file=PATH), each `$ command` of a console
block runs in a shell and prints the lines under it, and each Python block prints the
text block after it.

Where a reader would use a key or a token, the test stands in: `OPENAI_BASE_URL` names a
local server that speaks the OpenAI API (`tests.openai_double`), `KEEL_TELEGRAM_TOKEN` is
the Bot API double's (`tests.telegram.double`), and `keel telegram` is pointed at that
double with `--api-url` after the test posts the message the page tells the reader to send.
Only what truly varies is normalised: a run id's random tail (the page's ids are mapped to
the ones this run made, in later commands too) and a run step's milliseconds."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from keel.assemble.values import ModelStep
from tests.openai_double import openai_double
from tests.telegram.double import TOKEN, BotAPIDouble, running_double

DOC = Path(__file__).parents[1] / "docs" / "tutorial.md"
FENCE = re.compile(r"^```(\w*)([^\n]*)\n(.*?)^```$", re.DOTALL | re.MULTILINE)
# What the reader says in the Acme group before `keel telegram` (the page asks for it).
TELEGRAM_MESSAGE = "@desk_bot is T-1 fixed yet?"
ACME = {"id": -1001, "type": "supergroup", "title": "Acme"}
WILE = {"id": 7, "is_bot": False, "first_name": "Wile"}
# What the local OpenAI server answers, in the order the page asks.
SCRIPT = [
    ModelStep(text="Not yet: the fix for T-1 ships Friday."),
    ModelStep(text="Not yet: it is reproduced, and the fix ships Friday."),
]
RUN_ID = re.compile(r"\b((?:heartbeat|hook|scenario)-[a-z0-9-]+?)-([0-9a-f]{8})\b")
STEP_ROW = re.compile(r"^(\d+)\s+(\w+)\s+(\w+)\s+\d+\.\d+(?:\s+(.*))?$")


@dataclass
class Block:
    """One fenced block of the page: its language, its file= target, its text."""

    lang: str
    file: str | None
    text: str


@dataclass
class Command:
    """One `$ command` of a console block and the lines the page shows under it."""

    line: str
    expected: str


def page_blocks() -> list[Block]:
    found = []
    for lang, info, text in FENCE.findall(DOC.read_text(encoding="utf-8")):
        target = re.search(r"\bfile=(\S+)", info)
        found.append(Block(lang, target[1] if target else None, text))
    return found


def commands(console: str) -> list[Command]:
    """Each command (continued with a trailing backslash, or inside a quote left open, as a
    shell reads it) with the output under it."""
    parsed: list[Command] = []
    lines = console.splitlines()
    index = 0
    while index < len(lines):
        assert lines[index].startswith("$ "), f"console output before any command: {lines[index]}"
        line = lines[index][2:]
        while line.endswith("\\") or line.count("'") % 2:
            index += 1
            line = line[:-1] + lines[index] if line.endswith("\\") else f"{line}\n{lines[index]}"
        index += 1
        output = []
        while index < len(lines) and not lines[index].startswith("$ "):
            output.append(lines[index])
            index += 1
        parsed.append(Command(line, "\n".join(output)))
    return parsed


class Ids:
    """The page's run ids, mapped to the ones this run made as they first appear."""

    def __init__(self) -> None:
        self.mine: dict[str, str] = {}

    def learn(self, expected: str, actual: str) -> None:
        for (name, page), (_, made) in zip(
            RUN_ID.findall(expected), RUN_ID.findall(actual), strict=False
        ):
            self.mine.setdefault(f"{name}-{page}", f"{name}-{made}")

    def to_mine(self, text: str) -> str:
        for page, made in self.mine.items():
            text = text.replace(page, made)
        return text

    def to_page(self, text: str) -> str:
        for page, made in self.mine.items():
            text = text.replace(made, page)
        return text


def normalised(text: str) -> list[str]:
    """Lines without trailing blanks; a run step's row without its milliseconds (which
    also shift where the terminal cuts its detail, so a cut detail keeps its first words)."""
    lines = []
    for line in text.rstrip("\n").splitlines():
        row = STEP_ROW.match(line.rstrip())
        if row:
            detail = row[4] or ""
            if detail.endswith("…"):
                detail = detail[:30] + "…"
            line = f"{row[1]} {row[2]} {row[3]} <ms> {detail}".rstrip()
        elif line.startswith("#  step"):
            line = " ".join(line.split())
        lines.append(line.rstrip())
    return lines


def telegram_update(double: BotAPIDouble) -> None:
    double.push(
        {
            "update_id": 1,
            "message": {
                "message_id": 51,
                "date": 1_777_000_000,
                "chat": ACME,
                "from": WILE,
                "text": TELEGRAM_MESSAGE,
            },
        }
    )


@dataclass
class Ran:
    """What the page printed against what it shows, and what the two doubles were sent."""

    outputs: list[tuple[str, list[str], list[str]]]
    model_bodies: list[dict[str, Any]]
    bot: BotAPIDouble


def run_page(folder: Path) -> Ran:
    """Run every block in order; (what ran, the page's lines, the lines it printed)."""
    ran: list[tuple[str, list[str], list[str]]] = []
    ids = Ids()
    blocks = page_blocks()
    with openai_double(SCRIPT) as model, running_double() as bot:
        env = {
            **os.environ,
            "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
            "COLUMNS": "80",
            "OPENAI_API_KEY": "local",
            "OPENAI_BASE_URL": model.base_url,
            "KEEL_TELEGRAM_TOKEN": TOKEN,
            "KEEL_HOOK_SERVER": "off",  # no warm server left behind in the temporary folder
        }
        env.pop("ANTHROPIC_API_KEY", None)
        for number, block in enumerate(blocks):
            if block.file is not None:
                target = folder / block.file
                # As a reader's editor would: the page's own steps must make the folder.
                assert target.parent.is_dir(), f"no folder for {block.file} yet on the page"
                target.write_text(block.text, encoding="utf-8")
            elif block.lang == "console":
                for command in commands(block.text):
                    line = ids.to_mine(command.line)
                    if line.startswith("keel telegram "):
                        telegram_update(bot)
                        line += f" --api-url {bot.url}"
                    done = shell(line, folder, env)
                    assert done.returncode == 0, f"$ {line}\n{done.stdout}{done.stderr}"
                    ids.learn(command.expected, done.stdout)
                    actual = ids.to_page(done.stdout)
                    ran.append((command.line, normalised(command.expected), normalised(actual)))
            elif block.lang == "python":
                shown = blocks[number + 1]
                assert shown.lang == "text", "a Python block is followed by its output"
                done = subprocess.run(
                    [sys.executable, "-c", block.text],
                    cwd=folder,
                    env=env,
                    capture_output=True,
                    text=True,
                    timeout=60,
                    check=False,
                )
                assert done.returncode == 0, done.stderr
                ran.append((block.text, normalised(shown.text), normalised(done.stdout)))
        assert len(model.bodies) == len(SCRIPT), "every scripted answer was asked for"
        ran.append(settings_hook(folder, env))
    return Ran(ran, model.bodies, bot)


def settings_hook(folder: Path, env: dict[str, str]) -> tuple[str, list[str], list[str]]:
    """The hook command the page's `.claude/settings.json` installs answers as Claude Code
    runs it (from the project, with CLAUDE_PROJECT_DIR set) what the page's hook printed."""
    settings = json.loads((folder / ".claude" / "settings.json").read_text(encoding="utf-8"))
    (entry,) = settings["hooks"]["UserPromptSubmit"]
    (hook,) = entry["hooks"]
    prompt = {"session_id": "s2", "hook_event_name": "UserPromptSubmit", "prompt": "T-1?"}
    done = subprocess.run(
        ["bash", "-c", hook["command"]],
        cwd=folder,
        env={**env, "CLAUDE_PROJECT_DIR": str(folder)},
        input=json.dumps(prompt),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    context = json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]
    card = "acme | T-1 | Invoice PDF is blank | open | Reproduced; fix ships Friday"
    return (hook["command"], [card], [line for line in context.splitlines() if line == card])


def shell(line: str, folder: Path, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """A page's command line, as a reader's shell runs it in `folder`."""
    return subprocess.run(
        ["bash", "-c", line],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_every_block_of_the_tutorial_prints_what_the_page_shows(tmp_path: Path) -> None:
    ran = run_page(tmp_path)
    assert len(ran.outputs) >= 12, "the page's commands were found"
    for what, expected, actual in ran.outputs:
        assert actual == expected, f"the page's output drifted for:\n{what}"
    # The Telegram turn carried T-1's card to the model, and its answer went back to the
    # Acme group as a reply to the message that asked.
    assert "Reproduced; fix ships Friday" in json.dumps(ran.model_bodies[1])
    answers = [sent for sent in ran.bot.sent() if sent.get("reply_parameters")]
    assert [(a["chat_id"], a["text"]) for a in answers] == [("-1001", SCRIPT[1].text)]
    # Step 5 approved the card before it went out: it goes as text, without buttons, as
    # the page says.
    cards = [sent for sent in ran.bot.sent() if "Approve? Send to" in sent["text"]]
    assert [card.get("reply_markup") for card in cards] == [None]
    page = " ".join(DOC.read_text(encoding="utf-8").split())
    assert "(the card, as text without buttons since step 5 approved it already," in page
    # Step 6's T-3 rides only because step 4 made its link: what it prints says kept.
    assert "('ticket', 'T-3', 'kept')]" in page


def test_the_page_asks_for_the_telegram_message_the_test_sends() -> None:
    assert f"`{TELEGRAM_MESSAGE}`" in DOC.read_text(encoding="utf-8")


def test_each_file_block_names_its_path_where_a_reader_sees_it() -> None:
    """A block's `file=` is invisible once rendered, so a caption above it names the path."""
    page = DOC.read_text(encoding="utf-8")
    targets = re.findall(r"^```\w+ file=(\S+)$", page, flags=re.MULTILINE)
    assert targets, "the page writes files"
    for target in targets:
        assert f"**`{target}`**\n\n```" in page, f"caption {target} above its block"


def test_a_drifted_output_is_seen() -> None:
    """The comparison is not blind: a changed line of output no longer matches."""
    expected = normalised("card heartbeat-morning-86a702e3:4: approved")
    assert normalised("card heartbeat-morning-86a702e3:4: denied") != expected
    row = "3  request  done    43.8  request 1: calls send_message"
    assert normalised(row) == normalised("3  request  done  1043.8  request 1: calls send_message")
    assert normalised(row) != normalised("3  request  failed  43.8  request 1: calls send_message")
