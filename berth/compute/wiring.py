"""Which service answers which topic on which bus: the one place that says so.

``berth up`` (every service in one process) and ``berth serve`` (one service per process) both
wire through here, so the two shapes cannot disagree. The API-level bus (``compute.transport_url``)
carries the super-conductor and the scheduler; each cell's own bus (its CellMapping's transport
URL) carries its conductor and its hosts. Topics are in ``rpc``.
"""

from __future__ import annotations

from berth.bus.runtime import BusRuntime
from berth.compute import rpc
from berth.compute.cells import Cell

# Messages one server of each kind takes at once. The super-conductor's builds wait on the
# scheduler and the network service, so it takes the most. The scheduler takes as many: a
# request that waits for its shape's turn, or in a batch, holds its place, and a pass places
# at most the requests the scheduler has taken.
SUPER_CONDUCTOR_CONCURRENCY = 8
SCHEDULER_CONCURRENCY = 8
CELL_CONDUCTOR_CONCURRENCY = 4
HOST_CONCURRENCY = 4


class Wiring:
    def __init__(self, runtime: BusRuntime, api_transport_url: str, rpc_timeout: float) -> None:
        self.runtime = runtime
        self.api_transport_url = api_transport_url
        self.rpc_timeout = rpc_timeout

    # -- who sends ---------------------------------------------------------------------------------

    def super_conductor(self) -> rpc.SuperConductorAPI:
        return rpc.SuperConductorClient(self.runtime.client(self.api_transport_url))

    def scheduler(self) -> rpc.SchedulerAPI:
        return rpc.SchedulerClient(self.runtime.client(self.api_transport_url), self.rpc_timeout)

    def cells(self) -> rpc.CellRPC:
        return rpc.BusCellRPC(
            lambda cell: self.runtime.client(cell.transport_url), self.rpc_timeout
        )

    # -- who answers -------------------------------------------------------------------------------

    def serve_super_conductor(self, conductor: rpc.SuperConductorAPI) -> None:
        self.runtime.serve(
            self.api_transport_url, rpc.SUPER_CONDUCTOR, rpc.SuperConductorEndpoint(conductor),
            SUPER_CONDUCTOR_CONCURRENCY,
        )  # fmt: skip

    def serve_scheduler(self, scheduler: rpc.SchedulerAPI) -> None:
        self.runtime.serve(
            self.api_transport_url, rpc.SCHEDULER, rpc.SchedulerEndpoint(scheduler),
            SCHEDULER_CONCURRENCY,
        )  # fmt: skip

    def serve_cell_conductor(self, cell: Cell, conductor: rpc.CellConductorAPI) -> None:
        self.runtime.serve(
            cell.transport_url, rpc.cell_conductor_topic(cell.uuid),
            rpc.CellConductorEndpoint(conductor), CELL_CONDUCTOR_CONCURRENCY,
        )  # fmt: skip

    def serve_host(self, cell: Cell, host: str, agent: rpc.ComputeHostAPI) -> None:
        self.runtime.serve(
            cell.transport_url, rpc.host_topic(host), rpc.ComputeHostEndpoint(agent),
            HOST_CONCURRENCY,
        )  # fmt: skip
