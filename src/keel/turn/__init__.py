"""One turn, prepared: linked, its views read, fitted, recorded, and assembled to fit."""

from keel.turn.assembly import ToolsFor, assemble_turn, turn_inputs
from keel.turn.prepare import Preparation, prepare, prepare_and_assemble, prepare_turn
from keel.turn.prepared import PreparedTurn, Session

__all__ = [
    "Preparation",
    "PreparedTurn",
    "Session",
    "ToolsFor",
    "assemble_turn",
    "prepare",
    "prepare_and_assemble",
    "prepare_turn",
    "turn_inputs",
]
