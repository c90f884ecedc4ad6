"""The brain on disk: content files loaded strictly into typed, immutable specs."""

from keel.brain.constitution import Access, ChatRule, Manifest
from keel.brain.loader import load_brain
from keel.brain.snapshot import Brain
from keel.brain.source import BrainSource
from keel.brain.specs import (
    ContextSpec,
    EntitySpec,
    FeatureSpec,
    ReachEntry,
    RoleSpec,
    SkillSpec,
    Skip,
    ViewRef,
)

__all__ = [
    "Access",
    "Brain",
    "BrainSource",
    "ChatRule",
    "ContextSpec",
    "EntitySpec",
    "FeatureSpec",
    "Manifest",
    "ReachEntry",
    "RoleSpec",
    "SkillSpec",
    "Skip",
    "ViewRef",
    "load_brain",
]
