"""Running a brain: the `Engine` facade, the agent loop, and the model adapters."""

from keel.runtime.engine import Engine
from keel.runtime.loop import TurnOutcome, run_turn
from keel.runtime.models import AnthropicModel, ModelClient, OpenAIChatModel, OpenAIResponsesModel

__all__ = [
    "AnthropicModel",
    "Engine",
    "ModelClient",
    "OpenAIChatModel",
    "OpenAIResponsesModel",
    "TurnOutcome",
    "run_turn",
]
