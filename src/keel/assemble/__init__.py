"""The model input as named sections: budgets, the fit check, and how rows and history are cut."""

from keel.assemble.assembler import AssemblyInputs, assemble
from keel.assemble.fit import check_request, ensure_fits
from keel.assemble.values import Assembly, Fit, Message, Section, ToolSpec

__all__ = [
    "Assembly",
    "AssemblyInputs",
    "Fit",
    "Message",
    "Section",
    "ToolSpec",
    "assemble",
    "check_request",
    "ensure_fits",
]
