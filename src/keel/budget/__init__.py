"""Fitting a turn's linked contexts into their budgets: blocks within chars, stubs beyond."""

from keel.budget.fit import Attached, Fitted, Stub, fit_turn
from keel.budget.render import Block, render_block

__all__ = ["Attached", "Block", "Fitted", "Stub", "fit_turn", "render_block"]
