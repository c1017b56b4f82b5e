"""The compute API's long-lived parts, shared by every request of one worker."""

from __future__ import annotations

from dataclasses import dataclass, field

from berth.common.db import Database
from berth.compute.cells import CellRegistry
from berth.compute.clients.image import ImageClient
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.policy import ComputePolicyEnforcer
from berth.compute.rpc import CellRPC, SchedulerAPI, SuperConductorAPI
from berth.config import ComputeSettings


@dataclass
class ComputeService:
    settings: ComputeSettings
    api_db: Database
    # Builds go to the super-conductor; deletes to the server's host, in its cell.
    conductor: SuperConductorAPI
    cell_rpc: CellRPC
    # Placement and the network service: None only in tests of the API alone.
    placement: PlacementClient | None = None
    network: NetworkClient | None = None
    # Asked for what-ifs (``/os-berth-what-if``); None only in tests of the API alone.
    scheduler: SchedulerAPI | None = None
    # The Image API: the /images proxy and snapshots (None in tests of the API alone).
    images: ImageClient | None = None
    cells: CellRegistry = field(init=False)
    # Built from settings (policy_file and friends); a malformed policy file fails here.
    policy: ComputePolicyEnforcer = field(init=False)

    def __post_init__(self) -> None:
        self.policy = ComputePolicyEnforcer(self.settings)
        self.cells = CellRegistry(self.api_db)
