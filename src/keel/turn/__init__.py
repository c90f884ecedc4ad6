"""One turn, prepared: linked, its views read, fitted, recorded, and assembled to fit."""

from keel.turn.assembly import ToolsFor, assemble_turn, prepare_and_assemble, turn_inputs
from keel.turn.blocks import fit_links, render_link
from keel.turn.prepare import prepare_turn
from keel.turn.prepared import PreparedTurn, Session

__all__ = [
    "PreparedTurn",
    "Session",
    "ToolsFor",
    "assemble_turn",
    "fit_links",
    "prepare_and_assemble",
    "prepare_turn",
    "render_link",
    "turn_inputs",
]
