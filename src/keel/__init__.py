"""Keel: a context engine for LLM agents.

Feature contexts attach to a turn only when the turn has a link to them, within budgets,
and each client's rows stay in its own room. Start with `load_brain` (or `BrainSource` in
a long-lived process), then `prepare_turn` for what one turn carries.
"""

from keel.assemble.tokens import Estimator
from keel.brain import Brain, BrainSource, ContextSpec, ReachEntry, RoleSpec, load_brain
from keel.code import define_context, define_gate
from keel.doctor import Finding, Report, run_doctor
from keel.errors import KeelError
from keel.link import Conversation, Link, LinkResult, RunRef, TurnRequest, link_turn
from keel.runtime.assembly import prepare_and_assemble
from keel.runtime.loop import run_turn
from keel.runtime.prepare import PreparedTurn, prepare_turn
from keel.state import connect
from keel.store import Store
from keel.tools.binding import check_bind, check_unbind
from keel.tools.context_open import open_context
from keel.tools.send import origin_of

__all__ = [
    "Brain",
    "BrainSource",
    "ContextSpec",
    "Conversation",
    "Estimator",
    "Finding",
    "KeelError",
    "Link",
    "LinkResult",
    "PreparedTurn",
    "ReachEntry",
    "Report",
    "RoleSpec",
    "RunRef",
    "Store",
    "TurnRequest",
    "check_bind",
    "check_unbind",
    "connect",
    "define_context",
    "define_gate",
    "link_turn",
    "load_brain",
    "open_context",
    "origin_of",
    "prepare_and_assemble",
    "prepare_turn",
    "run_doctor",
    "run_turn",
]
