"""The model input as named sections: budgets, token counts, the fit check, payloads."""

from keel.assemble.assembler import AssemblyInputs, assemble
from keel.assemble.fit import check_request, ensure_fits
from keel.assemble.tokens import Estimator, TokenCounter
from keel.assemble.values import Assembly, Fit, Message, ModelLimits, Section, ToolSpec

__all__ = [
    "Assembly",
    "AssemblyInputs",
    "Estimator",
    "Fit",
    "Message",
    "ModelLimits",
    "Section",
    "TokenCounter",
    "ToolSpec",
    "assemble",
    "check_request",
    "ensure_fits",
]
