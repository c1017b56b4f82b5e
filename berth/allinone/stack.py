"""Every Berth service in one process: Placement, the network service, the compute API, the
scheduler, the super-conductor, one cell conductor per cell and one host agent per simulated
host, on SQLite files in the data directory and the in-process bus.

The services talk as they would apart: over their HTTP APIs (in process, without sockets) and
the bus (one per cell, plus the API-level one). The bus runs on its own event loop thread; HTTP
handlers and bus endpoints run in worker threads and reach the bus through ``BusClient``s.
"""

from __future__ import annotations

import datetime as dt
import logging
import threading
import uuid
from collections.abc import Mapping
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import yaml

from berth.allinone.progress import StepProgress, timed
from berth.bus.runtime import BusRuntime
from berth.common import affinity, startup_objects
from berth.common.context import RequestContext
from berth.common.db import Database
from berth.common.dispatch import PrefixDispatcher
from berth.common.timeutils import utcnow
from berth.compute import soft_delete
from berth.compute.api.app import build_app as build_compute_app
from berth.compute.cells import Cell
from berth.compute.clients.http import in_process_client
from berth.compute.clients.image import ImageClient
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.conductor import recovery
from berth.compute.conductor.build import SuperConductor
from berth.compute.conductor.cell import CellConductor
from berth.compute.db import cells as cell_store
from berth.compute.db import flavors, images
from berth.compute.db import migrate as compute_migrate
from berth.compute.host import periodic, registration
from berth.compute.host.agent import HostAgent, beat
from berth.compute.host.driver import SimulatedDriver
from berth.compute.host.fleet import Fleet
from berth.compute.scheduler.config import scheduler_config
from berth.compute.scheduler.service import SchedulerService
from berth.compute.service import ComputeService
from berth.compute.wiring import Wiring
from berth.config import AuthStrategy, KeystoneAuthtokenSettings, Settings
from berth.dashboard.app import DashboardApp, PageConfig
from berth.dashboard.sources import FleetReader, index_source
from berth.identity import embedded
from berth.identity.service_user import in_process_caller, service_auth
from berth.identity.strategy import authenticator
from berth.image.app import build_app as build_image_app
from berth.image.data import FileStore
from berth.network import agents as network_agents
from berth.network.app import build_app as build_network_app
from berth.network.model import AGENT_BINARIES
from berth.network.placement_allocations import PlacementAllocations
from berth.network.placement_sync import PlacementSync
from berth.network.reporter import PlacementReporter
from berth.network.service import NetworkService
from berth.network.store import agents as network_agent_store
from berth.network.store import migrate as network_migrate
from berth.placement.app import build_app as build_placement_app
from berth.placement.service import PlacementService
from berth.placement.store import migrate as placement_migrate

LOG = logging.getLogger(__name__)

STARTER_FLAVORS = (
    ("1", "m1.tiny", 1, 512, 1),
    ("2", "m1.small", 1, 2048, 20),
    ("3", "m1.medium", 2, 4096, 40),
    ("4", "m1.large", 4, 8192, 80),
)
STARTER_IMAGE = "8b2d4e07-6c5f-4d3a-9e6b-2f3c1a0d9e11"
RESTART_FAULT = (
    "Build failed: Berth stopped while the server was being built, so it was ended at the next "
    "start and everything it held was given back."
)
IMAGE_PREFIX = "/image"
PREFIXES = {
    "placement": "/placement",
    "network": "/networking",
    "compute": "/compute",
    "dashboard": "/dashboard",
}


def on_one_cpu(settings: Settings) -> None:
    """What ``berth up`` does once its stack serves (and the benchmarks of it): every thread of
    the process on one CPU, moved when another has more room (``berth.common.affinity``),
    unless ``[up] one_cpu`` is false."""
    if not settings.up.one_cpu:
        return
    one = affinity.OneCpu()
    cpu = one.pin()
    if cpu is not None:
        LOG.info("every thread of this process runs on CPU %d ([up] one_cpu)", cpu)
        one.follow()


class Stack:
    def __init__(self, settings: Settings, fleet: Fleet, heartbeat_seconds: float = 20.0) -> None:
        self.settings = settings
        self.fleet = fleet
        self.heartbeat_seconds = heartbeat_seconds
        data = settings.data_dir
        data.mkdir(parents=True, exist_ok=True)
        self.placement = PlacementService.from_settings(
            settings.placement, settings.placement_database_url()
        )
        self.network = NetworkService(
            settings=settings.network, db=Database(settings.network_database_url())
        )
        self.api_db = Database(settings.compute_api_database_url())
        keystone = settings.keystone_authtoken
        self.placement_app = build_placement_app(
            self.placement, authenticator(settings.placement.auth_strategy, keystone)
        )
        self.network_app = build_network_app(
            self.network, authenticator(settings.network.auth_strategy, keystone)
        )
        # How the compute services, and the network service, call the others.
        self.compute_calls = service_auth(
            settings.compute.auth_strategy, settings.compute.service_token, keystone
        )
        network_calls = service_auth(
            settings.network.auth_strategy, settings.network.placement_token, keystone
        )
        # Placement is called as the services themselves, with no token: the hosts register
        # while the identity service still starts (berth.allinone.up).
        compute_caller = placement_caller(
            settings.compute.auth_strategy, settings.compute.service_token, keystone
        )
        compute_placement = in_process_client(
            self.placement_app,
            compute_caller or self.compute_calls,
            "http://placement",
            inline=True,
        )
        self.placement_client = PlacementClient(compute_placement)
        self.network_client = NetworkClient(
            in_process_client(self.network_app, self.compute_calls, "http://network", inline=True)
        )
        self.image_app = build_image_app(
            self.api_db,
            FileStore(settings.image_data_dir()),
            authenticator(settings.compute.auth_strategy, keystone),
            settings.image.image_size_cap,
        )
        self.image_client = ImageClient(
            in_process_client(self.image_app, self.compute_calls, "http://image")
        )
        self.runtime = BusRuntime()
        self.wiring = Wiring(
            self.runtime, settings.compute.transport_url, settings.compute.rpc_response_timeout
        )
        self.compute = ComputeService(
            settings.compute,
            self.api_db,
            conductor=self.wiring.super_conductor(),
            cell_rpc=self.wiring.cells(),
            placement=self.placement_client,
            network=self.network_client,
            scheduler=self.wiring.scheduler(),
            images=self.image_client,
        )
        self.compute_authenticator = authenticator(settings.compute.auth_strategy, keystone)
        self.compute_app = build_compute_app(self.compute, self.compute_authenticator)
        network_caller = placement_caller(
            settings.network.auth_strategy, settings.network.placement_token, keystone
        )
        network_placement = in_process_client(
            self.placement_app, network_caller or network_calls, "http://placement", inline=True
        ).__enter__()
        self.reporter = PlacementReporter(
            self.network.db,
            PlacementSync(network_placement),
            settings.network.placement_sync_interval,
            settings.network.agent_down_time,
        )
        self.network.on_change.append(self.reporter.wake)
        self.network.allocations = PlacementAllocations(network_placement)
        self.agents: dict[str, HostAgent] = {}
        self.cells: list[Cell] = []
        self.network_agent_ids: list[str] = []
        self._stop = threading.Event()
        self._heartbeat: threading.Thread | None = None

    def app(self) -> Any:
        """Every service's API on one ASGI app, by path prefix."""
        return PrefixDispatcher(self.app_routes())

    def app_routes(self) -> dict[str, Any]:
        """Each API by its path prefix."""
        return {
            PREFIXES["placement"]: self.placement_app,
            PREFIXES["network"]: self.network_app,
            PREFIXES["compute"]: self.compute_app,
            PREFIXES["dashboard"]: self.dashboard_app(),
            IMAGE_PREFIX: self.image_app,
        }

    def dashboard_app(self) -> DashboardApp:
        """The capacity view, reading this process's Placement index and compute databases,
        behind the Compute API's authentication and policy."""
        keystone = self.settings.compute.auth_strategy == "keystone"
        identity = urlsplit(self.settings.keystone_authtoken.www_authenticate_uri or "").path
        return DashboardApp(
            FleetReader(self.compute, index_source(self.placement.index.current)),
            self.compute_authenticator,
            self.compute.policy.authorize,
            # Keystone is on this port (``berth up``): the page logs in there, same origin.
            PageConfig(
                identity=identity.rstrip("/") + "/v3" if keystone else None,
                compute=PREFIXES["compute"] + "/v2.1",
                image=IMAGE_PREFIX,
            ),
        )

    # -- starting ----------------------------------------------------------------------------------

    def start(self) -> None:
        self.register()
        self.serve()

    def register(self) -> None:
        """The databases, then every host, its network agents and its providers in Placement:
        what needs no identity service (Placement is called in process as the services)."""
        with timed("databases ready"):
            placement_migrate.sync(self.placement.db)
            network_migrate.sync(self.network.db)
            compute_migrate.sync_api(self.api_db)
            self.cells = self._ensure_cells()
            ensure_catalog(self.api_db)
        self._start_hosts(self.cells)
        with timed("network agents reported"):
            self._report_network_agents()
        with timed("network providers (bridges, physical functions) in Placement"):
            self.reporter.run_once()

    def serve(self) -> None:
        """After :meth:`register`: the builds the last run left are ended, and the scheduler,
        the conductors and the hosts take requests."""
        cells = self.cells
        # Nothing else works on this stack's builds: any left in BUILD stopped with the last run.
        for line in recovery.end_stuck_builds(
            self.api_db, self.compute.cells, self.placement_client, self.network_client,
            dt.timedelta(0), fault=RESTART_FAULT,
        ):  # fmt: skip
            LOG.info("ended at start: %s", line)
        self.scheduler = scheduler = SchedulerService(
            self.api_db, self.compute.cells, self.placement_client, scheduler_config(self.settings.compute),
            self.settings.compute.default_availability_zone,
            self.settings.compute.service_down_time,
        )  # fmt: skip
        conductor = SuperConductor(
            self.api_db, self.compute.cells, self.placement_client, self.network_client,
            self.wiring.scheduler(), self.wiring.cells(),
        )  # fmt: skip
        self.wiring.serve_scheduler(scheduler)
        self.wiring.serve_super_conductor(conductor)
        for cell in cells:
            db = self.compute.cells.database(cell)
            cell_conductor = CellConductor(
                cell,
                db,
                self.api_db,
                self.placement_client,
                self.network_client,
                self.wiring.cells(),
            )
            self.wiring.serve_cell_conductor(cell, cell_conductor)
            for host in self.fleet.hosts:
                if host.cell == cell.name:
                    self.wiring.serve_host(cell, host.name, self.agents[host.name])
        self.reporter.start()
        # Starting a large fleet takes longer than a service's down time: beat once now.
        self._beat_once()
        self._heartbeat = threading.Thread(target=self._beat, name="heartbeats", daemon=True)
        self._heartbeat.start()
        threading.Thread(
            target=self._work_queue, args=(conductor,), name="build queue", daemon=True
        ).start()
        with timed("start-up's objects frozen out of garbage collection"):
            startup_objects.freeze()
        LOG.info("berth up: %d host(s) in %d cell(s)", len(self.fleet.hosts), len(cells))

    def _ensure_cells(self) -> list[Cell]:
        data = self.settings.data_dir
        with self.api_db.write() as conn:
            if cell_store.get_cell(conn, cell_store.CELL0_UUID) is None:
                cell_store.create_cell(
                    conn, cell_store.CELL0_UUID, cell_store.CELL0_NAME,
                    self.settings.cell0_database_url(), "none://",
                )  # fmt: skip
            for name in self.fleet.cells:
                if cell_store.get_cell_by_name(conn, name) is None:
                    cell_store.create_cell(
                        conn,
                        str(uuid.uuid4()),
                        name,
                        f"sqlite:///{data / f'{name}.db'}",
                        f"memory://{name}",
                    )
        return [
            c for c in self.compute.cells.cells(include_cell0=False) if c.name in self.fleet.cells
        ]

    def _start_hosts(self, cells: list[Cell]) -> None:
        by_name = {c.name: c for c in cells}
        for host in self.fleet.hosts:
            cell = by_name[host.cell]
            self.agents[host.name] = HostAgent(
                host.name, host.resources, self.compute.cells.database(cell), self.placement_client,
                self.network_client,
                SimulatedDriver(host.name, host.spawn_seconds, host.failures),
                self.wiring.cells().conductor(cell), self.image_client,
            )  # fmt: skip
        # Compute nodes first: the network service hangs its providers under them.
        with StepProgress("compute hosts registered", len(self.agents)) as progress:
            registration.start_hosts(list(self.agents.values()), progress.advance)
        with self.api_db.write() as conn:
            cell_store.map_hosts(
                conn, {host.name: by_name[host.cell].id for host in self.fleet.hosts}
            )

    def _report_network_agents(self) -> None:
        """Every host's network agents' first state report, in one transaction: the agents are
        in this process (in another, ``SimulatedAgent`` reports through the API)."""
        reports = [
            network_agents.StateReport(kind, host.name, AGENT_BINARIES[kind], "N/A", configurations)
            for host in self.fleet.hosts
            for kind, configurations in host.agents.items()
        ]
        with self.network.db.write() as conn:
            self.network_agent_ids = network_agents.report_many(conn, reports)
        self.network.changed()

    # -- running -----------------------------------------------------------------------------------

    def _beat(self) -> None:
        while not self._stop.wait(self.heartbeat_seconds):
            self._beat_once()

    def _work_queue(self, conductor: SuperConductor) -> None:
        while not self._stop.wait(self.settings.compute.queue_retry_interval):
            try:
                conductor.retry_queued()
            except Exception:
                LOG.exception("a pass over the build queue failed; trying again")

    def _beat_once(self) -> None:
        now = utcnow()
        beat(self.agents.values(), now)
        periodic.run(self.agents.values(), self.settings.compute, now)
        interval = self.settings.compute.reclaim_instance_interval
        if interval > 0:
            try:
                soft_delete.reclaim(
                    self.api_db, self.compute.cells, self.wiring.cells(), interval, now
                )
            except Exception:
                LOG.exception("reclaiming soft-deleted servers failed; trying again later")
        # The simulated network agents' heartbeats, in one statement: their configurations do
        # not change, and a thousand state reports through the API would take longer than
        # agent_down_time on a busy stack (each agent is then seen dead and refuses binds).
        with self.network.db.write() as conn:
            network_agent_store.heartbeat(conn, self.network_agent_ids, now)

    def stop(self) -> None:
        self._stop.set()
        self.reporter.stop()
        self.runtime.stop_serving(self.settings.compute.graceful_shutdown_timeout)
        self.runtime.close()
        self.compute.cells.dispose()
        for db in (self.api_db, self.network.db, self.placement.db):
            db.dispose()
        startup_objects.thaw()


def placement_caller(
    strategy: AuthStrategy, noauth2_token: str, keystone: KeystoneAuthtokenSettings
) -> RequestContext | None:
    """Who a service of the stack is to Placement in process: under Keystone, the embedded
    Keystone's service user with the roles it gives it. Placement keeps no record of who
    called, only checks the roles."""
    service_user = (embedded.SERVICE_USER, embedded.SERVICE_PROJECT)
    known = {service_user: embedded.token_roles(embedded.SERVICE_USER)}
    return in_process_caller(strategy, noauth2_token, keystone, known)


def ensure_catalog(api_db: Database) -> None:
    """A few flavors and an image on a fresh cloud, so a first server can be booted at once
    (the openstack CLI cannot create flavors without an identity service)."""
    with api_db.write() as conn:
        if flavors.list_flavors(conn, include_disabled=True):
            return
        for flavorid, name, vcpus, ram, disk in STARTER_FLAVORS:
            flavors.create(conn, flavorid, name, vcpus, ram, disk)
        images.create(conn, STARTER_IMAGE, {"name": "cirros", "min_disk": 1, "min_ram": 64})


def write_clouds_yaml(path: Path, clouds: Mapping[str, Mapping[str, Any]]) -> None:
    """``clouds`` (name -> cloud) as a clouds.yaml only its owner can read: it holds passwords."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch(mode=0o600)
    path.write_text(yaml.safe_dump({"clouds": dict(clouds)}, sort_keys=False))


def noauth2_cloud(endpoints: Mapping[str, str], token: str = "admin") -> dict[str, Any]:
    """A cloud that reaches each service (service type -> URL) with a noauth2 token, without an
    identity service."""
    return {
        "auth_type": "admin_token",
        "auth": {"token": token, "endpoint": endpoints["compute"]},
        **{f"{service}_endpoint_override": url for service, url in endpoints.items()},
        "region_name": "RegionOne",
    }


def keystone_cloud(identity_url: str, user: str, password: str, project: str) -> dict[str, Any]:
    """A cloud whose user logs in to Keystone and finds every service in its catalog."""
    return {
        "auth": {
            "auth_url": identity_url,
            "username": user,
            "password": password,
            "project_name": project,
            "user_domain_name": "Default",
            "project_domain_name": "Default",
        },
        "identity_api_version": 3,
        "region_name": "RegionOne",
        "interface": "public",
    }


def endpoints(base_url: str) -> dict[str, str]:
    """Every service's endpoint behind one base URL (the all-in-one stack's prefixes)."""
    return {
        "compute": f"{base_url}/compute/v2.1",
        "network": f"{base_url}/networking",
        "placement": f"{base_url}/placement",
        "image": f"{base_url}/image",
    }
