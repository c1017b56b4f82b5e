"""The compute API's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from berth.bus import BusClient
from berth.common.db import Database
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.policy import ComputePolicyEnforcer
from berth.config import ComputeSettings


@dataclass
class ComputeService:
    settings: ComputeSettings
    api_db: Database
    # Placement and the network service: None only in tests of the API alone.
    placement: PlacementClient | None = None
    network: NetworkClient | None = None
    # Casts to the super-conductor (the API-level bus).
    bus: BusClient | None = None
    # A cell's own bus (its compute hosts and cell conductor listen there).
    cell_bus: Callable[[Cell], BusClient] | None = None
    cells: CellRegistry = field(init=False)
    # Built from settings (policy_file and friends); a malformed policy file fails here.
    policy: ComputePolicyEnforcer = field(init=False)

    def __post_init__(self) -> None:
        self.policy = ComputePolicyEnforcer(self.settings)
        self.cells = CellRegistry(self.api_db)
