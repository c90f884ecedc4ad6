"""`doctor_check()`: `keel doctor` as a tool, for an agent or an operator in a chat.

A coding agent that has just written a context or a role can check it at once, and an
operator's role in a chat can answer "is the brain healthy?": the findings — each with its
file, line and fix — in the same words `keel doctor` prints. The check needs the
capability `doctor:read`: it reads every brain file and the database's catalog, which a
client-facing role has no business doing. It writes nothing, and findings
are its answer, not an error: the call itself succeeded.
"""

from __future__ import annotations

import io
from collections.abc import Mapping
from typing import Any

from rich.console import Console

from keel.brain.snapshot import Brain
from keel.code.runner import CodeRunner
from keel.doctor import render
from keel.ledger.checkup import checkup
from keel.store import Tx
from keel.tools.registry import Tool, ToolContext

CHECK_CAPABILITY = "doctor:read"
# Wide enough that a finding's message stays on one line for the agent.
_WIDTH = 200


def check_brain(
    brain: Brain,
    tx: Tx,
    runner: CodeRunner | None = None,
    risks: Mapping[str, frozenset[str]] | None = None,
) -> str:
    """The doctor's report on the brain, as plain text: what `keel doctor` finds."""
    report = checkup(brain, tx, runner, risks=risks)
    out = io.StringIO()
    console = Console(file=out, width=_WIDTH, color_system=None, highlight=False, soft_wrap=True)
    render(report, console)
    return out.getvalue().rstrip("\n")


def _run(ctx: ToolContext, _args: Mapping[str, Any]) -> str:
    return check_brain(ctx.brain, ctx.tx, ctx.code, ctx.risks)


DOCTOR_CHECK = Tool(
    name="doctor_check",
    description="Check the brain as `keel doctor` does: each finding with file, line and fix.",
    parameters={"type": "object", "properties": {}},
    capability=CHECK_CAPABILITY,
    risk="safe",
    run=_run,
)
