"""The network service's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from berth.common.db import Database
from berth.config import NetworkSettings

if TYPE_CHECKING:
    from berth.network.placement_allocations import PlacementAllocations
    from berth.network.reporter import PlacementReporter


@dataclass
class NetworkService:
    settings: NetworkSettings
    db: Database
    # Called after a write that may change what Placement must show (agents, segments, subnets):
    # the Placement reporter's wake-up. Nothing to call when no Placement is configured.
    on_change: list[Callable[[], None]] = field(default_factory=list)
    # Started and stopped with the app (its lifespan) when there is one.
    reporter: PlacementReporter | None = None
    # Rewrites servers' allocations when bound ports' QoS requests change; None without a
    # Placement (such changes are then refused).
    allocations: PlacementAllocations | None = None

    def changed(self) -> None:
        for callback in self.on_change:
            callback()
