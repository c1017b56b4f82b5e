"""The Placement service's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from berth.common.db import Database
from berth.config import PlacementSettings
from berth.placement.policy import PolicyEnforcer


@dataclass
class PlacementService:
    settings: PlacementSettings
    db: Database
    policy: PolicyEnforcer
    rng: random.Random = field(default_factory=random.Random)

    @classmethod
    def from_settings(cls, settings: PlacementSettings, database_url: str) -> PlacementService:
        return cls(settings=settings, db=Database(database_url), policy=PolicyEnforcer(settings))
