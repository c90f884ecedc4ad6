"""docs/prompt.md shows what Keel says to the model, and what it costs, as Keel says it:

- its context block is what a turn renders for the page's own small brain (a `ticket`
  context keyed T-481 with the page's view and row), its `...` standing for the rest of
  the instructions;
- the identity, rules, tenancy and catalog lines are those of real turns on a fresh copy
  of examples/brain (the Acme room is pinned to acme);
- the stubs it quotes are the ones the budget writes;
- its two tables and the figures after them are what `bench/prompt_size.py` measures now
  (exact o200k counts, so nothing varies; percentages rounded as the page rounds them)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from keel.budget.fit import stub_line
from keel.budget.render import _marker, view_stub
from keel.budget.rows import ViewRows
from keel.link.values import Link
from tests.runtime.driver import copy_reference
from tests.test_docs_tutorial import FENCE, shell

ROOT = Path(__file__).parents[1]
DOC = ROOT / "docs" / "prompt.md"
PAGE = DOC.read_text(encoding="utf-8")

# The page's own brain: one keyed context with the view and row its block shows, bound to
# T-481 in one group of the desk bot.
PAGE_BRAIN = {
    "constitution/MANIFEST.yaml": "name: page\n",
    "constitution/access.yaml": (
        'bots:\n  desk:\n    chats:\n      "tg:chat:-1001":\n        role: support\n'
        "        contexts: { ticket: T-481 }\n"
    ),
    "features/support/support.agent.md": "---\ncontexts: [ticket]\n---\nYou answer tickets.\n",
    "features/support/ticket.context.md": (
        "---\nentity: ticket id\nwhen: [chat]\n"
        "data: [{ view: support_ticket_card, by: ticket_id }]\n---\n"
        "Speak for the support desk. A refund above $100 needs approval first; say so before "
        "you promise one.\n"
    ),
    "state/001_tickets.sql": (
        "CREATE TABLE support_tickets (ticket_id TEXT, customer TEXT, subject TEXT, "
        "priority TEXT, status TEXT);\n"
        "INSERT INTO support_tickets VALUES ('T-481', 'Maria Lopes', 'Refund for damaged lamp',"
        " 'urgent', 'open');\n"
        "INSERT INTO support_tickets VALUES ('T-482', 'Ann Bell', 'Late parcel', 'low', 'open');\n"
        "CREATE VIEW support_ticket_card AS SELECT ticket_id, customer, subject, priority, "
        "status FROM support_tickets;\n"
    ),
}


def environment() -> dict[str, str]:
    env = {
        **os.environ,
        "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}",
        "COLUMNS": "400",
        "KEEL_HOOK_SERVER": "off",
    }
    for name in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY"):
        env.pop(name, None)
    return env


def turn(folder: Path, brain: str, room: str) -> str:
    done = shell(f"keel turn {brain} {room} --input hi", folder, environment())
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def test_the_context_block_is_what_a_turn_renders(tmp_path: Path) -> None:
    for rel, text in PAGE_BRAIN.items():
        target = tmp_path / "brain" / rel
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(text, encoding="utf-8")
    (shown,) = [t for lang, _, t in FENCE.findall(PAGE) if t.startswith("<context name=")]
    pattern = ".*?".join(re.escape(part) for part in shown.rstrip("\n").split("..."))
    printed = turn(tmp_path, "brain", "--bot desk --chat tg:chat:-1001")
    assert re.search(pattern, printed, re.DOTALL), printed


def test_the_pieces_are_what_turns_of_the_reference_brain_say(tmp_path: Path) -> None:
    copy_reference(tmp_path / "brain")
    acme = turn(tmp_path, "brain", "--bot nova --chat tg:chat:-1002000000101")
    pieces = PAGE.split("## The pieces", 1)[1].split("###", 1)[0]
    assert "`You are nova.`" in pieces
    assert "\nYou are nova.\n" in acme
    (rules,) = re.findall(r"one line: (each `<context>` block below .*?)\. \|", pieces)
    assert rules.replace("`", "").capitalize() + "." in acme
    (tenancy,) = re.findall(r"`(This room is pinned to client acme\.)`", pieces)
    assert f"\n{tenancy}\n" in acme
    desk = turn(tmp_path, "brain", "--bot desk --chat tg:chat:-1003000000001")
    assert "`Contexts to open:`" in pieces
    assert "\nContexts to open:\n- " in desk


def test_the_stubs_are_the_ones_the_budget_writes() -> None:
    assert "`(12 more rows not shown)`" in PAGE
    assert _marker(12) == "(12 more rows not shown)\n"
    view = view_stub(ViewRows(view="x", total=45))
    assert f"`{view}`" in PAGE.replace("\n  ", " ")
    policy = Link(context="policy", entity=None, kind="ask", feature="support")
    assert f"`{stub_line(policy, 'contexts.maxActive', can_open=True)}`" in PAGE.replace(
        "\n  ", " "
    )
    assert "just `left out for room`" in PAGE
    assert stub_line(policy, "contexts.maxActive", can_open=False).endswith(
        ">left out for room</context-stub>"
    )
    too_large = stub_line(policy, "chars", can_open=True).removesuffix("</context-stub>")
    assert f"says `{too_large.partition('>')[2]}`" in PAGE.replace("\n  ", " ")
    too_large = stub_line(policy, "chars", can_open=False).removesuffix("</context-stub>")
    assert f"just `{too_large.partition('>')[2]}`)" in PAGE.replace("\n  ", " ")


def measured(tmp_path: Path) -> dict[str, Any]:
    out = tmp_path / "prompt_size.json"
    done = subprocess.run(
        [
            sys.executable,
            str(ROOT / "bench" / "prompt_size.py"),
            "--json",
            str(out),
            "--tmpdir",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    workloads: dict[str, Any] = json.loads(out.read_text(encoding="utf-8"))["workloads"]
    return workloads


def pct(ratio: float) -> str:
    return f"{round(ratio * 100)} %"


def test_the_savings_are_what_the_benchmark_measures(tmp_path: Path) -> None:
    workloads = measured(tmp_path)
    saves = PAGE.split("## What it saves", 1)[1]
    ref, gen = workloads["reference"]["total"], workloads["generated"]["total"]
    assert f"{ref['turns']} turns of every link kind" in saves
    assert f"{gen['turns']} turns that mostly link" in saves
    rows = [
        f"| o200k tokens, all turns | {ref['keel']['tokens']:,.0f} | "
        f"{ref['baseline']['tokens']:,.0f} | {pct(ref['ratio']['tokens'])} |",
        f"| worst turn, over the baseline | | | +{workloads['reference']['worst_turn']['over']} "
        "tokens |",
        f"| billed with Anthropic's cache | {ref['keel']['anthropic']:,.0f} | "
        f"{ref['baseline']['anthropic']:,.0f} | {pct(ref['ratio']['anthropic'])} |",
        f"| o200k tokens, all turns | {gen['keel']['tokens']:,.0f} | "
        f"{gen['baseline']['tokens']:,.0f} | {pct(gen['ratio']['tokens'])} |",
        f"| billed with Anthropic's cache | {gen['keel']['anthropic']:,.0f} | "
        f"{gen['baseline']['anthropic']:,.0f} | {pct(gen['ratio']['anthropic'])} |",
        f"| billed with OpenAI's cache | | | {pct(gen['ratio']['openai'])} |",
    ]
    for row in rows:
        assert row in saves, row
    tail = " ".join(saves.split("and why the bill's ratio", 1)[1].split())
    assert (
        f"bills {pct(gen['ratio']['anthropic_min'])} of the baseline with Anthropic's rates "
        f"({pct(gen['ratio']['openai_min'])} with OpenAI's), the reference brain "
        f"{pct(ref['ratio']['anthropic_min'])}." in tail
    )
