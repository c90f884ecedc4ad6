"""Keel: a context engine for LLM agents.

Feature contexts attach to a turn only when the turn has a link to it, within budgets,
and each client's rows stay in its own room. Start with `Engine(brain_path)`: it holds the
live brain, its database, the token counter and the tools, and prepares and runs turns:
`engine.turn(bot=..., chat=..., text=..., model=keel.models.openai(client, name))` answers
one message (`await engine.aturn(...)` in an asyncio bot) with an `Answer`.

`import keel` is cheap: each name below is imported on first use, so a program that only
loads a brain never imports the database layer, the terminal UI or the file watcher.
"""

from __future__ import annotations

import importlib

from keel.errors import KeelError

# The package's version, as pyproject.toml states it (a test keeps the two equal): read
# here, `keel --version` needs no look-up of the installed distribution's metadata.
__version__ = "0.1.0"

# Not `typing.TYPE_CHECKING`: importing typing would double what `import keel` costs.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

    from keel.assemble.values import Assembly
    from keel.brain.loader import load_brain
    from keel.brain.snapshot import Brain
    from keel.brain.source import BrainSource
    from keel.brain.specs import ContextSpec, ReachEntry, RoleSpec
    from keel.code.define import define_context, define_gate
    from keel.doctor.findings import Finding, Report
    from keel.doctor.run import run_doctor
    from keel.link.gather import link_turn
    from keel.link.values import Conversation, Link, RunRef, TurnRequest
    from keel.runtime.answer import Answer
    from keel.runtime.engine import Engine
    from keel.runtime.loop import TurnOutcome, run_turn
    from keel.state.database import connect
    from keel.store.store import Store
    from keel.tokens.estimate import Estimator
    from keel.tools import TOOLS
    from keel.tools.registry import Registry, Tool
    from keel.turn.prepare import prepare_and_assemble
    from keel.turn.prepared import PreparedTurn, Session

_HOME = {
    "Answer": "keel.runtime.answer",
    "Assembly": "keel.assemble.values",
    "Brain": "keel.brain.snapshot",
    "BrainSource": "keel.brain.source",
    "ContextSpec": "keel.brain.specs",
    "Conversation": "keel.link.values",
    "Engine": "keel.runtime.engine",
    "Estimator": "keel.tokens.estimate",
    "Finding": "keel.doctor.findings",
    "Link": "keel.link.values",
    "PreparedTurn": "keel.turn.prepared",
    "ReachEntry": "keel.brain.specs",
    "Registry": "keel.tools.registry",
    "Report": "keel.doctor.findings",
    "RoleSpec": "keel.brain.specs",
    "RunRef": "keel.link.values",
    "Session": "keel.turn.prepared",
    "Store": "keel.store.store",
    "TOOLS": "keel.tools",
    "Tool": "keel.tools.registry",
    "TurnOutcome": "keel.runtime.loop",
    "TurnRequest": "keel.link.values",
    "connect": "keel.state.database",
    "define_context": "keel.code.define",
    "define_gate": "keel.code.define",
    "link_turn": "keel.link.gather",
    "load_brain": "keel.brain.loader",
    "prepare_and_assemble": "keel.turn.prepare",
    "run_doctor": "keel.doctor.run",
    "run_turn": "keel.runtime.loop",
}

__all__ = [
    "TOOLS",
    "Answer",
    "Assembly",
    "Brain",
    "BrainSource",
    "ContextSpec",
    "Conversation",
    "Engine",
    "Estimator",
    "Finding",
    "KeelError",
    "Link",
    "PreparedTurn",
    "ReachEntry",
    "Registry",
    "Report",
    "RoleSpec",
    "RunRef",
    "Session",
    "Store",
    "Tool",
    "TurnOutcome",
    "TurnRequest",
    "connect",
    "define_context",
    "define_gate",
    "link_turn",
    "load_brain",
    "prepare_and_assemble",
    "run_doctor",
    "run_turn",
]


def __getattr__(name: str) -> Any:
    home = _HOME.get(name)
    if home is None:
        raise AttributeError(f"module 'keel' has no attribute {name!r}")
    value = getattr(importlib.import_module(home), name)
    globals()[name] = value  # the next access is a plain attribute read
    return value


def __dir__() -> list[str]:
    return sorted({*globals(), *__all__})
