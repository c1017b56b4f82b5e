"""The network service's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from berth.common.db import Database
from berth.config import NetworkSettings


@dataclass
class NetworkService:
    settings: NetworkSettings
    db: Database
    # Called after a write that may change what Placement must show (agents, segments, subnets):
    # the Placement reporter's wake-up. Nothing to call when no Placement is configured.
    on_change: list[Callable[[], None]] = field(default_factory=list)

    def changed(self) -> None:
        for callback in self.on_change:
            callback()
