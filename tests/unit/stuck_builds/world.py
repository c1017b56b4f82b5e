"""A compute API database with cell0 and cell1 beside in-process Placement and network services
(SQLite), and builds that stopped half way holding things in them, as a dead conductor or host
agent leaves them."""

from __future__ import annotations

import datetime as dt
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx
import sqlalchemy as sa

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute.cells import Cell, CellRegistry
from berth.compute.clients.network import NetworkClient
from berth.compute.clients.placement import PlacementClient
from berth.compute.db import (
    build_requests,
    compute_nodes,
    group_placements,
    instances,
    migrate,
    pci_devices,
    server_groups,
    services,
)
from berth.compute.db import cells as cell_store
from berth.compute.db.api_schema import server_group_placements
from berth.compute.db.cell_schema import instances as instances_table
from berth.config import NetworkSettings
from berth.network.service import NetworkService
from tests import dbs
from tests.conftest import make_service, network_client_for, wsgi_client

HOST = "cn1"
PF = "ens1"
LONG_AGO = utcnow() - dt.timedelta(hours=1)
FLAVOR = {"id": "1", "name": "m1.tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1}
RESOURCES = {"VCPU": 1, "MEMORY_MB": 512, "DISK_GB": 1}


@dataclass
class Services:
    api_db: Database
    cells: CellRegistry
    cell1: Cell
    placement: PlacementClient
    network: NetworkClient
    # The compute node's id in cell1, and its provider in Placement.
    node_id: int
    node: str
    network_id: str
    group: str


@dataclass(frozen=True)
class Held:
    """A stuck server and what it holds."""

    uuid: str
    made_port: str
    user_port: str


@contextmanager
def started(tmp_path: Path) -> Iterator[Services]:
    """The services, each over its own SQLite file under ``tmp_path``."""
    placement_db = dbs.fresh_database("sqlite", "main", tmp_path)
    placement_http = wsgi_client(make_service(placement_db))
    placement_http.headers["x-auth-token"] = "admin"
    network_db = dbs.fresh_network_database("sqlite", "main", tmp_path)
    network_http = network_client_for(NetworkService(settings=NetworkSettings(), db=network_db))
    api_db = Database(f"sqlite:///{tmp_path / 'api.db'}")
    migrate.sync_api(api_db)
    with api_db.write() as conn:
        cell_store.create_cell(
            conn, cell_store.CELL0_UUID, "cell0", f"sqlite:///{tmp_path / 'cell0.db'}", "none://"
        )
        cell_id = cell_store.create_cell(
            conn, str(uuid.uuid4()), "cell1", f"sqlite:///{tmp_path / 'cell1.db'}", "memory://"
        )["id"]
        cell_store.map_host(conn, HOST, cell_id)
        group = str(uuid.uuid4())
        server_groups.create(conn, group, "apart", "proj", "user", "soft-anti-affinity")
    cells = CellRegistry(api_db)
    cell1 = cells.cell_by_id(cell_id)
    assert cell1 is not None
    placement = PlacementClient(placement_http)
    network = NetworkClient(network_http)
    node_id, node = _compute_node(cells.database(cell1), placement)
    try:
        yield Services(
            api_db, cells, cell1, placement, network, node_id, node, _network(network_http), group
        )
    finally:
        cells.dispose()
        for closing in (placement_http, network_http):
            closing.close()
        for db in (api_db, placement_db, network_db):
            db.dispose()


def _compute_node(cell_db: Database, placement: PlacementClient) -> tuple[int, str]:
    with cell_db.write() as conn:
        service = services.get_or_create(conn, HOST, "nova-compute", "compute")
        resources = {"hypervisor_type": "simulated", "vcpus": 8, "memory_mb": 8192, "local_gb": 80}
        node = compute_nodes.upsert(conn, service["id"], HOST, HOST, resources)
        description = {PF: {"address": "0000:81:00.0", "physical_network": "public", "vfs": 4}}
        pci_devices.sync_host(conn, node["id"], description)
    placement.ensure_provider(node["uuid"], HOST)
    inventory = {"min_unit": 1, "step_size": 1, "reserved": 0, "allocation_ratio": 1.0}
    totals = {"VCPU": 8, "MEMORY_MB": 8192, "DISK_GB": 80}
    placement.set_inventories(
        node["uuid"], {rc: {**inventory, "total": n, "max_unit": n} for rc, n in totals.items()}
    )
    return int(node["id"]), str(node["uuid"])


def _network(client: httpx.Client) -> str:
    """A flat network with a subnet, and an OVS agent on the host that reaches it."""
    agent = {"agent_type": "Open vSwitch agent", "host": HOST, "binary": "neutron-openvswitch-agent",
             "topic": "N/A", "configurations": {"bridge_mappings": {"public": "br-ex"}}}  # fmt: skip
    assert client.post("/v2.0/agents", json={"agent": agent}).is_success
    net = client.post("/v2.0/networks", json={"network": {
        "name": "public", "shared": True,
        "provider:network_type": "flat", "provider:physical_network": "public"}}).json()["network"]  # fmt: skip
    subnet = {"network_id": net["id"], "ip_version": 4, "cidr": "192.0.2.0/24"}
    assert client.post("/v2.0/subnets", json={"subnet": subnet}).is_success
    return str(net["id"])


def take_what_a_build_takes(world: Services, server: str) -> Held:
    """What the super-conductor takes for a server before it dies: a claim, a port it makes, a
    port of the user's, both bound to the host, and the host in the server's group."""
    assert world.placement.claim(server, {world.node: {"resources": RESOURCES}}, "proj", "user")
    owner = {"device_id": server, "device_owner": "compute:nova"}
    made = world.network.create_port(world.network_id, "proj", **owner)
    # The user's port, made through the API as a user makes it (no compute description).
    answer = world.network.client.post(
        "/v2.0/ports", json={"port": {"network_id": world.network_id, "project_id": "proj"}}
    )
    user = world.network.update_port(answer.json()["port"]["id"], **owner)
    for port in (made, user):
        world.network.bind(port["id"], HOST)
    with world.api_db.write() as conn:
        server_groups.add_members(conn, world.group, [server])
        assert group_placements.reserve(conn, server, HOST)
    return Held(server, made["id"], user["id"])


def stuck_build_request(world: Services, when: dt.datetime = LONG_AGO) -> Held:
    """A server that is still only its BuildRequest, made at ``when``, holding things."""
    server = str(uuid.uuid4())
    instance = {"uuid": server, "name": "vm", "flavor": FLAVOR, "image": {"id": "img"}}
    with world.api_db.write() as conn:
        build_requests.create(conn, server, "proj", "user", instance, when)
        cell_store.create_instance_mapping(conn, server, "proj", "user")
    return take_what_a_build_takes(world, server)


def stuck_instance(
    world: Services,
    when: dt.datetime = LONG_AGO,
    task_state: str = "spawning",
    mapped: bool = True,
) -> Held:
    """A server building on the host since ``when`` (its agent died), holding things and a VF;
    not ``mapped`` to its cell when its conductor died before it could say so."""
    server = str(uuid.uuid4())
    held = take_what_a_build_takes(world, server)
    network_info = [
        {"port_id": held.made_port, "created_by_compute": True},
        {"port_id": held.user_port, "created_by_compute": False},
    ]
    with world.api_db.write() as conn:
        cell_store.create_instance_mapping(conn, server, "proj", "user")
        if mapped:
            cell_store.set_instance_cell(conn, server, world.cell1.id)
    with world.cells.database(world.cell1).write() as conn:
        instances.create(conn, {
            "uuid": server, "project_id": "proj", "user_id": "user", "vm_state": "building",
            "task_state": task_state, "host": HOST, "node": HOST, "flavor": FLAVOR,
            "network_info": network_info, "created_at": when})  # fmt: skip
        assert pci_devices.claim_vfs(conn, world.node_id, PF, 1, server)
        # The row's last change was then, not now.
        conn.execute(
            instances_table.update().where(instances_table.c.uuid == server).values(updated_at=when)
        )
    return held


def assert_nothing_held(world: Services, held: Held) -> None:
    """The server holds no allocation, no VF, no group host; the port compute made is gone; the
    user's port is the user's again, unbound."""
    assert world.placement.allocations(held.uuid)["allocations"] == {}
    assert world.network.ports(device_id=held.uuid) == []
    assert world.network.ports(id=held.made_port) == []
    user = world.network.port(held.user_port)
    assert (user["device_id"], user["device_owner"], user["binding:host_id"]) == ("", "", "")
    with world.cells.database(world.cell1).read() as conn:
        assert pci_devices.held_by(conn, held.uuid) == []
    placed = server_group_placements.c
    with world.api_db.read() as conn:
        assert conn.scalar(sa.select(placed.host).where(placed.instance_uuid == held.uuid)) is None


def vm_state(world: Services, cell: Cell, server: str) -> tuple[str, str | None, bool] | None:
    with world.cells.database(cell).read() as conn:
        row = instances.get(conn, server)
    return None if row is None else (row["vm_state"], row["host"], row["deleted"])


def build_request_exists(world: Services, server: str) -> bool:
    with world.api_db.read() as conn:
        return build_requests.get(conn, server) is not None


def mapped_cell(world: Services, server: str) -> str | None:
    with world.api_db.read() as conn:
        mapping = cell_store.get_instance_mapping(conn, server)
    return None if mapping is None else mapping["cell_name"]
