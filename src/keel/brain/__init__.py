"""The brain on disk: content files loaded strictly into typed, immutable specs.

`keel.brain.source.BrainSource` (the live, watched brain) is imported from its module: it
starts a file watcher and needs watchfiles, which the pure stages never load.
"""

from keel.brain.constitution import Access, ChatRule, FailedRule, Manifest
from keel.brain.loader import load_brain
from keel.brain.snapshot import Brain
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
    "ChatRule",
    "ContextSpec",
    "EntitySpec",
    "FailedRule",
    "FeatureSpec",
    "Manifest",
    "ReachEntry",
    "RoleSpec",
    "SkillSpec",
    "Skip",
    "ViewRef",
    "load_brain",
]
