"""/servers/{id}/os-interface: shapes, body checks, states, policy and how the host's refusals
are answered (a fake host behind the RPC interface, a fake network service; the host's own work
is in ``tests/e2e/test_interfaces.py``)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest

from berth.common.timeutils import utcnow
from berth.compute.cells import Cell
from berth.compute.clients.network import NetworkError
from berth.compute.db import cells, instance_actions, instances, request_specs
from berth.compute.objects.build import PortEntry
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.rpc import InterfaceRefused, ServiceUnreachable
from berth.compute.service import ComputeService
from tests.conftest import MEMBER_ROLES
from tests.functional.compute.conftest import CELL1_UUID, client_for, version
from tests.unit.compute.factories import spec

SERVER = "5e7e0000-0000-4000-8000-000000000002"
OLD_PORT = "90470000-0000-4000-8000-00000000000a"
NEW_PORT = "90470000-0000-4000-8000-00000000000b"
NET = "4e700000-0000-4000-8000-000000000001"
UNKNOWN = "00000000-0000-4000-8000-000000000000"
OWNER = {"x-auth-token": "u:p", "x-roles": MEMBER_ROLES}
READER = {"x-auth-token": "r:p", "x-roles": "reader"}
STRANGER = {"x-auth-token": "s:q", "x-roles": MEMBER_ROLES}
PATH = f"/v2.1/servers/{SERVER}/os-interface"
BW_REQUEST = {
    "request_groups": [{"id": "g1", "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}}],
    "same_subtree": ["g1"],
}


def _port(port_id: str, device_id: str = "", **extra: Any) -> dict[str, Any]:
    return {
        "id": port_id, "network_id": NET, "mac_address": "fa:16:3e:00:00:0b", "status": "ACTIVE",
        "fixed_ips": [{"subnet_id": "sub", "ip_address": "10.0.0.9"}], "device_id": device_id,
        "binding:vnic_type": "normal", "resource_request": None, **extra,
    }  # fmt: skip


@dataclass
class FakeNetwork:
    by_id: dict[str, dict[str, Any]] = field(default_factory=dict)

    def port(self, port_id: str) -> dict[str, Any]:
        if port_id not in self.by_id:
            raise NetworkError(404, "PortNotFound", f"Port {port_id} could not be found.")
        return dict(self.by_id[port_id])

    def ports(self, device_id: str) -> list[dict[str, Any]]:
        return [p for p in self.by_id.values() if p["device_id"] == device_id]


@dataclass
class FakeHost:
    """The server's host: attaches ``NEW_PORT`` (made in the fake network, added to the
    server's network_info) and detaches, or refuses with ``refusal``."""

    service: ComputeService
    network: FakeNetwork
    refusal: Exception | None = None
    calls: list[tuple[str, tuple[Any, ...]]] = field(default_factory=list)

    def attach_interface(self, *args: Any) -> PortEntry:
        self.calls.append(("attach_interface", args))
        if self.refusal is not None:
            raise self.refusal
        self.network.by_id[NEW_PORT] = _port(NEW_PORT, SERVER, resource_request=BW_REQUEST)
        entry = PortEntry(NEW_PORT, NET, "fa:16:3e:00:00:0b")
        self._network_info(lambda info: [*info, entry.to_json()])
        return entry

    def detach_interface(self, server: str, port_id: str) -> None:
        self.calls.append(("detach_interface", (server, port_id)))
        if self.refusal is not None:
            raise self.refusal
        self.network.by_id[port_id]["device_id"] = ""
        self._network_info(lambda info: [e for e in info if e["port_id"] != port_id])

    def _network_info(self, change: Any) -> None:
        with self.service.cells.database(_cell1(self.service)).write() as conn:
            row = instances.get(conn, SERVER)
            assert row is not None
            instances.update(conn, SERVER, {"network_info": change(row["network_info"])})


def _cell1(service: ComputeService) -> Cell:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    return cell


@dataclass
class FakeCells:
    host_of: FakeHost

    def host(self, cell: Cell, host: str) -> FakeHost:
        assert host == "h1"
        return self.host_of

    def conductor(self, cell: Cell) -> Any:
        raise AssertionError("nothing goes to the conductor")


@pytest.fixture
def host(compute_service: ComputeService) -> FakeHost:
    network = FakeNetwork({OLD_PORT: _port(OLD_PORT, SERVER)})
    compute_service.network = network  # type: ignore[assignment]
    fake = FakeHost(compute_service, network)
    compute_service.cell_rpc = FakeCells(fake)  # type: ignore[assignment]
    with compute_service.cells.database(_cell1(compute_service)).write() as conn:
        instances.create(conn, {
            "uuid": SERVER, "project_id": "p", "user_id": "u", "display_name": "vm",
            "hostname": "vm", "host": "h1", "node": "h1", "vm_state": "active",
            "task_state": None, "power_state": 1, "image_ref": "img", "created_at": utcnow(),
            "flavor": {"id": "1", "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1},
            "network_info": [PortEntry(OLD_PORT, NET, "fa:16:3e:00:00:0a").to_json()],
        })  # fmt: skip
    with compute_service.api_db.write() as conn:
        cell = cells.get_cell(conn, CELL1_UUID)
        assert cell is not None
        cells.create_instance_mapping(conn, SERVER, "p", "u")
        cells.set_instance_cell(conn, SERVER, cell["id"])
        request_specs.save(conn, SERVER, spec(instance_uuids=(SERVER,)).to_json())
    return fake


def _client(service: ComputeService, headers: dict[str, str]) -> Iterator[httpx.Client]:
    with client_for(service, headers) as client:
        yield client


@pytest.fixture
def owner(compute_service: ComputeService, host: FakeHost) -> Iterator[httpx.Client]:
    yield from _client(compute_service, OWNER)


def _row(service: ComputeService) -> Any:
    with service.cells.database(_cell1(service)).read() as conn:
        return instances.get(conn, SERVER)


def _actions(service: ComputeService) -> list[str]:
    with service.cells.database(_cell1(service)).read() as conn:
        return [row["action"] for row in instance_actions.list_actions(conn, SERVER)]


def _spec_ports(service: ComputeService) -> list[str]:
    with service.api_db.read() as conn:
        document = request_specs.get(conn, SERVER)
    assert document is not None
    return [p.port_id for p in RequestSpec.from_json(document).ports]


def test_list_and_show_in_nova_shape(owner: httpx.Client) -> None:
    listed = owner.get(PATH)
    assert listed.status_code == 200, listed.text
    expected = {
        "port_state": "ACTIVE",
        "fixed_ips": [{"subnet_id": "sub", "ip_address": "10.0.0.9"}],
        "port_id": OLD_PORT,
        "net_id": NET,
        "mac_addr": "fa:16:3e:00:00:0b",
    }
    assert listed.json() == {"interfaceAttachments": [expected]}
    assert owner.get(f"{PATH}/{OLD_PORT}").json() == {"interfaceAttachment": expected}
    for missing in (UNKNOWN, NEW_PORT):
        shown = owner.get(f"{PATH}/{missing}")
        assert shown.status_code == 404
        assert shown.json()["itemNotFound"]["code"] == 404
    assert owner.get(f"/v2.1/servers/{UNKNOWN}/os-interface").status_code == 404


def test_attach_answers_the_port_and_keeps_the_spec(
    owner: httpx.Client, compute_service: ComputeService, host: FakeHost
) -> None:
    answer = owner.post(PATH, json={"interfaceAttachment": {"port_id": NEW_PORT}})
    assert answer.status_code == 200, answer.text
    assert answer.json()["interfaceAttachment"]["port_id"] == NEW_PORT
    assert host.calls == [("attach_interface", (SERVER, NEW_PORT, None, None))]
    assert _row(compute_service)["task_state"] is None
    assert _actions(compute_service) == ["attach_interface"]
    assert _spec_ports(compute_service) == [NEW_PORT]

    gone = owner.delete(f"{PATH}/{NEW_PORT}")
    assert gone.status_code == 202, gone.text
    assert host.calls[-1] == ("detach_interface", (SERVER, NEW_PORT))
    assert _spec_ports(compute_service) == []
    assert _row(compute_service)["task_state"] is None


def test_attach_by_network_with_an_address(owner: httpx.Client, host: FakeHost) -> None:
    body = {"interfaceAttachment": {"net_id": NET, "fixed_ips": [{"ip_address": "10.0.0.9"}]}}
    assert owner.post(PATH, json=body).status_code == 200
    assert host.calls == [("attach_interface", (SERVER, None, NET, "10.0.0.9"))]


@pytest.mark.parametrize(
    "attachment",
    [
        {"port_id": NEW_PORT, "net_id": NET},
        {"fixed_ips": [{"ip_address": "10.0.0.9"}]},
        {"port_id": "not-a-uuid"},
        {"net_id": NET, "fixed_ips": [{"ip_address": "10.0.0.999"}]},
        {"net_id": NET, "fixed_ips": [{"ip_address": "10.0.0.8"}, {"ip_address": "10.0.0.9"}]},
        {"port_id": NEW_PORT, "colour": "blue"},
        {"port_id": NEW_PORT, "tag": "eth1"},  # tag from 2.49 only
        {},
        [],
    ],
)
def test_a_malformed_attach_is_a_400(owner: httpx.Client, host: FakeHost, attachment: Any) -> None:
    answer = owner.post(PATH, json={"interfaceAttachment": attachment})
    assert answer.status_code == 400, answer.text
    assert "badRequest" in answer.json()
    assert host.calls == []


def test_a_tag_is_taken_from_2_49(owner: httpx.Client, host: FakeHost) -> None:
    body = {"interfaceAttachment": {"port_id": NEW_PORT, "tag": "eth1"}}
    assert owner.post(PATH, json=body, headers=version(49)).status_code == 200
    bad = {"interfaceAttachment": {"port_id": NEW_PORT, "tag": "a/b"}}
    assert owner.post(PATH, json=bad, headers=version(49)).status_code == 400


@pytest.mark.parametrize(
    ("refusal", "status", "key"),
    [
        (InterfaceRefused(409, "Port is still in use."), 409, "conflictingRequest"),
        (InterfaceRefused(404, "Port could not be found."), 404, "itemNotFound"),
        (InterfaceRefused(400, "no provider can serve it"), 400, "badRequest"),
        (ServiceUnreachable("Host h1 did not answer"), 503, "serviceUnavailable"),
    ],
)
def test_the_hosts_refusals(
    owner: httpx.Client,
    compute_service: ComputeService,
    host: FakeHost,
    refusal: Exception,
    status: int,
    key: str,
) -> None:
    host.refusal = refusal
    answer = owner.post(PATH, json={"interfaceAttachment": {"port_id": NEW_PORT}})
    assert answer.status_code == status, answer.text
    assert answer.json()[key]["message"] == str(refusal)
    assert _row(compute_service)["task_state"] is None
    assert _spec_ports(compute_service) == []
    detach = owner.delete(f"{PATH}/{OLD_PORT}")
    assert detach.status_code == status


def test_detach_of_a_port_not_the_servers_is_a_404(owner: httpx.Client, host: FakeHost) -> None:
    for port_id in (NEW_PORT, UNKNOWN):
        answer = owner.delete(f"{PATH}/{port_id}")
        assert answer.status_code == 404, answer.text
    assert host.calls == []


@pytest.mark.parametrize(
    ("vm_state", "task_state", "allowed"),
    [
        ("active", None, True),
        ("stopped", None, True),
        ("paused", None, True),
        ("error", None, False),
        ("suspended", None, False),
        ("active", "rebooting", False),
    ],
)
def test_the_states_that_allow_it(
    owner: httpx.Client,
    compute_service: ComputeService,
    host: FakeHost,
    vm_state: str,
    task_state: str | None,
    allowed: bool,
) -> None:
    with compute_service.cells.database(_cell1(compute_service)).write() as conn:
        instances.update(conn, SERVER, {"vm_state": vm_state, "task_state": task_state})
    attach = owner.post(PATH, json={"interfaceAttachment": {"port_id": NEW_PORT}})
    detach = owner.delete(f"{PATH}/{OLD_PORT}")
    if allowed:
        assert (attach.status_code, detach.status_code) == (200, 202)
    else:
        assert (attach.status_code, detach.status_code) == (409, 409), attach.text
        assert host.calls == []


def test_policy(compute_service: ComputeService, host: FakeHost) -> None:
    with client_for(compute_service, READER) as reader:
        assert reader.get(PATH).status_code == 200
        assert reader.get(f"{PATH}/{OLD_PORT}").status_code == 200
        body = {"interfaceAttachment": {"port_id": NEW_PORT}}
        assert reader.post(PATH, json=body).status_code == 403
        assert reader.delete(f"{PATH}/{OLD_PORT}").status_code == 403
    with client_for(compute_service, STRANGER) as stranger:
        assert stranger.get(PATH).status_code == 404
        assert stranger.get(f"{PATH}/{OLD_PORT}").status_code == 404
        assert stranger.post(PATH, json=body).status_code == 404
        assert stranger.delete(f"{PATH}/{OLD_PORT}").status_code == 404
    assert host.calls == []
    with client_for(compute_service) as admin:
        assert admin.post(PATH, json=body).status_code == 200
        assert admin.delete(f"{PATH}/{NEW_PORT}").status_code == 202
