"""``berth up --distributed``: every service its own process on one machine, on a real broker and
database server: the local rehearsal of a cloud spread over machines.

One database per service on the given server (``<prefix>placement``, ``<prefix>network``,
``<prefix>api``, ``<prefix>cell0``, one per cell), created and migrated here first; the API-level
bus at ``--transport-url``, and each cell on its own virtual host of that broker when
``rabbitmqctl`` can make one (else on the same one: topics name their cell, so cells do not cross).
Then the processes, each with its log in ``<data dir>/logs``: placement, network, compute-api,
scheduler, super-conductor, one conductor per cell, and the fleet's hosts over ``--agents``
compute-agent processes. A child that dies is started again; Ctrl-C or SIGTERM stops them
together, gracefully.
"""

from __future__ import annotations

import logging
import os
import shutil
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TextIO
from urllib.parse import quote

import httpx
import sqlalchemy as sa
import yaml

from berth.allinone.stack import ensure_catalog, noauth2_cloud, write_clouds_yaml
from berth.bus.url import RabbitURL, parse_bus_url
from berth.common.db import Database, normalise_url
from berth.compute.db import cells as cell_store
from berth.compute.db import migrate as compute_migrate
from berth.compute.db.cell_schema import compute_nodes as compute_nodes_table
from berth.compute.host import fleet as fleets
from berth.config import Settings
from berth.network.store import migrate as network_migrate
from berth.network.store.schema import agents as network_agents
from berth.placement.store import migrate as placement_migrate
from berth.placement.store.database import open_database as open_placement_database

LOG = logging.getLogger(__name__)

# How long each service has to answer on its port or register its hosts (a thousand hosts'
# topics and registrations take minutes on a small machine).
START_TIMEOUT = 600.0
# How often the launcher looks for a child that died.
RESTART_CHECK_SECONDS = 1.0


@dataclass
class Layout:
    """Where everything of one distributed cloud is."""

    data_dir: Path
    database_urls: dict[str, str]
    transport_url: str
    cell_transport_urls: dict[str, str]
    ports: dict[str, int]
    fleet: dict[str, Any]
    agents: int
    # Copies of the scheduler, the super-conductor and each cell's conductor (they share their
    # topics' queues).
    copies: int = 1
    host: str = "127.0.0.1"

    def url(self, service: str) -> str:
        return f"http://{self.host}:{self.ports[service]}"


@dataclass
class Child:
    name: str
    args: list[str]
    environment: dict[str, str]
    log_path: Path
    process: subprocess.Popen[bytes] | None = None
    log: TextIO | None = field(default=None, repr=False)


def cell_names(fleet: Mapping[str, Any]) -> list[str]:
    """The fleet's cells (one, ``cell1``, when it names none): each has its own database."""
    return [str(c) for c in fleet.get("cells") or ["cell1"]]


def plan(
    settings: Settings,
    database_url: str,
    transport_url: str,
    fleet: Mapping[str, Any],
    agents: int,
    base_port: int,
    prefix: str = "berth_",
    copies: int = 1,
) -> Layout:
    cells = cell_names(fleet)
    names = ["placement", "network", "api", "cell0", *cells]
    return Layout(
        data_dir=settings.data_dir,
        database_urls={name: database_on(database_url, f"{prefix}{name}") for name in names},
        transport_url=transport_url,
        cell_transport_urls={
            cell: _cell_transport(transport_url, f"{prefix}{cell}") for cell in cells
        },
        ports={"placement": base_port + 1, "network": base_port + 2, "compute": base_port + 3},
        fleet=dict(fleet),
        agents=max(1, agents),
        copies=max(1, copies),
    )


def prepare(layout: Layout) -> None:
    """Every database created and migrated, every cell mapped, the starter flavors and image
    there (idempotent)."""
    for url in layout.database_urls.values():
        _create_database(url)
    placement_db = open_placement_database(layout.database_urls["placement"])
    placement_migrate.sync(placement_db)
    placement_db.dispose()
    _migrated(layout.database_urls["network"], network_migrate.sync)
    api_db = Database(layout.database_urls["api"])
    compute_migrate.sync_api(api_db)
    ensure_catalog(api_db)
    with api_db.write() as conn:
        if cell_store.get_cell(conn, cell_store.CELL0_UUID) is None:
            cell_store.create_cell(
                conn, cell_store.CELL0_UUID, cell_store.CELL0_NAME,
                layout.database_urls["cell0"], "none://",
            )  # fmt: skip
        for cell, transport in layout.cell_transport_urls.items():
            found = cell_store.get_cell_by_name(conn, cell)
            if found is None:
                cell_store.create_cell(
                    conn, str(uuid.uuid4()), cell, layout.database_urls[cell], transport
                )
            else:
                cell_store.update_cell(conn, found["uuid"], {"transport_url": transport})
    for name in ["cell0", *layout.cell_transport_urls]:
        _migrated(layout.database_urls[name], compute_migrate.sync_cell)
    api_db.dispose()


def children(layout: Layout) -> list[Child]:
    logs = layout.data_dir / "logs"
    logs.mkdir(parents=True, exist_ok=True)
    common = {
        "BERTH_DATA_DIR": str(layout.data_dir),
        "BERTH_PLACEMENT__DATABASE_URL": layout.database_urls["placement"],
        "BERTH_NETWORK__DATABASE_URL": layout.database_urls["network"],
        "BERTH_COMPUTE__API_DATABASE_URL": layout.database_urls["api"],
        "BERTH_COMPUTE__CELL0_DATABASE_URL": layout.database_urls["cell0"],
        "BERTH_COMPUTE__TRANSPORT_URL": layout.transport_url,
        "BERTH_COMPUTE__PLACEMENT_URL": f"{layout.url('placement')}",
        "BERTH_COMPUTE__NETWORK_URL": f"{layout.url('network')}",
        "BERTH_COMPUTE__IMAGE_URL": f"{layout.url('compute')}/image",
    }
    serve = [sys.executable, "-m", "berth.cli", "serve"]

    def child(name: str, *args: str, **environment: str) -> Child:
        return Child(name, [*serve, *args], {**common, **environment}, logs / f"{name}.log")

    found = [
        child(
            "placement", "placement", "--host", layout.host,
            "--port", str(layout.ports["placement"]),
        ),
        child(
            "network", "network", "--host", layout.host, "--port", str(layout.ports["network"]),
            "--placement-url", layout.url("placement"),
        ),
        child(
            "compute-api", "compute-api", "--host", layout.host,
            "--port", str(layout.ports["compute"]),
        ),
    ]  # fmt: skip
    for copy in range(1, layout.copies + 1):
        suffix = "" if layout.copies == 1 else f"-{copy}"
        found += [child(f"scheduler{suffix}", "scheduler"),
                  child(f"super-conductor{suffix}", "super-conductor")]  # fmt: skip
        found += [
            child(f"conductor-{cell}{suffix}", "conductor", "--cell", cell)
            for cell in layout.cell_transport_urls
        ]
    for index, part in enumerate(fleets.split(layout.fleet, layout.agents), start=1):
        if not part["hosts"]:
            continue
        path = layout.data_dir / f"fleet-agent{index}.yaml"
        path.write_text(yaml.safe_dump(part, sort_keys=False))
        found.append(child(f"compute-agent{index}", "compute-agent", "--fleet", str(path)))
    return found


def start(layout: Layout, child: Child) -> None:
    if child.log is not None:
        child.log.close()
    child.log = child.log_path.open("a")
    child.process = subprocess.Popen(
        child.args,
        env={**os.environ, **child.environment},
        stdout=child.log,
        stderr=subprocess.STDOUT,
        # Its own process group: Ctrl-C reaches this launcher only, which stops them in order.
        start_new_session=True,
    )


def stop(running: list[Child], grace: float) -> None:
    """SIGTERM to every child (front doors first), then SIGKILL to what is left after ``grace``."""
    for child in running:
        if child.process is not None and child.process.poll() is None:
            child.process.send_signal(signal.SIGTERM)
    deadline = time.monotonic() + grace
    for child in running:
        if child.process is None:
            continue
        try:
            child.process.wait(max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            LOG.warning("%s did not stop within %g s; killing it", child.name, grace)
            child.process.kill()
            child.process.wait()
        if child.log is not None:
            child.log.close()


def wait_until_up(layout: Layout, running: list[Child], fleet: fleets.Fleet | None) -> None:
    """Until every API answers and, given the ``fleet``, every host of it is a hypervisor that
    has reported its inventory to Placement, and the network service has shown every host's
    network agents to Placement (their bandwidth and packet rate providers); raises if a child
    dies."""
    deadline = time.monotonic() + START_TIMEOUT
    hosts = len(fleet.hosts) if fleet else 0
    paths = {
        "placement": "/",
        "network": "/",
        "compute": "/compute/v2.1/os-hypervisors",
    }
    headers = {"x-auth-token": "admin"}
    with httpx.Client(timeout=5) as client:
        for service, path in paths.items():
            while True:
                _check_alive(running)
                try:
                    answer = client.get(layout.url(service) + path, headers=headers)
                    if answer.status_code < 500 and (
                        service != "compute" or len(answer.json()["hypervisors"]) >= hosts
                    ):
                        break
                except httpx.HTTPError:
                    pass  # not listening yet
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{service} did not come up within {START_TIMEOUT:g} s")
                time.sleep(0.25)
    if not fleet:
        return
    # A host writes its compute node (a hypervisor from then on), then reports its provider
    # and inventory to Placement: a boot in between finds no room on it. Its network agents'
    # providers go to Placement later still, from the network service's reporter: until then a
    # port asking for bandwidth finds none.
    agents = sum(len(host.agents) for host in fleet.hosts)
    waits: list[tuple[str, list[str], Callable[[sa.Connection], int], int]] = [
        ("the hosts did not report to Placement", cell_names(layout.fleet), _reported_nodes, hosts),
        ("the network agents were not shown to Placement", ["network"], _synced_agents, agents),
    ]
    for failure, databases, count, wanted in waits:
        engines = [sa.create_engine(normalise_url(layout.database_urls[n])) for n in databases]
        try:
            while _total(engines, count) < wanted:
                _check_alive(running)
                if time.monotonic() > deadline:
                    raise RuntimeError(f"{failure} within {START_TIMEOUT:g} s")
                time.sleep(0.25)
        finally:
            for engine in engines:
                engine.dispose()


def _total(engines: Sequence[sa.Engine], count: Callable[[sa.Connection], int]) -> int:
    total = 0
    for engine in engines:
        with engine.connect() as conn:
            total += count(conn)
    return total


def _reported_nodes(conn: sa.Connection) -> int:
    """How many compute nodes of a cell have reported their inventory to Placement (each
    records what it reported, ``compute_nodes.record_reported``)."""
    reported = sa.select(sa.func.count()).where(
        compute_nodes_table.c.placement_fingerprint.is_not(None)
    )
    return conn.scalar(reported) or 0


def _synced_agents(conn: sa.Connection) -> int:
    """How many network agents the network service's reporter has shown to Placement (a pass
    that left their host in sync marks them, ``resources_synced``)."""
    synced = sa.select(sa.func.count()).where(network_agents.c.resources_synced.is_(True))
    return conn.scalar(synced) or 0


def _check_alive(running: list[Child]) -> None:
    for child in running:
        if child.process is not None and child.process.poll() is not None:
            raise RuntimeError(
                f"{child.name} exited with {child.process.returncode}; see {child.log_path}"
            )


def describe(layout: Layout, running: list[Child]) -> str:
    lines = [f"{'service':<18} {'pid':>7}  where"]
    where = {
        "placement": layout.url("placement"),
        "network": layout.url("network"),
        "compute-api": f"{layout.url('compute')}/compute/v2.1 (image: /image)",
        "scheduler": f"topic scheduler on {_shown(layout.transport_url)}",
        "super-conductor": f"topic super-conductor on {_shown(layout.transport_url)}",
    }
    for cell, transport in layout.cell_transport_urls.items():
        where[f"conductor-{cell}"] = f"cell {cell}: {_shown(transport)}"
    for child in running:
        pid = child.process.pid if child.process is not None else 0
        shown = where.get(child.name) or where.get(
            child.name.rsplit("-", 1)[0], f"hosts of {child.args[-1]}"
        )
        lines.append(f"{child.name:<18} {pid:>7}  {shown}  (log: {child.log_path})")
    lines.append(
        "databases: " + ", ".join(f"{n}={_shown_db(u)}" for n, u in layout.database_urls.items())
    )
    return "\n".join(lines)


# -- databases and vhosts ------------------------------------------------------------------------


def database_on(server_url: str, name: str) -> str:
    """The URL of the database ``name`` on the server of ``server_url``."""
    url = sa.make_url(normalise_url(server_url))
    if url.get_backend_name() == "sqlite":
        base = Path(url.database or ".").expanduser()
        return f"sqlite:///{base / f'{name}.db'}"
    return url.set(database=name).render_as_string(hide_password=False)


def drop(server_url: str, prefix: str, cells: Sequence[str]) -> None:
    """Every database and cell virtual host a layout made with ``prefix``: a rehearsal's end."""
    names = [f"{prefix}{name}" for name in ["placement", "network", "api", "cell0", *cells]]
    server = sa.make_url(normalise_url(server_url))
    if server.get_backend_name() == "sqlite":
        for name in names:
            Path(sa.make_url(database_on(server_url, name)).database or "").unlink(missing_ok=True)
    else:
        postgresql = server.get_backend_name() == "postgresql"
        engine = sa.create_engine(
            server.set(database="postgres" if postgresql else ""), isolation_level="AUTOCOMMIT"
        )
        with engine.connect() as conn:
            for name in names:
                conn.exec_driver_sql(
                    f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'
                    if postgresql
                    else f"DROP DATABASE IF EXISTS `{name}`"
                )
        engine.dispose()
    if shutil.which("rabbitmqctl") is not None:
        for cell in cells:
            subprocess.run(["rabbitmqctl", "-q", "delete_vhost", f"{prefix}{cell}"],
                           capture_output=True, check=False)  # fmt: skip


def _create_database(url: str) -> None:
    parsed = sa.make_url(url)
    backend = parsed.get_backend_name()
    if backend == "sqlite":
        Path(parsed.database or "").parent.mkdir(parents=True, exist_ok=True)
        return
    server = parsed.set(database="postgres" if backend == "postgresql" else "")
    engine = sa.create_engine(server, isolation_level="AUTOCOMMIT")
    try:
        with engine.connect() as conn:
            if backend == "postgresql":
                exists = conn.execute(
                    sa.text("select 1 from pg_database where datname = :name"),
                    {"name": parsed.database},
                ).first()
                if exists is None:
                    conn.exec_driver_sql(f'CREATE DATABASE "{parsed.database}"')
            else:
                conn.exec_driver_sql(
                    f"CREATE DATABASE IF NOT EXISTS `{parsed.database}` "
                    "CHARACTER SET utf8mb4 COLLATE utf8mb4_bin"
                )
    finally:
        engine.dispose()


def _migrated(url: str, sync: Callable[[Database], object]) -> None:
    """The database at ``url`` brought to its newest schema, and its connections closed (the
    launcher itself never uses them again)."""
    db = Database(url)
    try:
        sync(db)
    finally:
        db.dispose()


def _cell_transport(transport_url: str, vhost: str) -> str:
    """The cell's own virtual host on the same broker when rabbitmqctl can make it, else the
    API's (topics name their cell, so sharing is safe)."""
    where = parse_bus_url(transport_url)
    if not isinstance(where, RabbitURL) or shutil.which("rabbitmqctl") is None:
        return transport_url
    user = where.username or "guest"
    made = subprocess.run(
        ["rabbitmqctl", "-q", "add_vhost", vhost], capture_output=True, text=True, check=False
    )
    if made.returncode != 0 and "already exists" not in made.stderr + made.stdout:
        LOG.warning(
            "could not make virtual host %s (%s); the cells share the API's",
            vhost,
            made.stderr.strip(),
        )
        return transport_url
    allowed = subprocess.run(
        ["rabbitmqctl", "-q", "set_permissions", "-p", vhost, user, ".*", ".*", ".*"],
        capture_output=True, text=True, check=False,
    )  # fmt: skip
    if allowed.returncode != 0:
        LOG.warning("could not open %s to %s; the cells share the API's", vhost, user)
        return transport_url
    credentials = quote(user, safe="")
    if where.password is not None:
        credentials += ":" + quote(where.password, safe="")
    host = f"[{where.host}]" if ":" in where.host else where.host
    return f"rabbit://{credentials}@{host}:{where.port}/{quote(vhost, safe='')}"


def _shown(transport_url: str) -> str:
    return str(parse_bus_url(transport_url))


def _shown_db(url: str) -> str:
    return sa.make_url(url).render_as_string(hide_password=True)


def run(
    settings: Settings,
    database_url: str,
    transport_url: str,
    fleet: Mapping[str, Any],
    agents: int,
    base_port: int,
    prefix: str = "berth_",
    copies: int = 1,
) -> int:
    """Prepare, start every process, wait until every host is up, then until Ctrl-C/SIGTERM."""
    layout = plan(settings, database_url, transport_url, fleet, agents, base_port, prefix, copies)
    prepare(layout)
    running = children(layout)
    fleet = fleets.parse(layout.fleet)
    hosts = len(fleet.hosts)
    stopped = False

    def on_signal(_number: int, _frame: object) -> None:
        nonlocal stopped
        stopped = True

    signal.signal(signal.SIGTERM, on_signal)
    signal.signal(signal.SIGINT, on_signal)
    try:
        services = [c for c in running if not c.name.startswith("compute-agent")]
        for child in services:
            start(layout, child)
        wait_until_up(layout, running, None)
        for child in running:
            if child.process is None:
                start(layout, child)
        wait_until_up(layout, running, fleet)
        clouds = layout.data_dir / "clouds.yaml"
        endpoints = {
            "compute": f"{layout.url('compute')}/compute/v2.1",
            "network": layout.url("network"),
            "placement": layout.url("placement"),
            "image": f"{layout.url('compute')}/image",
        }
        write_clouds_yaml(clouds, {"berth": noauth2_cloud(endpoints)})
        print(describe(layout, running))
        print(f"berth is up, distributed: {hosts} host(s)\nexport OS_CLIENT_CONFIG_FILE={clouds}")
        sys.stdout.flush()
        while not stopped:
            # A service that dies is started again, as systemd's Restart=on-failure would; the
            # rest carries on meanwhile, as it would on other machines.
            for child in running:
                if child.process is not None and child.process.poll() is not None:
                    LOG.error(
                        "%s exited with %s; starting it again (log: %s)",
                        child.name, child.process.returncode, child.log_path,
                    )  # fmt: skip
                    start(layout, child)
            time.sleep(RESTART_CHECK_SECONDS)
    except RuntimeError as exc:
        LOG.error("%s", exc)
        return 1
    finally:
        LOG.info("stopping every service")
        stop(running, settings.compute.graceful_shutdown_timeout + 5)
    return 0
