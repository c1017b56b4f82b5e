"""The compute services, one per process: what ``berth serve <service>`` runs.

Each process opens the API database, reaches Placement and the network service over HTTP
(``compute.placement_url``, ``compute.network_url``), wires its endpoints through ``wiring`` and
serves until SIGTERM or SIGINT. Then it takes no new messages, lets what it has taken finish for
up to ``compute.graceful_shutdown_timeout`` seconds, and exits; its topic's other messages wait in
their queues for the next server. Several copies of the scheduler and the conductors may run at
once: they share their topics' queues as competing consumers.
"""

from __future__ import annotations

import datetime as dt
import logging
import signal
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import uvicorn

from berth.bus.runtime import BusRuntime
from berth.common import startup_objects
from berth.common.db import Database
from berth.common.dispatch import PrefixDispatcher
from berth.common.serving import uvicorn_options
from berth.common.timeutils import utcnow
from berth.compute import soft_delete
from berth.compute.api.app import build_app as build_compute_app
from berth.compute.cells import COMPUTE_POOL_SIZE, Cell, CellRegistry
from berth.compute.clients.http import ServiceUnavailable, http_client, in_process_client
from berth.compute.clients.image import ImageClient
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import recovery
from berth.compute.conductor.build import SuperConductor
from berth.compute.conductor.cell import CellConductor
from berth.compute.db import cells as cell_store
from berth.compute.db import migrate
from berth.compute.host import fleet as fleets
from berth.compute.host import periodic, registration
from berth.compute.host.agent import HostAgent, beat
from berth.compute.host.driver import SimulatedDriver
from berth.compute.scheduler.config import scheduler_config
from berth.compute.scheduler.service import SchedulerService
from berth.compute.service import ComputeService
from berth.compute.wiring import Wiring
from berth.config import Settings
from berth.identity.service_user import service_auth
from berth.identity.strategy import authenticator
from berth.image.app import build_app as build_image_app
from berth.image.data import FileStore
from berth.network.sim_agent import SimulatedAgent

LOG = logging.getLogger(__name__)


# Hosts whose topics connect to the broker at once: one at a time takes minutes for hundreds of
# hosts, all at once is a connection storm the broker answers with time-outs.
SERVING_AT_ONCE = 8
# How long a host keeps trying to register before its agent gives up.
START_PATIENCE_SECONDS = 300.0


class NotConfigured(Exception):
    """A setting the service needs is missing or points nowhere; the message says which."""


@dataclass
class _Common:
    """What every compute process has: settings, the API database, the cells, the buses."""

    settings: Settings
    api_db: Database
    cells: CellRegistry
    runtime: BusRuntime
    wiring: Wiring
    # Set by SIGTERM or SIGINT.
    stopped: threading.Event = field(default_factory=threading.Event)
    # One service user session per process: its token is fetched once and renewed.
    _calls: httpx.Auth | None = None

    def __post_init__(self) -> None:
        for number in (signal.SIGTERM, signal.SIGINT):
            signal.signal(number, lambda *_: self.stopped.set())

    def calls(self) -> httpx.Auth:
        """What this process's calls to Placement and the network service carry."""
        if self._calls is None:
            compute = self.settings.compute
            self._calls = service_auth(
                compute.auth_strategy, compute.service_token, self.settings.keystone_authtoken
            )
        return self._calls

    def placement(self) -> PlacementClient:
        url = self.settings.compute.placement_url
        if not url:
            raise NotConfigured("compute.placement_url is not set (--placement-url)")
        return PlacementClient(http_client(url, self.calls()))

    def images(self) -> ImageClient | None:
        """The Image API for the hosts' snapshots; without ``compute.image_url`` the hosts run,
        and every snapshot they are asked for fails (its instance action says why)."""
        url = self.settings.compute.image_url
        if not url:
            LOG.warning("compute.image_url is not set (--image-url): these hosts cannot snapshot")
            return None
        return ImageClient(http_client(url, self.calls()))

    def network(self) -> NetworkClient:
        url = self.settings.compute.network_url
        if not url:
            raise NotConfigured("compute.network_url is not set (--network-url)")
        return NetworkClient(http_client(url, self.calls()))

    def cell_named(self, name: str) -> Cell:
        for cell in self.cells.cells(include_cell0=False):
            if cell.name == name:
                return cell
        raise NotConfigured(f"no cell named {name!r}: map it with `berth manage cell create`")


@contextmanager
def _common(settings: Settings) -> Iterator[_Common]:
    compute = settings.compute
    api_db = Database(settings.compute_api_database_url(), pool_size=COMPUTE_POOL_SIZE)
    migrate.sync_api(api_db)
    runtime = BusRuntime()
    cells = CellRegistry(api_db)
    try:
        yield _Common(
            settings, api_db, cells, runtime,
            Wiring(runtime, compute.transport_url, compute.rpc_response_timeout),
        )  # fmt: skip
    finally:
        runtime.close()
        cells.dispose()
        api_db.dispose()


def _every_interval(common: _Common, name: str, *tasks: Callable[[], None]) -> None:
    """Run each task every report interval, in a thread of its own, until the process stops: a
    slow one (a thousand agents' state reports) never delays another (the heartbeats)."""
    interval = common.settings.compute.report_interval

    def repeat(task: Callable[[], None]) -> None:
        while not common.stopped.wait(interval):
            try:
                task()
            except Exception:
                LOG.exception("%s: periodic task failed; trying again in %g s", name, interval)

    for task in tasks:
        threading.Thread(target=repeat, args=(task,), name=f"{name} periodic", daemon=True).start()


def _every(common: _Common, name: str, interval: float, task: Callable[[], object]) -> None:
    """Run ``task`` every ``interval`` seconds in a thread of its own until the process stops."""

    def repeat() -> None:
        while not common.stopped.wait(interval):
            try:
                task()
            except Exception:
                LOG.exception("%s: periodic task failed; trying again in %g s", name, interval)

    threading.Thread(target=repeat, name=f"{name} periodic", daemon=True).start()


def _until_stopped(common: _Common, name: str) -> None:
    """Serve until SIGTERM/SIGINT, then stop gracefully."""
    startup_objects.freeze()
    LOG.info("%s is serving", name)
    common.stopped.wait()
    grace = common.settings.compute.graceful_shutdown_timeout
    LOG.info("%s stopping: no new messages; up to %g s for the ones taken", name, grace)
    common.runtime.stop_serving(grace)


def run_compute_api(settings: Settings) -> int:
    """The Compute API (with the image API beside it) on compute.host:compute.port."""
    compute = settings.compute
    with _common(settings) as common:
        authenticate = authenticator(compute.auth_strategy, settings.keystone_authtoken)
        image_app = build_image_app(
            common.api_db, FileStore(settings.image_data_dir()), authenticate,
            settings.image.image_size_cap,
        )  # fmt: skip
        images = ImageClient(in_process_client(image_app, common.calls(), "http://image"))
        service = ComputeService(
            compute, common.api_db, common.wiring.super_conductor(), common.wiring.cells(),
            placement=common.placement(), network=common.network(), images=images,
            scheduler=common.wiring.scheduler(),
        )  # fmt: skip
        app = PrefixDispatcher(
            {"/compute": build_compute_app(service, authenticate), "/image": image_app}
        )
        startup_objects.freeze()
        uvicorn.run(
            app, host=compute.host, port=compute.port, **uvicorn_options(settings),
            timeout_graceful_shutdown=int(compute.graceful_shutdown_timeout),
        )  # fmt: skip
    return 0


def run_scheduler(settings: Settings) -> int:
    compute = settings.compute
    with _common(settings) as common:
        scheduler = SchedulerService(
            common.api_db, common.cells, common.placement(), scheduler_config(compute),
            compute.default_availability_zone, compute.service_down_time,
        )  # fmt: skip
        common.wiring.serve_scheduler(scheduler)
        _until_stopped(common, "scheduler")
    return 0


def run_super_conductor(settings: Settings) -> int:
    """The super-conductor, which also ends the builds that stopped half way, in every cell."""
    stuck_after = dt.timedelta(seconds=settings.compute.stuck_build_timeout)
    with _common(settings) as common:
        placement, network = common.placement(), common.network()
        conductor = SuperConductor(
            common.api_db, common.cells, placement, network,
            common.wiring.scheduler(), common.wiring.cells(),
        )  # fmt: skip

        def recover() -> None:
            recovery.end_stuck_builds(common.api_db, common.cells, placement, network, stuck_after)
            interval = settings.compute.reclaim_instance_interval
            if interval > 0:
                soft_delete.reclaim(
                    common.api_db, common.cells, common.wiring.cells(), interval, utcnow()
                )

        recover()
        common.wiring.serve_super_conductor(conductor)
        _every_interval(common, "super-conductor", recover)
        _every(common, "build queue", settings.compute.queue_retry_interval, conductor.retry_queued)
        _until_stopped(common, "super-conductor")
    return 0


def run_cell_conductor(settings: Settings, cell_name: str) -> int:
    with _common(settings) as common:
        cell = common.cell_named(cell_name)
        conductor = CellConductor(
            cell, common.cells.database(cell), common.api_db, common.placement(), common.network(),
            common.wiring.cells(),
        )  # fmt: skip
        common.wiring.serve_cell_conductor(cell, conductor)
        _until_stopped(common, f"conductor of {cell.name}")
    return 0


def _start_patiently(agents: Sequence[HostAgent]) -> None:
    """Register the hosts, waiting out a Placement or network service that is starting or busy
    (a thousand hosts register at once) instead of dying with the first 503. Registering again
    what was registered before a 503 writes nothing new."""
    delay = 0.5
    deadline = time.monotonic() + START_PATIENCE_SECONDS
    while True:
        try:
            registration.start_hosts(agents)
            return
        except ServiceUnavailable as exc:
            if time.monotonic() > deadline:
                raise
            LOG.info(
                "registration of %d host(s) deferred (%s); again in %g s", len(agents), exc, delay
            )
            time.sleep(delay)
            delay = min(delay * 2, 10.0)


def run_compute_agent(settings: Settings, fleet_path: Path) -> int:
    """Every host of a fleet of simulated hosts, each on its own topic in its own cell."""
    fleet = fleets.load(fleet_path, fleets.host_defaults(settings.compute))
    with _common(settings) as common:
        cells = {name: common.cell_named(name) for name in fleet.cells}
        placement, network, images = common.placement(), common.network(), common.images()
        agents = {
            host.name: HostAgent(
                host.name,
                host.resources,
                common.cells.database(cells[host.cell]),
                placement,
                network,
                SimulatedDriver(host.name, host.spawn_seconds, host.failures),
                common.wiring.cells().conductor(cells[host.cell]),
                images,
            )
            for host in fleet.hosts
        }
        # Every host's topic is served before the host registers: once it is in Placement and
        # up, the scheduler may choose it, and the build cast to it must find a consumer.
        with ThreadPoolExecutor(SERVING_AT_ONCE) as pool:
            list(
                pool.map(
                    lambda host: common.wiring.serve_host(
                        cells[host.cell], host.name, agents[host.name]
                    ),
                    fleet.hosts,
                )
            )
        # Compute nodes before the network agents: the network service hangs their providers
        # under them.
        _start_patiently(list(agents.values()))
        with common.api_db.write() as conn:
            cell_store.map_hosts(conn, {host.name: cells[host.cell].id for host in fleet.hosts})
        client = http_client(str(settings.compute.network_url), common.calls())
        network_agents = [
            SimulatedAgent(client, host.name, kind, configurations)
            for host in fleet.hosts
            for kind, configurations in host.agents.items()
        ]

        def heartbeats() -> None:
            now = utcnow()
            beat(agents.values(), now)
            periodic.run(agents.values(), settings.compute, now)

        def network_reports() -> None:
            for agent in network_agents:
                agent.report()

        network_reports()
        _every_interval(common, "compute agent", heartbeats, network_reports)
        LOG.info("%d simulated host(s) in %d cell(s)", len(agents), len(cells))
        _until_stopped(common, "compute agent")
    return 0
