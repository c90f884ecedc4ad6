"""Fitting a turn's linked contexts into their budgets: blocks within chars, stubs beyond."""

from keel.budget.fit import Attached, Fitted, Stub, fit_turn
from keel.budget.knobs import TurnKnobs, context_chars, context_keep, turn_knobs
from keel.budget.render import Block, render_block

__all__ = [
    "Attached",
    "Block",
    "Fitted",
    "Stub",
    "TurnKnobs",
    "context_chars",
    "context_keep",
    "fit_turn",
    "render_block",
    "turn_knobs",
]
