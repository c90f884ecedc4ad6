"""docs/code.md runs as written, on fresh copies of examples/brain:

- the page's ticket code (its `match` and `render` blocks, one file) links the ticket a
  message names, or the one named before it in the page's `turn.input`, and adds its SLA
  line; with the page's `print` in `match`, its `keel turn` prints the page's lines;
- its chat policy, gate and pipeline load where their first line puts them (`keel doctor`
  finds nothing in them), answer as the text says, and the pipeline's scenario runs up to
  the approval its card asks for; the ctx calls' table names each call's real keywords;
- its MANIFEST `code:` block is read as the text says;
- the notes it shows (a section without room, two matches past their time, a render whose
  query names a tenant's table by its schema) are what `keel turn` prints for such code.

Commands run as in a terminal as wide as the page's lines; only a run's id varies, and
none is compared."""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from keel.brain import load_brain
from keel.code.pipeline_ctx import PipelineCtx
from keel.code.values import Envelope
from keel.turn.code import read_as_agent
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import FENCE, commands, shell

DOC = Path(__file__).parents[1] / "docs" / "code.md"
PAGE = DOC.read_text(encoding="utf-8")
DESK = "--bot desk --chat tg:chat:-1003000000001"
ACME = "--bot nova --chat tg:chat:-1002000000101"


def blocks(lang: str) -> list[str]:
    return [text for found, _, text in FENCE.findall(PAGE) if found == lang]


def code_files() -> dict[str, str]:
    """Each Python block whose first line names its file; the ticket's `render` block has
    no such line: it goes on the file above it, as the page reads."""
    files: dict[str, str] = {}
    last = ""
    for text in blocks("python"):
        named = re.match(r"# (\S+\.py)\n", text)
        if named:
            last = named[1]
            files[last] = text
        elif text.startswith("SLA = "):
            files[last] += "\n\n" + text
    return files


def namespace(path: str) -> dict[str, Any]:
    found: dict[str, Any] = {}
    exec(compile(code_files()[path], path, "exec"), found)
    return found


def environment(columns: int = 400) -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": str(columns),
        "KEEL_HOOK_SERVER": "off",
    }
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def turn(folder: Path, room: str, text: str, *, columns: int = 400) -> str:
    line = f'keel turn examples/brain {room} --input "{text}"'
    done = shell(line, folder, environment(columns))
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_ticket_code_links_the_message_or_the_ticket_before_it() -> None:
    ticket = namespace("features/support/ticket.context.py")
    (shown,) = blocks("text")
    *before, head, message = shown.rstrip("\n").split("\n")
    said = [(speaker, text) for speaker, text in (line.split(": ", 1) for line in before[1:])]
    replied = re.search(r'replying to (\w+): "(.*)"\]$', head)
    assert replied
    envelope = Envelope(
        chat="tg:chat:-1003000000001",
        thread="90",
        time="2026-11-29T18:00:00+00:00",
        reply_to=((replied[1], replied[2]),),
    )
    text = read_as_agent(message, envelope, said)
    assert text == shown.rstrip("\n"), "the page's input is what match reads"
    asked = SimpleNamespace(message=message, input=text)
    assert ticket["match"](asked, None) == {"entity": "T-481"}
    assert ticket["match"](SimpleNamespace(message="T-7 please", input=""), None) == {
        "entity": "T-7"
    }
    assert ticket["match"](SimpleNamespace(message="hi", input="hi"), None) is None


def test_a_print_in_match_is_a_note_of_the_turn(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "examples" / "brain")
    page = code_files()["features/support/ticket.context.py"]
    printing = re.search(r"With `(print\(.*?\))`", PAGE)
    assert printing
    page = page.replace("def match(turn, ctx):\n", f"def match(turn, ctx):\n    {printing[1]}\n")
    (brain / "features/support/ticket.context.py").write_text(page, encoding="utf-8")
    (console,) = [b for b in blocks("") if b.startswith("$ keel turn")]
    (command,) = commands(console)
    done = shell(command.line, tmp_path, environment())
    assert done.returncode == 0, done.stderr
    head = command.expected.split("\n...", 1)[0].splitlines()
    assert done.stdout.splitlines()[: len(head)] == head, done.stdout
    # The page's render adds its SLA line after the views.
    assert '<section name="sla">\nT-481 is urgent: first reply within' in done.stdout


def test_policy_gate_and_pipeline_load_and_answer_as_the_page_says(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    files = code_files()
    for path in (
        "constitution/desk.engage.py",
        "features/dutch/skip.hook.py",
        "features/outreach/first-touch.pipeline.py",
    ):
        (brain / path).write_text(files[path], encoding="utf-8")
    doctor = shell("keel doctor brain --json", tmp_path, environment())
    findings = json.loads(doctor.stdout)["checks"]
    assert [f for f in findings if str(f.get("subject", "")).endswith(".py")] == []
    engage = namespace("constitution/desk.engage.py")["engage"].engage
    asked = SimpleNamespace(text="T-4 and T-5?")
    assert engage(asked, None) == {
        "engage": True,
        "attach": [{"context": "ticket", "entity": "T-4"}, {"context": "ticket", "entity": "T-5"}],
    }
    assert engage(SimpleNamespace(text="hello"), None) is None
    gate = namespace("features/dutch/skip.hook.py")["gate"]
    assert gate({"skill": "listen"}, None) == {"reach": [{"context": "listen"}]}
    assert gate({}, None) is None

    # The pipeline runs up to the card it asks the owner to approve, with the draft in it.
    script = tmp_path / "draft.json"
    script.write_text(json.dumps([{"text": "Hello from the shop."}]), encoding="utf-8")
    vars_ = json.dumps({"prospect": "p_913", "chat": "tg:user:5513001"})
    ran = shell(
        f"keel scenario brain first-touch --vars '{vars_}' --model scripted:{script} --json",
        tmp_path,
        environment(),
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    run = json.loads(ran.stdout)
    assert run["status"] == "waiting", run
    (card,) = run["cards"]
    assert card["summary"] == "Send this?\n\nHello from the shop."


def test_the_ctx_table_names_each_call_with_its_keywords() -> None:
    table = PAGE.split("| call | does | returns |", 1)[1].split("\n\n", 1)[0]
    for name, params in re.findall(r"^\| `(\w+)\(([^)]*)\)`", table, re.MULTILINE):
        shown = [p.split("=")[0].strip() for p in params.split(",") if p.strip()]
        real = list(inspect.signature(getattr(PipelineCtx, name)).parameters)[1:]
        assert shown == real, name


def test_the_code_block_of_manifest_is_read_as_the_page_says(tmp_path: Path) -> None:
    brain = copy_reference(tmp_path / "brain")
    (block,) = [b for b in blocks("yaml") if b.startswith("code:")]
    manifest = brain / "constitution" / "MANIFEST.yaml"
    kept = re.sub(r"^code:.*\n", "", manifest.read_text(encoding="utf-8"), flags=re.MULTILINE)
    manifest.write_text(kept + block, encoding="utf-8")
    loaded = load_brain(brain)
    assert loaded.skips == ()
    assert tuple(loaded.manifest.code.env) == ("BRAIN_REGION", "HTTPS_PROXY")
    assert loaded.manifest.code.network is False


def note_lines(block: str) -> list[str]:
    return [line for line in block.splitlines() if line.strip()]


def test_a_section_without_room_names_the_chars_to_raise(tmp_path: Path) -> None:
    (stub,) = [b for b in blocks("") if b.startswith('<section name="log">')]
    chars = re.search(r"raise chars: (\d+) of (\S+)</section>", stub)
    assert chars
    brain = copy_reference(tmp_path / "examples" / "brain")
    context = brain / chars[2]
    text = context.read_text(encoding="utf-8")
    context.write_text(re.sub(r"^chars: \d+$", f"chars: {chars[1]}", text, flags=re.M), "utf-8")
    code = brain / "features/support/ticket.context.py"
    more = '[{"key": "sla", "text": line}, {"key": "log", "text": "x" * 4000}]'
    code.write_text(
        code.read_text(encoding="utf-8").replace('[{"key": "sla", "text": line}]', more), "utf-8"
    )
    assert stub.strip() in turn(tmp_path, DESK, "Any update on T-481?").splitlines()


def test_two_matches_past_their_time_share_one_advice(tmp_path: Path) -> None:
    (shown,) = [b for b in blocks("") if b.startswith("note: features/support/h1")]
    brain = copy_reference(tmp_path / "examples" / "brain")
    support = brain / "features" / "support"
    slow = "import time\n\nfrom keel.code import define_context\n\ndef match(turn, ctx):\n"
    for name in ("h1", "h2"):
        (support / f"{name}.context.md").write_text("---\nwhen: [chat]\n---\nWait.\n", "utf-8")
        # Line 6 is where the page's notes say each match was when its time ran out.
        (support / f"{name}.context.py").write_text(
            slow + "    time.sleep(30)\n\n\ncontext = define_context(match=match)\n", "utf-8"
        )
    role = support / "support.agent.md"
    text = role.read_text(encoding="utf-8")
    role.write_text(
        text.replace("contexts: [ticket, kb, policy]", "contexts: [ticket, kb, policy, h1, h2]"),
        "utf-8",
    )
    # The page shows a terminal 100 columns wide: the notes whole, the advice wrapped.
    printed = turn(tmp_path, DESK, "Any update on T-481?", columns=100)
    lines = [line.rstrip() for line in printed.splitlines()[1:]]
    assert lines[: len(note_lines(shown))] == note_lines(shown), printed


def test_a_query_by_schema_name_fails_the_render_with_the_page_note(tmp_path: Path) -> None:
    (shown,) = [b for b in blocks("") if b.startswith("note: features/agency/client")]
    brain = copy_reference(tmp_path / "examples" / "brain")
    (caught,) = [b for b in blocks("python") if b.startswith("from keel.code import CallFailed")]
    query = re.search(r'ctx\.query\("([^"]+)"\)', caught)
    assert query
    # Left uncaught, as the page says: the query on line 9, in the Acme room's render.
    code = (
        "from keel.code import define_context\n\n\n"
        "def match(turn, ctx):\n    return None\n\n\n"
        f'def render(client, ctx):\n    rows = ctx.query("{query[1]}")\n'
        '    return [{"key": "card", "text": str(rows)}]\n\n\n'
        "context = define_context(match=match, render=render)\n"
    )
    (brain / "features/agency/client.context.py").write_text(code, encoding="utf-8")
    printed = turn(tmp_path, ACME, "How is our campaign going?")
    assert printed.splitlines()[1] == shown.strip()
