"""/servers: what a create stores and casts, what each field refuses, and how a server shows,
lists and deletes while a BuildRequest, on a host in cell1, and in ERROR in cell0.

The super-conductor is simulated: ``place`` does what it does once it has chosen (or failed to
choose) a host: the Instance in a cell, the mapping pointed at it, the BuildRequest deleted.
"""

from __future__ import annotations

import datetime as dt
import hashlib
import re
import uuid
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from a2wsgi import ASGIMiddleware

from berth.bus import BusUnavailable
from berth.common.db import Database
from berth.compute import rpc
from berth.compute.api.app import build_app
from berth.compute.cells import Cell
from berth.compute.clients.network import NetworkError
from berth.compute.db import (
    aggregates,
    build_requests,
    cells,
    flavors,
    images,
    instances,
    keypairs,
    migrate,
    request_specs,
    server_groups,
)
from berth.compute.db.cell_schema import instances as instances_table
from berth.compute.objects.request_spec import RequestSpec, SchedulerHints
from berth.compute.rpc import BusCellRPC, SuperConductorClient
from berth.compute.service import ComputeService
from berth.config import ComputeSettings
from tests.conftest import MEMBER_ROLES

CELL1_UUID = "11111111-1111-4111-8111-111111111111"
IMAGE = "70a599e0-31e7-49b7-b260-868f441e862b"
BIG_IMAGE = "155d900f-4e14-4e4c-a73d-069cbf4541e6"
QUEUED_IMAGE = "a2459075-d96c-40d5-893e-577ff92e721c"
NETWORK = "3a5a2e8b-0c5e-4f0a-9a55-5c2c1f4b1e01"
PORT = "9b0e1b3c-7c7e-4b5e-8c1d-2f4b9b7f3c02"
MEMBER = "5e6f3a1c-8d2b-4c9e-9f0a-1b2c3d4e5f60"
V2_1 = {"openstack-api-version": "compute 2.1"}
V2_37 = {"openstack-api-version": "compute 2.37"}
V2_38 = {"openstack-api-version": "compute 2.38"}
V2_47 = {"openstack-api-version": "compute 2.47"}
DEMO = {"x-auth-token": "alice:demo", "x-roles": MEMBER_ROLES}
OTHER = {"x-auth-token": "bob:other", "x-roles": MEMBER_ROLES}
ADMIN = {"x-auth-token": "admin"}


class RecordingBus:
    """What the API casts, kept for the test (a BusClient's cast and call)."""

    def __init__(self, fail: bool = False) -> None:
        self.casts: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = fail

    def cast(self, topic: str, method: str, /, **kwargs: Any) -> None:
        if self.fail:
            raise BusUnavailable("no broker")
        self.casts.append((topic, method, kwargs))

    def call(self, topic: str, method: str, /, timeout: float | None = None, **kwargs: Any) -> Any:
        raise AssertionError(f"the API does not call {topic}.{method}")


@dataclass
class FakeNetwork:
    """The network service as the API and the cleanup use it."""

    networks: dict[str, dict[str, Any]] = field(default_factory=dict)
    ports: dict[str, dict[str, Any]] = field(default_factory=dict)
    deleted: list[str] = field(default_factory=list)
    unbound: list[str] = field(default_factory=list)

    def network(self, network_id: str) -> dict[str, Any]:
        if network_id not in self.networks:
            raise NetworkError(404, "NetworkNotFound", network_id)
        return self.networks[network_id]

    def port(self, port_id: str) -> dict[str, Any]:
        if port_id not in self.ports:
            raise NetworkError(404, "PortNotFound", port_id)
        return self.ports[port_id]

    def delete_port(self, port_id: str) -> None:
        self.deleted.append(port_id)

    def update_port(self, port_id: str, **attributes: Any) -> dict[str, Any]:
        self.unbound.append(port_id)
        return {}


@dataclass
class FakePlacement:
    released: list[str] = field(default_factory=list)

    def release(self, consumer: str) -> None:
        self.released.append(consumer)


@dataclass
class World:
    service: ComputeService
    client: httpx.Client
    bus: RecordingBus
    cell_buses: dict[str, RecordingBus]
    group: str

    def cell(self, cell_uuid: str) -> Cell:
        found = self.service.cells.cell(cell_uuid)
        assert found is not None
        return found

    def create(self, headers: Mapping[str, str] = DEMO, **server: Any) -> str:
        answer = self.client.post("/v2.1/servers", json=_body(**server), headers=headers)
        assert answer.status_code == 202, answer.text
        return str(answer.json()["server"]["id"])

    def place(
        self,
        server_uuid: str,
        cell_uuid: str,
        host: str | None,
        vm_state: str,
        network_info: list[dict[str, Any]] | None = None,
        fault: str | None = None,
    ) -> None:
        """What the super-conductor (and the host agent) leave once the build is done."""
        with self.service.api_db.read() as conn:
            building = build_requests.get(conn, server_uuid)
        assert building is not None
        asked = building["instance"]
        cell = self.cell(cell_uuid)
        with self.service.cells.database(cell).write() as conn:
            instances.create(
                conn,
                {
                    "uuid": server_uuid,
                    "project_id": asked["project_id"],
                    "user_id": asked["user_id"],
                    "display_name": asked["name"],
                    "host": host,
                    "node": f"{host}.example" if host else None,
                    "vm_state": vm_state,
                    "power_state": 1 if vm_state == "active" else 0,
                    "flavor": asked["flavor"],
                    "image_ref": asked["image"]["id"],
                    "availability_zone": asked["availability_zone"],
                    "key_name": asked["key_name"],
                    "reservation_id": asked["reservation_id"],
                    "metadata": asked["metadata"],
                    "network_info": network_info or [],
                    "created_at": building["created_at"],
                },
            )
            if fault is not None:
                instances.add_fault(conn, server_uuid, 500, fault, details="Traceback: ...")
        with self.service.api_db.write() as conn:
            assert cells.set_instance_cell(conn, server_uuid, cell.id)
            assert build_requests.delete(conn, server_uuid)

    def instance(self, server_uuid: str, cell_uuid: str) -> Any:
        with self.service.cells.database(self.cell(cell_uuid)).read() as conn:
            return instances.get(conn, server_uuid)

    def mapping(self, server_uuid: str) -> Any:
        with self.service.api_db.read() as conn:
            return cells.get_instance_mapping(conn, server_uuid)


def _body(**server: Any) -> dict[str, Any]:
    hints = server.pop("hints", None)
    body: dict[str, Any] = {
        "server": {"name": "web", "flavorRef": "1", "imageRef": IMAGE, **server}
    }
    if hints is not None:
        body["os:scheduler_hints"] = hints
    return body


@pytest.fixture
def world(tmp_path: Path) -> Iterator[World]:
    api_db = Database(f"sqlite:///{tmp_path / 'api.db'}")
    migrate.sync_api(api_db)
    with api_db.write() as conn:
        cells.create_cell(
            conn, cells.CELL0_UUID, "cell0", f"sqlite:///{tmp_path / 'cell0.db'}", "memory://"
        )
        cells.create_cell(
            conn, CELL1_UUID, "cell1", f"sqlite:///{tmp_path / 'cell1.db'}", "memory://cell1"
        )
        flavors.create(conn, "1", "m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
        flavors.create(conn, "2", "m1.large", vcpus=4, memory_mb=8192, root_gb=40, swap=512)
        flavors.set_extra_specs(conn, "2", {"hw:cpu_policy": "dedicated"})
        flavors.create(conn, "3", "m1.medium", vcpus=2, memory_mb=8192, root_gb=10)
        flavors.create(conn, "private", "p1", vcpus=1, memory_mb=512, is_public=False)
        flavors.create(conn, "off", "gone", vcpus=1, memory_mb=512, disabled=True)
        images.create(conn, IMAGE, {"name": "cirros", "properties": {"hw_architecture": "x86_64"}})
        images.create(conn, BIG_IMAGE, {"name": "big", "min_ram": 4096, "min_disk": 20})
        images.create(conn, QUEUED_IMAGE, {"name": "half", "status": "queued"})
        zone = aggregates.create(conn, str(uuid.uuid4()), "rack-a")
        aggregates.set_metadata(conn, zone.id, {"availability_zone": "zone-a"})
        aggregates.add_host(conn, zone.id, "host1")
        group = server_groups.create(
            conn, str(uuid.uuid4()), "spread", "demo", "alice", "anti-affinity",
            {"max_server_per_host": 2},
        )  # fmt: skip
        server_groups.add_members(conn, group["uuid"], [MEMBER])
        # alice's (DEMO's) key pairs, which her servers are booted with.
        for key_name in ("mykey", "k"):
            keypairs.create(conn, "alice", key_name, "ssh", "aa:bb", "ssh-ed25519 AAAA")
    bus = RecordingBus()
    cell_buses: dict[str, RecordingBus] = {}
    service = ComputeService(
        ComputeSettings(default_availability_zone="nova"),
        api_db,
        conductor=SuperConductorClient(bus),  # type: ignore[arg-type]
        cell_rpc=BusCellRPC(lambda cell: cell_buses.setdefault(cell.uuid, RecordingBus())),  # type: ignore[arg-type,return-value]
    )
    app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://compute") as client:
        yield World(service, client, bus, cell_buses, group["uuid"])
    service.cells.dispose()
    api_db.dispose()


# -- create --------------------------------------------------------------------------------


def test_create_stores_the_build_and_casts_it(world: World) -> None:
    networks = [{"uuid": NETWORK, "fixed_ip": "10.0.0.5"}, {"port": PORT}]
    answer = world.client.post(
        "/v2.1/servers",
        json=_body(
            flavorRef="2",
            networks=networks,
            availability_zone="zone-a",
            metadata={"role": "web"},
            key_name="mykey",
            security_groups=[{"name": "default"}],
            hints={"group": world.group, "same_host": [MEMBER], "different_host": MEMBER},
        ),
        headers={**DEMO, **V2_37},
    )
    assert answer.status_code == 202, answer.text
    server = answer.json()["server"]
    server_uuid = server["id"]
    assert set(server) == {"id", "links", "OS-DCF:diskConfig", "security_groups", "adminPass"}
    assert len(server["adminPass"]) == 12 and server["security_groups"] == [{"name": "default"}]
    assert answer.headers["location"] == f"http://compute/v2.1/servers/{server_uuid}"
    assert server["links"][0] == {"rel": "self", "href": answer.headers["location"]}

    with world.service.api_db.read() as conn:
        building = build_requests.get(conn, server_uuid)
        stored_spec = request_specs.get(conn, server_uuid)
        mapping = cells.get_instance_mapping(conn, server_uuid)
        members = server_groups.members(conn, world.group)
    assert building is not None and stored_spec is not None and mapping is not None
    created_at = building["instance"]["created_at"]
    assert created_at == building["created_at"].isoformat() + "Z"
    reservation_id = building["instance"]["reservation_id"]
    assert re.fullmatch(r"r-[a-z0-9]{8}", reservation_id)
    assert building["instance"] == {
        "uuid": server_uuid,
        "name": "web",
        "project_id": "demo",
        "user_id": "alice",
        "flavor": {
            "id": "2",
            "name": "m1.large",
            "vcpus": 4,
            "memory_mb": 8192,
            "root_gb": 40,
            "ephemeral_gb": 0,
            "swap": 512,
            "extra_specs": {"hw:cpu_policy": "dedicated"},
        },
        "image": {
            "id": IMAGE,
            "properties": {"hw_architecture": "x86_64"},
            "min_disk": 0,
            "min_ram": 0,
        },
        "networks": networks,
        # "default" only: the ports get the project's default group without being told.
        "security_groups": [],
        "availability_zone": "zone-a",
        "metadata": {"role": "web"},
        "tags": [],
        "key_name": "mykey",
        "reservation_id": reservation_id,
        "description": None,
        "access_ip_v4": None,
        "access_ip_v6": None,
        "user_data": None,
        "config_drive": False,
        "auto_disk_config": False,
        # What the guest gets at its first spawn: the password answered.
        "injected": {"admin_pass": server["adminPass"], "files": []},
        "scheduler_hints": {
            "group": world.group,
            "same_host": [MEMBER],
            "different_host": [MEMBER],
        },
        "created_at": created_at,
    }
    spec = RequestSpec.from_json(stored_spec)
    assert spec.to_json() == stored_spec
    assert spec.instance_uuids == (server_uuid,) and spec.project_id == "demo"
    assert (spec.flavor.id, spec.flavor.swap_mb, dict(spec.flavor.extra_specs)) == (
        "2",
        512,
        {"hw:cpu_policy": "dedicated"},
    )
    assert spec.image.id == IMAGE and spec.availability_zone == "zone-a" and spec.ports == ()
    assert spec.hints == SchedulerHints(world.group, (MEMBER,), (MEMBER,))
    assert spec.server_group is not None
    assert (spec.server_group.policy, spec.server_group.members) == ("anti-affinity", (MEMBER,))
    assert (spec.server_group.max_server_per_host, spec.server_group.hosts) == (2, ())
    assert mapping["cell_id"] is None and not mapping["queued_for_delete"]
    assert members == [MEMBER, server_uuid]
    request_id = answer.headers["x-openstack-request-id"]
    assert world.bus.casts == [
        (
            "super-conductor",
            "build_instances",
            {
                "version": str(rpc.SUPER_CONDUCTOR_VERSION),
                "instance_uuids": [server_uuid],
                "request_id": request_id,
            },
        )
    ]


def test_several_servers_in_one_request(world: World) -> None:
    answer = world.client.post("/v2.1/servers", json=_body(min_count=2, max_count=3), headers=DEMO)
    assert answer.status_code == 202
    ((_, _, cast),) = world.bus.casts
    made = cast["instance_uuids"]
    assert len(made) == 3 and answer.json()["server"]["id"] == made[0]
    with world.service.api_db.read() as conn:
        names = [build_requests.get(conn, u)["instance"]["name"] for u in made]  # type: ignore[index]
    assert names == ["web-1", "web-2", "web-3"]


def test_a_reservation_id_names_the_servers_of_one_request(world: World) -> None:
    answer = world.client.post(
        "/v2.1/servers",
        json=_body(min_count=2, max_count=2, return_reservation_id=True),
        headers=DEMO,
    )
    assert answer.status_code == 202, answer.text
    assert set(answer.json()) == {"reservation_id"} and "location" not in answer.headers
    reservation_id = answer.json()["reservation_id"]
    ((_, _, cast),) = world.bus.casts
    made = cast["instance_uuids"]
    alone = world.create(name="alone")
    world.place(made[0], CELL1_UUID, "host1", "active")
    world.place(alone, CELL1_UUID, "host1", "active")

    def listed(query: str) -> list[str]:
        return _ids(world.client.get(f"/v2.1/servers?{query}", headers=DEMO))

    # One placed in cell1 and one still a BuildRequest: both are found by the id.
    assert sorted(listed(f"reservation_id={reservation_id}")) == sorted(made)
    assert listed("reservation_id=r-00000000") == []
    assert len(listed("")) == 3

    url = f"/v2.1/servers/{made[0]}"
    v2_3 = {**ADMIN, "openstack-api-version": "compute 2.3"}
    shown = world.client.get(url, headers=v2_3).json()["server"]
    assert shown["OS-EXT-SRV-ATTR:reservation_id"] == reservation_id
    building = world.client.get(f"/v2.1/servers/{made[1]}", headers=v2_3).json()["server"]
    assert building["OS-EXT-SRV-ATTR:reservation_id"] == reservation_id
    assert (
        "OS-EXT-SRV-ATTR:reservation_id"
        not in world.client.get(url, headers=ADMIN).json()["server"]
    )  # 2.1
    member = world.client.get(url, headers={**DEMO, "openstack-api-version": "compute 2.3"})
    assert "OS-EXT-SRV-ATTR:reservation_id" not in member.json()["server"]
    # Without return_reservation_id the first server is answered, as before.
    assert (
        "server"
        in world.client.post(
            "/v2.1/servers", json=_body(max_count=2, return_reservation_id=False), headers=DEMO
        ).json()
    )


@pytest.mark.parametrize(
    ("headers", "networks", "stored"),
    [
        (V2_1, None, "auto"),
        (V2_1, [], "auto"),
        (V2_37, "none", "none"),
        (V2_37, "auto", "auto"),
        (V2_37, [{"uuid": NETWORK}], [{"uuid": NETWORK}]),
    ],
)
def test_networks_per_microversion(
    world: World, headers: dict[str, str], networks: Any, stored: Any
) -> None:
    server = {} if networks is None else {"networks": networks}
    server_uuid = world.create({**DEMO, **headers}, **server)
    with world.service.api_db.read() as conn:
        building = build_requests.get(conn, server_uuid)
    assert building is not None and building["instance"]["networks"] == stored


BAD = [
    # (the server's fields, microversion, the field the message names)
    ({"name": None}, V2_1, "name"),
    ({"name": "x" * 256}, V2_1, "name"),
    ({"name": ""}, V2_1, "name"),
    ({"flavorRef": "99"}, V2_1, "flavorRef"),
    ({"flavorRef": "private"}, V2_1, "flavorRef"),
    ({"flavorRef": "off"}, V2_1, "flavorRef"),
    ({"flavorRef": None}, V2_1, "flavorRef"),
    ({"imageRef": str(uuid.uuid4())}, V2_1, "imageRef"),
    ({"imageRef": QUEUED_IMAGE}, V2_1, "imageRef"),
    ({"imageRef": BIG_IMAGE}, V2_1, "min_ram"),
    ({"imageRef": BIG_IMAGE, "flavorRef": "3", "networks": "auto"}, V2_37, "min_disk"),
    ({}, V2_37, "networks"),
    ({"networks": "none"}, V2_1, "networks"),
    ({"networks": "some"}, V2_37, "networks"),
    ({"networks": []}, V2_37, "networks"),
    ({"networks": [{"uuid": NETWORK, "port": PORT}]}, V2_1, "networks"),
    ({"networks": [{"port": PORT, "fixed_ip": "10.0.0.1"}]}, V2_1, "networks"),
    ({"networks": [{"uuid": "net1"}]}, V2_1, "networks/uuid"),
    ({"networks": [{"uuid": NETWORK, "fixed_ip": "10.0.0.300"}]}, V2_1, "networks/fixed_ip"),
    ({"networks": [{"port": PORT}, {"port": PORT}]}, V2_1, "networks"),
    ({"networks": [{"uuid": NETWORK, "fixed_ip": 167772161}]}, V2_1, "networks/fixed_ip"),
    ({"networks": [{"uuid": NETWORK, "colour": "red"}]}, V2_1, "networks"),
    ({"availability_zone": "zone-z"}, V2_1, "availability_zone"),
    ({"min_count": 0}, V2_1, "min_count"),
    ({"max_count": "two"}, V2_1, "max_count"),
    ({"max_count": "\u00b2"}, V2_1, "max_count"),
    ({"min_count": 3, "max_count": 2}, V2_1, "min_count"),
    ({"max_count": 1001}, V2_1, "max_count"),
    ({"return_reservation_id": "maybe"}, V2_1, "return_reservation_id"),
    ({"metadata": {"role": 1}}, V2_1, "metadata"),
    ({"metadata": ["role"]}, V2_1, "metadata"),
    ({"key_name": 7}, V2_1, "key_name"),
    ({"key_name": "nokey"}, V2_1, "Invalid key_name provided."),
    ({"hints": {"group": str(uuid.uuid4())}}, V2_1, "group"),
    ({"hints": {"same_host": ["host1"]}}, V2_1, "same_host"),
    ({"hints": {"different_host": {"a": 1}}}, V2_1, "different_host"),
    ({"hints": ["group"]}, V2_1, "os:scheduler_hints"),
    (
        {"block_device_mapping_v2": [{"source_type": "volume", "uuid": "v", "boot_index": 0}]},
        V2_1,
        "volume service",
    ),
    ({"block_device_mapping_v2": "x"}, V2_1, "block_device_mapping_v2"),
]


@pytest.mark.parametrize(("fields", "headers", "named"), BAD)
def test_each_field_is_checked(
    world: World, fields: dict[str, Any], headers: dict[str, str], named: str
) -> None:
    body = _body(**fields)
    body["server"] = {k: v for k, v in body["server"].items() if v is not None}
    answer = world.client.post("/v2.1/servers", json=body, headers={**DEMO, **headers})
    assert answer.status_code == 400, answer.text
    assert named in answer.json()["badRequest"]["message"]
    with world.service.api_db.read() as conn:
        assert build_requests.list_build_requests(conn) == []
    assert world.bus.casts == []


def test_a_body_that_is_not_a_server(world: World) -> None:
    for body, wrong in (([], "body"), ({"server": "web"}, "server"), ({"servers": {}}, "body")):
        answer = world.client.post("/v2.1/servers", json=body, headers=DEMO)
        assert answer.status_code == 400
        message = answer.json()["badRequest"]["message"]
        assert message.startswith(f"Invalid input for field/attribute {wrong}. Value: ")


def test_another_users_key_pair_is_an_invalid_key_name(world: World) -> None:
    answer = world.client.post("/v2.1/servers", json=_body(key_name="mykey"), headers=OTHER)
    assert answer.status_code == 400
    assert answer.json()["badRequest"]["message"] == "Invalid key_name provided."
    assert world.bus.casts == []


def test_another_projects_group_is_not_found(world: World) -> None:
    answer = world.client.post(
        "/v2.1/servers", json=_body(hints={"group": world.group}), headers=OTHER
    )
    assert answer.status_code == 400 and "group" in answer.text


def test_networks_and_ports_are_checked_with_the_network_service(world: World) -> None:
    network = FakeNetwork(
        networks={NETWORK: {"id": NETWORK, "project_id": "other", "shared": False}},
        ports={PORT: {"id": PORT, "project_id": "demo", "device_id": "someone-else"}},
    )
    world.service.network = network  # type: ignore[assignment]
    post = world.client.post

    def create(networks: list[dict[str, str]]) -> httpx.Response:
        return post("/v2.1/servers", json=_body(networks=networks), headers=DEMO)

    assert create([{"uuid": NETWORK}]).status_code == 400  # another project's, not shared
    assert create([{"uuid": str(uuid.uuid4())}]).status_code == 400
    assert create([{"port": PORT}]).status_code == 409  # in use
    network.networks[NETWORK]["shared"] = True
    network.ports[PORT]["device_id"] = ""
    assert create([{"uuid": NETWORK}, {"port": PORT}]).status_code == 202


def test_a_failed_cast_takes_the_build_back(world: World) -> None:
    world.service.conductor = SuperConductorClient(RecordingBus(fail=True))  # type: ignore[arg-type]
    answer = world.client.post(
        "/v2.1/servers", json=_body(hints={"group": world.group}), headers=DEMO
    )
    assert answer.status_code == 500 and "conductor" in answer.json()["computeFault"]["message"]
    with world.service.api_db.read() as conn:
        assert build_requests.list_build_requests(conn) == []
        assert cells.list_instance_mappings(conn, include_queued_for_delete=True) == []
        assert server_groups.members(conn, world.group) == [MEMBER]


# -- show and list ---------------------------------------------------------------------------


def test_a_build_request_shows_as_building(world: World) -> None:
    server_uuid = world.create(availability_zone="zone-a", metadata={"a": "b"}, key_name="k")
    server = world.client.get(f"/v2.1/servers/{server_uuid}", headers=DEMO).json()["server"]
    assert (server["status"], server["addresses"], server["hostId"]) == ("BUILD", {}, "")
    assert (server["tenant_id"], server["user_id"], server["name"]) == ("demo", "alice", "web")
    assert server["flavor"] == {
        "id": "1",
        "links": [{"rel": "bookmark", "href": "http://compute/flavors/1"}],
    }
    assert server["image"]["id"] == IMAGE
    assert (server["metadata"], server["key_name"]) == ({"a": "b"}, "k")
    assert server["OS-EXT-AZ:availability_zone"] == "zone-a"
    assert server["OS-EXT-STS:vm_state"] == "building" and "fault" not in server
    assert not any(key.startswith("OS-EXT-SRV-ATTR") for key in server)
    assert server["created"].endswith("Z")

    as_admin = world.client.get(f"/v2.1/servers/{server_uuid}", headers=ADMIN).json()["server"]
    assert as_admin["OS-EXT-SRV-ATTR:host"] is None

    listed = world.client.get("/v2.1/servers", headers=DEMO).json()["servers"]
    assert listed == [
        {
            "id": server_uuid,
            "name": "web",
            "links": [
                {"rel": "self", "href": f"http://compute/v2.1/servers/{server_uuid}"},
                {"rel": "bookmark", "href": f"http://compute/servers/{server_uuid}"},
            ],
        }
    ]
    (detailed,) = world.client.get("/v2.1/servers/detail", headers=DEMO).json()["servers"]
    assert detailed == server


def _network_info() -> list[dict[str, Any]]:
    return [
        {
            "port_id": PORT,
            "network_id": NETWORK,
            "network_name": "private",
            "mac_address": "fa:16:3e:00:00:01",
            "fixed_ips": [
                {"ip_address": "10.0.0.5", "subnet_id": "s4"},
                {"ip_address": "fd00::5", "subnet_id": "s6"},
            ],
            "created_by_compute": True,
        }
    ]


@pytest.fixture
def three(world: World) -> dict[str, str]:
    """An ACTIVE server on host1 in cell1, an ERROR one in cell0, one still building."""
    active = world.create(name="alpha", flavorRef="2", key_name="mykey")
    failed = world.create(name="beta")
    building = world.create(name="gamma")
    world.place(active, CELL1_UUID, "host1", "active", _network_info())
    world.place(failed, cells.CELL0_UUID, None, "error", fault="No valid host was found. 0/2")
    return {"active": active, "error": failed, "building": building}


def test_an_active_server_shows_its_host_addresses_and_zone(
    world: World, three: dict[str, str]
) -> None:
    url = f"/v2.1/servers/{three['active']}"
    server = world.client.get(url, headers=DEMO).json()["server"]
    assert (server["status"], server["name"], server["key_name"]) == ("ACTIVE", "alpha", "mykey")
    assert server["addresses"] == {
        "private": [
            {
                "addr": "10.0.0.5",
                "version": 4,
                "OS-EXT-IPS:type": "fixed",
                "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01",
            },
            {
                "addr": "fd00::5",
                "version": 6,
                "OS-EXT-IPS:type": "fixed",
                "OS-EXT-IPS-MAC:mac_addr": "fa:16:3e:00:00:01",
            },
        ]
    }
    assert server["hostId"] == hashlib.sha224(b"demohost1").hexdigest()
    assert server["OS-EXT-AZ:availability_zone"] == "zone-a"  # host1's aggregate
    assert server["OS-EXT-STS:power_state"] == 1
    assert not any(key.startswith("OS-EXT-SRV-ATTR") for key in server)
    assert server["flavor"]["id"] == "2"

    newer = world.client.get(url, headers={**DEMO, **V2_47}).json()["server"]
    assert newer["flavor"] == {
        "vcpus": 4,
        "ram": 8192,
        "disk": 40,
        "ephemeral": 0,
        "swap": 512,
        "original_name": "m1.large",
        "extra_specs": {"hw:cpu_policy": "dedicated"},
    }
    as_admin = world.client.get(url, headers=ADMIN).json()["server"]
    assert as_admin["OS-EXT-SRV-ATTR:host"] == "host1"
    assert as_admin["OS-EXT-SRV-ATTR:hypervisor_hostname"] == "host1.example"
    assert as_admin["OS-EXT-SRV-ATTR:instance_name"].startswith("instance-0000")


def test_an_error_server_shows_its_fault(world: World, three: dict[str, str]) -> None:
    url = f"/v2.1/servers/{three['error']}"
    server = world.client.get(url, headers=DEMO).json()["server"]
    assert server["status"] == "ERROR" and server["hostId"] == ""
    assert server["fault"]["code"] == 500
    assert server["fault"]["message"].startswith("No valid host was found")
    assert "details" not in server["fault"] and server["fault"]["created"].endswith("Z")
    as_admin = world.client.get(url, headers=ADMIN).json()["server"]
    assert as_admin["fault"]["details"] == "Traceback: ..."


def _ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [server["id"] for server in answer.json()["servers"]]


def test_lists_newest_first_with_filters_and_pages(world: World, three: dict[str, str]) -> None:
    get = world.client.get
    everything = [three["building"], three["error"], three["active"]]
    assert _ids(get("/v2.1/servers", headers=DEMO)) == everything
    assert _ids(get("/v2.1/servers/detail", headers=DEMO)) == everything
    statuses = get("/v2.1/servers/detail", headers=DEMO).json()["servers"]
    assert [s["status"] for s in statuses] == ["BUILD", "ERROR", "ACTIVE"]
    assert "fault" in statuses[1]

    def listed(query: str, headers: Mapping[str, str] = DEMO) -> list[str]:
        return _ids(get(f"/v2.1/servers?{query}", headers=headers))

    assert listed("name=ALP") == [three["active"]]
    assert listed("status=ERROR&status=BUILD") == [three["building"], three["error"]]
    assert listed("status=active") == [three["active"]]
    assert listed("flavor=2") == [three["active"]]
    assert listed(f"image={IMAGE}") == everything
    assert listed("host=host1") == everything  # host is an admin's filter: ignored
    assert listed("all_tenants=1&host=host1", ADMIN) == [three["active"]]
    assert listed("status=NOPE") == []
    refused = get("/v2.1/servers?status=NOPE", headers={**DEMO, **V2_38})
    assert refused.status_code == 400 and "status" in refused.json()["badRequest"]["message"]

    page = get("/v2.1/servers?limit=2&name=a", headers=DEMO).json()
    assert [s["id"] for s in page["servers"]] == everything[:2]
    (following,) = page["servers_links"]
    assert following["rel"] == "next"
    assert f"marker={three['error']}" in following["href"] and "name=a" in following["href"]
    assert listed(f"limit=2&marker={three['error']}") == [three["active"]]
    assert "servers_links" not in get("/v2.1/servers", headers=DEMO).json()
    for bad in ("limit=-1", "limit=x", "limit=%C2%B2", f"marker={uuid.uuid4()}"):
        assert get(f"/v2.1/servers?{bad}", headers=DEMO).status_code == 400


def test_name_ip_and_changes_since_filters(world: World, three: dict[str, str]) -> None:
    def listed(query: str) -> list[str]:
        return _ids(world.client.get("/v2.1/servers", params=query, headers=DEMO))

    everything = [three["building"], three["error"], three["active"]]
    assert listed("name=^AL.*a$") == [three["active"]]  # a regular expression, any case
    assert listed("name=^(alpha|gamma)$") == [three["building"], three["active"]]
    assert listed("name=lph") == [three["active"]]
    # ip: IPv4 addresses, matched from their start; ip6: IPv6 ones.
    assert listed("ip=10.0.0.5") == [three["active"]]
    assert listed("ip=10.0") == [three["active"]]
    assert listed("ip=10.0.0.50") == []
    assert listed("ip=fd00") == []
    assert listed("ip6=fd00::5") == [three["active"]]
    assert listed("changes-since=2011-01-01T00:00:00Z") == everything
    assert listed("changes-since=2051-01-01T12:34:00Z") == []
    for bad in ("changes-since=2011/01/01", "name=(", "ip=["):
        refused = world.client.get("/v2.1/servers", params=bad, headers=DEMO)
        assert refused.status_code == 400, bad
        assert bad.split("=")[0] in refused.json()["badRequest"]["message"]


def test_changes_since_lists_only_what_changed_at_or_after_it(
    world: World, three: dict[str, str]
) -> None:
    # Each server's last change, set in its cell (the building one has none yet: its
    # BuildRequest's creation counts, which is now).
    for server, cell_uuid, when in (
        (three["active"], CELL1_UUID, dt.datetime(2040, 1, 1)),
        (three["error"], cells.CELL0_UUID, dt.datetime(2030, 1, 1)),
    ):
        with world.service.cells.database(world.cell(cell_uuid)).write() as conn:
            conn.execute(
                sa.update(instances_table)
                .where(instances_table.c.uuid == server)
                .values(updated_at=when)
            )

    def listed(since: str) -> list[str]:
        answer = world.client.get("/v2.1/servers", params={"changes-since": since}, headers=DEMO)
        return _ids(answer)

    assert listed("2039-12-31T23:59:59Z") == [three["active"]]
    assert listed("2040-01-01T00:00:00Z") == [three["active"]]  # at it counts
    assert listed("2040-01-01T00:00:01Z") == []
    assert listed("2029-12-31T23:59:59+00:00") == [three["error"], three["active"]]
    assert set(listed("2011-01-01T00:00:00Z")) == set(three.values())


def test_a_listing_shows_only_rows_of_servers_mapped_to_their_cell(
    world: World, three: dict[str, str]
) -> None:
    """With changes-since (what changed, read in each cell, then kept when mapped there) as
    without (the mapped uuids, asked of each cell): a row in a cell its server is not mapped
    to, or of no mapping at all, never shows; a status filter keeps its own."""
    stray = str(uuid.uuid4())
    with world.service.cells.database(world.cell(CELL1_UUID)).write() as conn:
        for server in (three["error"], three["building"], stray):
            instances.create(
                conn,
                {
                    "uuid": server,
                    "project_id": "demo",
                    "user_id": "alice",
                    "display_name": "stray",
                    "vm_state": "error",
                    "flavor": {"id": "1"},
                },
            )
    everything = [three["building"], three["error"], three["active"]]

    def listed(query: dict[str, str], headers: Mapping[str, str] = DEMO) -> list[str]:
        return _ids(world.client.get("/v2.1/servers", params=query, headers=headers))

    for since in ({}, {"changes-since": "2011-01-01T00:00:00Z"}):
        assert listed(since) == everything
        assert listed({**since, "status": "ERROR"}) == [three["error"]]
        assert listed({**since, "status": "ACTIVE"}) == [three["active"]]
        assert listed({**since, "status": "BUILD"}) == [three["building"]]
        assert listed({**since, "status": "ERROR", "all_tenants": "1"}, ADMIN) == [three["error"]]
        detail = world.client.get("/v2.1/servers/detail", params=since, headers=DEMO)
        assert [server["name"] for server in detail.json()["servers"]] == [
            "gamma", "beta", "alpha",
        ]  # fmt: skip


def test_a_poll_sees_a_server_built_while_it_reads_once(
    world: World, three: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """A poller's listing reads the BuildRequests, then the cells, then the mappings of what it
    found: a server built in between shows once, from its cell, not as a build as well."""
    read_builds = build_requests.list_build_requests

    def built_just_after(*args: Any, **kwargs: Any) -> Any:
        found = read_builds(*args, **kwargs)
        if any(row["instance_uuid"] == three["building"] for row in found):
            world.place(three["building"], CELL1_UUID, "host1", "active")
        return found

    monkeypatch.setattr(build_requests, "list_build_requests", built_just_after)
    answer = world.client.get(
        "/v2.1/servers/detail", params={"changes-since": "2011-01-01T00:00:00Z"}, headers=DEMO
    )
    shown = [(server["id"], server["status"]) for server in answer.json()["servers"]]
    assert shown == [
        (three["building"], "ACTIVE"), (three["error"], "ERROR"), (three["active"], "ACTIVE"),
    ]  # fmt: skip


def test_projects_see_only_their_own(world: World, three: dict[str, str]) -> None:
    mine = world.create(headers=OTHER, name="theirs")
    get = world.client.get
    assert _ids(get("/v2.1/servers", headers=OTHER)) == [mine]
    assert three["building"] not in _ids(get("/v2.1/servers/detail", headers=OTHER))
    for server_uuid in three.values():
        missing = get(f"/v2.1/servers/{server_uuid}", headers=OTHER)
        assert missing.status_code == 404
        assert missing.json()["itemNotFound"]["message"] == (
            f"Instance {server_uuid} could not be found."
        )
        assert world.client.delete(f"/v2.1/servers/{server_uuid}", headers=OTHER).status_code == 404
    assert get("/v2.1/servers?all_tenants=1", headers=OTHER).status_code == 403
    assert _ids(get("/v2.1/servers", headers=ADMIN)) == []  # the admin's own project
    assert len(_ids(get("/v2.1/servers?all_tenants=1", headers=ADMIN))) == 4
    assert _ids(get("/v2.1/servers?all_tenants=1&project_id=other", headers=ADMIN)) == [mine]
    assert get(f"/v2.1/servers/{mine}", headers=ADMIN).status_code == 200


@pytest.mark.parametrize("server_id", ["nope", "3f1d6c2a-5b7e-4e8a-9c0d-1a2b3c4d5e6f"])
def test_unknown_servers_are_not_found(world: World, server_id: str) -> None:
    assert world.client.get(f"/v2.1/servers/{server_id}", headers=DEMO).status_code == 404
    assert world.client.delete(f"/v2.1/servers/{server_id}", headers=DEMO).status_code == 404


# -- delete ----------------------------------------------------------------------------------


def test_deleting_a_build_request(world: World) -> None:
    server_uuid = world.create(hints={"group": world.group})
    assert world.client.delete(f"/v2.1/servers/{server_uuid}", headers=DEMO).status_code == 204
    with world.service.api_db.read() as conn:
        assert build_requests.get(conn, server_uuid) is None
        assert server_groups.members(conn, world.group) == [MEMBER]
    assert world.mapping(server_uuid)["queued_for_delete"]
    assert world.client.get(f"/v2.1/servers/{server_uuid}", headers=DEMO).status_code == 404
    assert _ids(world.client.get("/v2.1/servers", headers=DEMO)) == []
    assert world.client.delete(f"/v2.1/servers/{server_uuid}", headers=DEMO).status_code == 404


def test_deleting_a_server_on_a_host_casts_to_it(world: World, three: dict[str, str]) -> None:
    server_uuid = three["active"]
    assert world.client.delete(f"/v2.1/servers/{server_uuid}", headers=DEMO).status_code == 204
    assert world.cell_buses[CELL1_UUID].casts == [
        (
            "compute.host1",
            "terminate_instance",
            {"version": str(rpc.COMPUTE_HOST_VERSION), "instance_uuid": server_uuid},
        )
    ]
    assert world.instance(server_uuid, CELL1_UUID)["task_state"] == "deleting"
    shown = world.client.get(f"/v2.1/servers/{server_uuid}", headers=DEMO).json()["server"]
    assert shown["OS-EXT-STS:task_state"] == "deleting"
    # Deleting it again while the host deletes it answers 204, as Nova, and sends nothing.
    again = world.client.delete(f"/v2.1/servers/{server_uuid}", headers=DEMO)
    assert again.status_code == 204, again.text
    assert len(world.cell_buses[CELL1_UUID].casts) == 1
    assert world.mapping(server_uuid)["queued_for_delete"]

    # The host agent finishes the delete: the server is gone.
    with world.service.cells.database(world.cell(CELL1_UUID)).write() as conn:
        instances.mark_deleted(conn, server_uuid)
    assert world.client.get(f"/v2.1/servers/{server_uuid}", headers=DEMO).status_code == 404
    assert server_uuid not in _ids(world.client.get("/v2.1/servers", headers=DEMO))


def test_a_failed_terminate_cast_leaves_the_server_as_it_was(
    world: World, three: dict[str, str]
) -> None:
    world.cell_buses[CELL1_UUID] = RecordingBus(fail=True)
    answer = world.client.delete(f"/v2.1/servers/{three['active']}", headers=ADMIN)
    assert answer.status_code == 500
    assert world.instance(three["active"], CELL1_UUID)["task_state"] is None
    assert not world.mapping(three["active"])["queued_for_delete"]


def test_deleting_a_server_without_a_host_deletes_it_here(world: World) -> None:
    placement, network = FakePlacement(), FakeNetwork()
    world.service.placement = placement  # type: ignore[assignment]
    world.service.network = network  # type: ignore[assignment]
    failed = world.create(name="delta")
    world.place(failed, cells.CELL0_UUID, None, "error", _network_info(), fault="no host")
    assert world.client.delete(f"/v2.1/servers/{failed}", headers=DEMO).status_code == 204
    assert placement.released == [failed] and network.deleted == [PORT]
    assert world.instance(failed, cells.CELL0_UUID)["deleted"]
    assert world.mapping(failed)["queued_for_delete"]
    assert world.client.get(f"/v2.1/servers/{failed}", headers=DEMO).status_code == 404
    assert failed not in _ids(world.client.get("/v2.1/servers/detail", headers=DEMO))
    assert world.cell_buses == {}
