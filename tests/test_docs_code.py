"""docs/code.md runs as written, on fresh copies of examples/brain:

- the page's ticket code (its `match` and `render` blocks, one file) links the ticket a
  message names, or the one named before it in the page's `turn.input`, and adds its SLA
  line; with the page's `print` in `match`, its `keel turn` prints the page's lines;
- its chat policy, gate and pipeline load where their first line puts them (`keel doctor`
  finds nothing in them), answer as the text says, and the pipeline's scenario runs up to
  the approval its card asks for; the ctx calls' table names each call's real keywords;
- its MANIFEST `code:` block is read as the text says;
- the notes it shows (a section without room, two matches past their time, a render whose
  query names a tenant's table by its schema) are what `keel turn` prints for such code;
- "For Keel's own code": a `CodeRunner` started with MANIFEST's `code:` renders the page's
  ticket code with a `Queries` reader (its SLA line), fails its query without one, and
  hands brain code a declared variable once `reconfigure`d; the page's `run_pipeline`
  block runs as written (its `on_call` filled in) on the page's pipeline, and each bullet
  under it holds: the arguments, a `KeelError` as `CallFailed`, a `TerminalError` as
  itself, another exception out of `run_pipeline`, `replay=`, the clock stopped during a
  slow `on_call`, and the JSON round trip.

Commands run as in a terminal as wide as the page's lines; only a run's id varies, and
none is compared."""

from __future__ import annotations

import inspect
import json
import os
import re
import sys
import time
from collections.abc import Mapping
from dataclasses import replace
from datetime import UTC, datetime
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from keel.brain import load_brain
from keel.brain.constitution import CodeAccess
from keel.code import CodeRunner, PipelineAnswer, PipelineCall, RenderCall, TerminalError
from keel.code.pipeline_ctx import PipelineCtx
from keel.code.values import Envelope
from keel.errors import Refused
from keel.state.database import connect
from keel.state.queries import Queries
from keel.store import Store
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


# -- For Keel's own code ------------------------------------------------------------------

STARTED = datetime(2026, 11, 29, 18, 0, tzinfo=UTC)
PIPELINE = "features/outreach/first-touch.pipeline.py"


def own_code(title: str) -> str:
    return PAGE.split(f"## For Keel's own code: {title}\n", 1)[1].split("\n## ", 1)[0]


def render_call(brain: Path) -> RenderCall:
    path = "features/support/ticket.context.py"
    (brain / path).write_text(code_files()[path], encoding="utf-8")
    return RenderCall(context="ticket", path=path, entity="T-481", timeout_ms=10_000)


def test_a_runner_renders_with_the_queries_it_is_given(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    prose = " ".join(own_code("a runner, and a render's queries").split())
    assert "`CodeRunner(root, access=brain.manifest.code)`" in prose
    assert (
        "`runner.render_all(calls, reader=Queries(connection, tenant))` (`keel.state.queries`)"
        in prose
    )
    root = copy_reference(tmp_path / "brain")
    call = render_call(root)
    region = root / "features/support/region.context.py"
    region.write_text(
        "import os\n\nfrom keel.code import define_context\n\n\n"
        "def render(entity, ctx):\n"
        '    return [{"key": "region", "text": str(os.environ.get("BRAIN_REGION"))}]\n\n\n'
        "context = define_context(render=render)\n",
        encoding="utf-8",
    )
    where = RenderCall(context="region", path="features/support/region.context.py", entity=None)
    monkeypatch.setenv("BRAIN_REGION", "eu-west")
    brain = load_brain(root)
    engine = connect(f"sqlite:///{tmp_path / 'keel.db'}", brain)
    try:
        with CodeRunner(brain.root, access=brain.manifest.code) as runner:
            with Store(engine).transaction() as tx:
                (answer,) = runner.render_all([call], reader=Queries(tx.connection, None))
            assert answer.failure is None, answer.failure
            (section,) = answer.sections
            assert section.key == "sla"
            assert section.text.startswith("T-481 is urgent: first reply within ")
            # Without a reader, `ctx.query` fails in the code, saying so.
            (alone,) = runner.render_all([call])
            assert alone.failure is not None
            assert "ctx.query cannot read the database" in alone.failure.reason
            # MANIFEST's `code:` reaches the workers; an edited one, once reconfigured.
            assert [s.text for s in runner.render_all([where])[0].sections] == ["None"]
            runner.reconfigure(CodeAccess(env=("BRAIN_REGION",)))
            assert [s.text for s in runner.render_all([where])[0].sections] == ["eu-west"]
    finally:
        engine.dispose()


class OnCall:
    """The page's `on_call`, filled in: answers each ctx call, records it, and may raise
    or take its time for one of them."""

    def __init__(self, *, approve: bool = True, slow_s: float = 0.0) -> None:
        self.answers: dict[str, Any] = {
            "bind_context": None,
            "run_agent": {"text": "Hello from the shop."},
            "request_approval": "card-1",
            "await_approval": approve,
            "send": {"message_id": "m-1"},
        }
        self.raising: dict[str, BaseException] = {}
        self.slow_s = slow_s
        self.asked: list[tuple[str, dict[str, Any]]] = []

    def __call__(self, name: str, args: Mapping[str, Any]) -> Any:
        self.asked.append((name, dict(args)))
        if name in self.raising:
            raise self.raising[name]
        if name == "await_approval":
            time.sleep(self.slow_s)  # a person taking their time
        return self.answers[name]


def run_page_block(tmp_path: Path, on_call: OnCall, timeout_ms: int = 10_000) -> dict[str, Any]:
    """The page's block, run as written on the page's pipeline: its `on_call`'s `...` is
    `carry_out(name, args)`, and `runner` and `run` are a runner and a run of this test."""
    (block,) = [b for b in blocks("python") if "runner.run_pipeline(" in b]
    body = '    ...  # carry out "send", "run_agent", ...; return JSON, or raise\n'
    assert body in block
    source = block.replace(body, "    return carry_out(name, args)\n")
    assert "timeout_ms=10_000" in source
    source = source.replace("timeout_ms=10_000", f"timeout_ms={timeout_ms}")
    brain = copy_reference(tmp_path / "brain")
    (brain / PIPELINE).write_text(code_files()[PIPELINE], encoding="utf-8")
    run = SimpleNamespace(id="run-1", started_at=STARTED)
    space: dict[str, Any] = {"run": run, "carry_out": on_call}
    with CodeRunner(brain, access=load_brain(brain).manifest.code) as runner:
        space["runner"] = runner
        exec(compile(source, "code.md", "exec"), space)
    return space


def test_the_run_pipeline_block_runs_the_page_pipeline(tmp_path: Path) -> None:
    on_call = OnCall()
    answer = run_page_block(tmp_path, on_call)["answer"]
    assert answer.failure is None, answer.failure
    assert answer.value == {"sent": True}
    assert not answer.terminal
    names = ["bind_context", "run_agent", "request_approval", "await_approval", "send"]
    assert [c.name for c in answer.calls] == names
    assert [c.result for c in answer.calls] == [on_call.answers[n] for n in names]
    # Every argument, unset ones as None; the block's vars reach the pipeline.
    bind = dict(on_call.asked[0][1])
    assert bind == {
        "context": "prospect",
        "entity": "p_912",
        "chat": "tg:chat:7",
        "thread": None,
        "bot": None,
    }
    assert on_call.asked[3][1] == {"card": "card-1"}
    assert PipelineAnswer.from_json(json.loads(json.dumps(answer.to_json()))) == answer


def test_what_on_call_raises_reaches_the_pipeline_as_the_page_says(tmp_path: Path) -> None:
    refused = OnCall()
    refused.raising["send"] = Refused("this chat takes no messages from runs")
    answer = run_page_block(tmp_path / "refused", refused)["answer"]
    assert answer.value == {"sent": False}, "the pipeline caught CallFailed"
    assert (answer.calls[-1].error, answer.calls[-1].error_type) == (
        "this chat takes no messages from runs",
        "Refused",
    )
    assert any("not sent: this chat takes no messages from runs" in line for line in answer.log)

    ended = OnCall()
    ended.raising["run_agent"] = TerminalError("the prospect is gone")
    answer = run_page_block(tmp_path / "terminal", ended)["answer"]
    assert answer.terminal
    assert answer.failure is not None
    assert "the prospect is gone" in answer.failure.reason

    broken = OnCall()
    broken.raising["run_agent"] = ZeroDivisionError("a bug of the caller")
    with pytest.raises(ZeroDivisionError, match="a bug of the caller"):
        run_page_block(tmp_path / "bug", broken)


def test_a_slow_on_call_costs_the_pipeline_no_time(tmp_path: Path) -> None:
    # The approval takes three times the pipeline's whole timeout: its clock is stopped.
    answer = run_page_block(tmp_path, OnCall(slow_s=3.0), timeout_ms=1_000)["answer"]
    assert answer.failure is None, answer.failure
    assert answer.value == {"sent": True}


def test_a_replay_answers_from_the_record_and_checks_each_call(tmp_path: Path) -> None:
    first = run_page_block(tmp_path / "first", OnCall(approve=False))["answer"]
    assert first.value == {"sent": False}
    brain = copy_reference(tmp_path / "brain")
    (brain / PIPELINE).write_text(code_files()[PIPELINE], encoding="utf-8")
    call = PipelineCall(
        scenario="first-touch",
        path=PIPELINE,
        vars={"prospect": "p_912", "chat": "tg:chat:7"},
        run_id="run-1",
        started_at=STARTED,
    )
    never = OnCall()
    never.raising = {
        name: AssertionError(f"{name} was carried out again") for name in never.answers
    }
    with CodeRunner(brain) as runner:
        again = runner.run_pipeline(call, never, replay=first.calls)
        assert (again.failure, again.value, again.calls) == (None, first.value, first.calls)
        # A record that differs from what the pipeline asks fails the run, naming both.
        other = (replace(first.calls[0], args={**first.calls[0].args, "entity": "p_1"}),)
        differs = runner.run_pipeline(call, never, replay=other)
    assert differs.failure is not None
    assert "p_1" in differs.failure.reason
    assert "p_912" in differs.failure.reason
