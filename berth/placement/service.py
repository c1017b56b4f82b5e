"""The Placement service's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

import random
from dataclasses import dataclass, field

from berth.common.db import Database
from berth.config import PlacementSettings
from berth.placement.candidates.live import LiveIndex
from berth.placement.policy import PolicyEnforcer
from berth.placement.store.database import open_database
from berth.placement.store.group_commit import GroupCommit


@dataclass
class PlacementService:
    settings: PlacementSettings
    db: Database
    policy: PolicyEnforcer
    rng: random.Random = field(default_factory=random.Random)
    # This worker's in-memory view of every provider, for candidates and provider lists.
    index: LiveIndex = field(init=False)
    # This worker's allocation writer: claims arriving together share a transaction.
    claims: GroupCommit = field(init=False)

    def __post_init__(self) -> None:
        self.index = LiveIndex(self.db, verify=self.settings.verify_index)
        self.claims = GroupCommit(self.db)

    @classmethod
    def from_settings(cls, settings: PlacementSettings, database_url: str) -> PlacementService:
        return cls(
            settings=settings, db=open_database(database_url), policy=PolicyEnforcer(settings)
        )
