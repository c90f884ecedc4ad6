"""`agent_context` as a tool: the spend report, for an agent tuning the brain it works in.

What each context cost a role's turns over a window — turns attached, stubs and the knob
behind them, sizes, the links that brought it, catalog offers and opens — read from the
ledger and the turn journal exactly as `keel report` reads them. It needs the capability
`ledger:read`: the report counts every chat's turns of the role, which a chat-facing role
has no business seeing. It reads only.
"""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Any

from keel.errors import Refused
from keel.ledger import DEFAULT_SINCE, AgentContext, ContextUse, agent_context, parse_since
from keel.tools.registry import Tool, ToolContext

LEDGER_CAPABILITY = "ledger:read"


def report_text(report: AgentContext) -> str:
    """The report in plain lines: a header, then one line per context, busiest first."""
    header = (
        f"Role {report.role}: {report.turns} turn(s) from {_at(report.since)} "
        f"to {_at(report.until)}."
    )
    if not report.contexts:
        return f"{header}\nNo context attached to or was offered on these turns."
    return "\n".join([header, *(_line(use) for use in report.contexts)])


def _at(moment: datetime) -> str:
    return moment.isoformat(timespec="minutes")


def _counts(counts: Mapping[str, int]) -> str:
    return ", ".join(f"{name} {n}" for name, n in counts.items())


def _line(use: ContextUse) -> str:
    parts = [f"attached {use.attached}"]
    if use.stubbed:
        parts.append(f"stubbed {use.stubbed} ({_counts(use.stubbed_by) or 'no knob'})")
    if use.attached:
        parts.append(f"mean {use.mean_chars} chars, max {use.max_chars}")
    if use.links:
        parts.append(f"links: {_counts(use.links)}")
    if use.offered is not None:
        parts.append(f"offered {use.offered}, opened {use.opened}")
    feature = f" ({use.feature})" if use.feature else ""
    return f"- {use.context}{feature}: " + "; ".join(parts)


def _run(ctx: ToolContext, args: Mapping[str, Any]) -> str:
    role = args.get("role") or ctx.role.id
    if role not in ctx.brain.roles:
        raise Refused(f"agent_context: no role '{role}' in this brain; name one of its roles")
    now = ctx.request.now
    since = parse_since(args.get("since") or DEFAULT_SINCE, now)
    entries = ctx.tx.ledger(role=role, since=since)
    turns = ctx.tx.journals(role=role, since=since)
    return report_text(agent_context(role, entries, turns, since=since, until=now))


AGENT_CONTEXT = Tool(
    name="agent_context",
    description=(
        "The spend report: per context, the turns a role's feature contexts attached to, "
        "how often a budget stubbed them and by which knob, their sizes and links."
    ),
    parameters={
        "type": "object",
        "properties": {
            "role": {"type": "string", "description": "The role (default: this one)."},
            "since": {
                "type": "string",
                "description": "The window: 7d, 24h, 30m, or an ISO 8601 time (default 7d).",
            },
        },
    },
    capability=LEDGER_CAPABILITY,
    risk="safe",
    run=_run,
)
