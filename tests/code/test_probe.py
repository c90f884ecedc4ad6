"""Doctor's look at brain code: every file loaded in a worker, every match and gate probed."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from keel.brain import Brain, load_brain
from keel.code import CodeRunner
from keel.code.probe import CodeFile, code_files, load_findings, probe_findings
from tests.code.support import SHORT_MS, match_code, write_code

CONTEXT = "---\nwhen: [chat, ask]\ndescription: x\n---\nText.\n"
FILES = {
    "features/desk/desk.agent.md": "---\ncontexts: ['*']\n---\nThe desk.\n",
    "features/desk/ticket.context.md": "---\nentity: ticket id\nwhen: [chat]\n---\nA ticket.\n",
    "features/desk/ticket.context.py": match_code("return None"),
    "features/desk/faq.context.md": CONTEXT,
    "features/desk/faq.context.py": match_code(
        "print('faq sees', turn.input[:6])\nctx.log('then')\nreturn {} if '?' in turn.text else None"
    ),
    "features/desk/broken.context.md": CONTEXT,
    "features/desk/broken.context.py": "def match(turn)\n    return None\n",
    "features/desk/crashy.context.md": CONTEXT,
    "features/desk/crashy.context.py": match_code("ctypes.string_at(0)", imports="import ctypes\n"),
    "features/desk/noisy.context.md": CONTEXT,
    "features/desk/noisy.context.py": "print('loading noisy')\n" + match_code("return None"),
    "features/desk/slow.context.md": CONTEXT,
    "features/desk/slow.context.py": "import time\ntime.sleep(100)\n",
    "features/desk/exits.context.md": CONTEXT,
    "features/desk/exits.context.py": "import os\nprint('leaving')\nos._exit(0)\n",
    "features/desk/escalate.hook.md": "---\nevent: ticket.escalated\nagent: desk\n---\nEscalate.\n",
    "features/desk/escalate.hook.py": "from keel.code import define_gate\n\nhook = define_gate(lambda event, ctx: {'entity': event['ticket_id']})\n",
    "features/desk/outreach.scenario.md": "---\nagent: desk\n---\nReach out.\n",
    "features/desk/outreach.pipeline.py": "from keel.code import define_pipeline\n\n\n@define_pipeline\nasync def pipeline(ctx, vars):\n    return None\n",
    "constitution/desk.engage.py": "from keel.code import define_engage\n\nengage = define_engage(lambda message: None)\n",
    "constitution/nova.engage.py": "from keel.code import define_engage\n\npolicy = define_engage(lambda message: None)\n",
}


@pytest.fixture(scope="module")
def brain(code_root: Path) -> Brain:
    for rel, text in FILES.items():
        write_code(code_root, text, path=rel)
    return load_brain(code_root)


def test_every_code_file_of_the_brain_is_listed(brain: Brain) -> None:
    assert [(f.subject, f.kind) for f in code_files(brain)] == [
        ("context 'broken'", "context"),
        ("context 'crashy'", "context"),
        ("context 'exits'", "context"),
        ("context 'faq'", "context"),
        ("context 'noisy'", "context"),
        ("context 'slow'", "context"),
        ("context 'ticket'", "context"),
        ("hook:escalate", "hook"),
        ("scenario:outreach", "pipeline"),
        ("bot 'desk'", "engage"),
        ("bot 'nova'", "engage"),
    ]


def test_doctor_loads_every_file_in_a_worker_and_names_what_fails(
    runner: CodeRunner, brain: Brain, capfd: pytest.CaptureFixture[str]
) -> None:
    started = time.monotonic()
    findings, loaded = load_findings(runner, code_files(brain), timeout_ms=SHORT_MS)
    assert time.monotonic() - started < 5
    messages = {(f.file, f.line): f.message for f in findings}
    assert set(messages) == {
        ("features/desk/broken.context.py", 1),
        ("features/desk/slow.context.py", 2),
        ("features/desk/exits.context.py", 3),
        ("constitution/nova.engage.py", 3),
    }
    assert messages["features/desk/broken.context.py", 1].startswith("syntax error: expected ':'")
    assert messages["features/desk/slow.context.py", 2].startswith(
        f"loading the module ran past its {SHORT_MS} ms timeout (it was at this line)"
    )
    assert messages["features/desk/exits.context.py", 3].startswith(
        "raised ProcessExit while loading: os._exit(0) was called"
    )
    assert messages["features/desk/exits.context.py", 3].endswith(" — it said: leaving")
    assert messages["constitution/nova.engage.py", 3] == (
        "exports its EngagePolicy as 'policy', not 'engage' — rename it: "
        "engage = define_engage(policy)"
    )
    assert all(f.check == "load" for f in findings)
    assert loaded["features/desk/ticket.context.py"].functions == ("match",)
    assert loaded["features/desk/outreach.pipeline.py"].async_functions == ("run",)
    assert loaded["features/desk/outreach.pipeline.py"].lines == {"run": 4}
    assert capfd.readouterr().out == ""


def test_a_probe_calls_each_match_gate_and_policy_once(runner: CodeRunner, brain: Brain) -> None:
    files = [f for f in code_files(brain) if f.subject not in ("context 'slow'", "context 'exits'")]
    _, loaded = load_findings(runner, files)
    findings = probe_findings(runner, brain, files, loaded)
    # The crash took its worker down with the other matches; they ran again, alone.
    assert [(f.check, f.subject, f.file, f.line) for f in findings] == [
        ("probe", "context 'crashy'", "features/desk/crashy.context.py", 6),
        ("probe", "context 'faq'", "features/desk/faq.context.py", 7),
        ("probe", "hook:escalate", "features/desk/escalate.hook.py", 3),
    ]
    assert "the worker process running match was killed by SIGSEGV" in findings[0].message
    assert findings[1].message.startswith(
        "on a sample call: match raised AttributeError: turn has no attribute 'text'"
    )
    # What it printed and logged before it failed: its author's clues, quoted.
    assert findings[1].message.endswith(" — it said: faq sees Hello! | then")
    assert findings[2].message.startswith("on a sample call: the gate raised KeyError: 'ticket_id'")


def test_a_file_that_did_not_load_is_not_probed(runner: CodeRunner, brain: Brain) -> None:
    broken = CodeFile(
        subject="context 'broken'",
        owner="broken",
        path="features/desk/broken.context.py",
        kind="context",
    )
    findings, loaded = load_findings(runner, [broken])
    assert len(findings) == 1
    assert probe_findings(runner, brain, [broken], loaded) == ()
