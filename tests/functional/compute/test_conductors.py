"""The super-conductor, the cell conductor and the host agent, each alone: real API and cell
databases, fake Placement, network, scheduler and cells (the ``rpc`` interfaces they talk to)."""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from berth.common.db import Database
from berth.compute.cells import Cell
from berth.compute.clients.network import BindingRefused, NetworkError
from berth.compute.conductor.build import SuperConductor
from berth.compute.conductor.cell import CellConductor
from berth.compute.db import build_requests, cells, instances, request_specs
from berth.compute.host.agent import HostAgent, HostResources
from berth.compute.host.driver import FailurePlan, SimulatedDriver
from berth.compute.objects.build import BuildAttempt, PortEntry
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.rpc import CellConductorAPI, ComputeHostAPI, NoValidHost, ServiceUnreachable
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import CELL1_UUID
from tests.unit.compute.factories import spec

SERVER = "5e7e0000-0000-4000-8000-000000000001"
PORT = "90470000-0000-4000-8000-000000000001"


@dataclass
class FakePlacement:
    claims: dict[str, dict[str, Any]] = field(default_factory=dict)
    refuse: set[str] = field(default_factory=set)

    def claim(self, consumer: str, allocations: Mapping[str, Any], project: str, user: str) -> bool:
        if set(allocations) & self.refuse:
            return False
        self.claims[consumer] = dict(allocations)
        return True

    def release(self, consumer: str) -> None:
        self.claims.pop(consumer, None)


@dataclass
class FakeNetwork:
    """One user port; binding refused on the hosts in ``refuse``."""

    refuse: set[str] = field(default_factory=set)
    ports: dict[str, dict[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        self.ports[PORT] = {
            "id": PORT, "network_id": "net", "mac_address": "fa:16:3e:00:00:01",
            "fixed_ips": [{"subnet_id": "sub", "ip_address": "10.0.0.5"}], "device_id": "",
            "device_owner": "", "binding:host_id": "", "binding:profile": {},
        }  # fmt: skip

    def port(self, port_id: str) -> dict[str, Any]:
        if port_id not in self.ports:
            raise NetworkError(404, "PortNotFound", port_id)
        return dict(self.ports[port_id])

    def update_port(self, port_id: str, **attributes: Any) -> dict[str, Any]:
        self.port(port_id)
        self.ports[port_id].update(attributes)
        return self.port(port_id)

    def bind(self, port_id: str, host: str, allocation: Mapping[str, str] | None = None) -> None:
        if host in self.refuse:
            raise BindingRefused(409, "PortBindingError", f"{host} does not reach the segment")
        self.update_port(
            port_id,
            **{"binding:host_id": host, "binding:profile": {"allocation": dict(allocation or {})}},
        )

    def unbind(self, port_id: str) -> None:
        self.update_port(port_id, **{"binding:host_id": "", "binding:profile": {}})

    def activate(self, port_id: str, host: str) -> None:
        # Only an inactive binding can be activated; these ports have none (a live migration's).
        if self.ports[port_id]["binding:host_id"] == host:
            raise NetworkError(409, "PortBindingAlreadyActive", f"{port_id} on {host}")
        raise NetworkError(404, "PortBindingNotFound", f"{port_id} on {host}")

    def subnets(self, **filters: str) -> list[dict[str, Any]]:
        return [{"id": "sub", "segment_id": None}]

    def network(self, network_id: str) -> dict[str, Any]:
        return {"id": network_id, "name": "private"}

    def delete_port(self, port_id: str) -> None:
        self.ports.pop(port_id, None)


@dataclass
class FakeScheduler:
    answer: list[list[Selection]] | Exception

    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        if isinstance(self.answer, Exception):
            raise self.answer
        return self.answer


@dataclass
class Sent:
    """The cells as a conductor reaches them: every message, in order, typed."""

    messages: list[tuple[str, str, tuple[Any, ...]]] = field(default_factory=list)

    def conductor(self, cell: Cell) -> CellConductorAPI:
        return _To(self, f"conductor of {cell.name}")  # type: ignore[return-value]

    def host(self, cell: Cell, host: str) -> ComputeHostAPI:
        return _To(self, host)  # type: ignore[return-value]


@dataclass
class _To:
    sent: Sent
    where: str

    def __getattr__(self, method: str) -> Any:
        return lambda *args: self.sent.messages.append((self.where, method, args))


def selection(host: str) -> Selection:
    return Selection(
        SERVER, host, host, f"rp-{host}", CELL1_UUID,
        {"allocations": {f"rp-{host}": {"resources": {"VCPU": 1}}}}, "1.36", {}, {}
    )  # fmt: skip


@pytest.fixture
def world(compute_service: ComputeService, cell_db: Database) -> ComputeService:
    with compute_service.api_db.write() as conn:
        cells.create_cell(conn, cells.CELL0_UUID, "cell0", cell_db.url, "none://")
    return compute_service


def _request_build(service: ComputeService, networks: Any) -> None:
    instance = {
        "uuid": SERVER, "name": "vm", "project_id": "p", "user_id": "u",
        "flavor": {"id": "1", "name": "m1", "vcpus": 1, "memory_mb": 512, "root_gb": 1},
        "image": {"id": "img"}, "networks": networks,
    }  # fmt: skip
    with service.api_db.write() as conn:
        build_requests.create(conn, SERVER, "p", "u", instance)
        request_specs.save(
            conn, SERVER, dataclasses.replace(spec(), instance_uuids=(SERVER,)).to_json()
        )
        cells.create_instance_mapping(conn, SERVER, "p", "u")


def _instance(service: ComputeService, cell_uuid: str) -> Any:
    cell = service.cells.cell(cell_uuid)
    assert cell is not None
    with service.cells.database(cell).read() as conn:
        return instances.get(conn, SERVER), instances.latest_fault(conn, SERVER)


def _conductor(
    service: ComputeService,
    scheduler: Any,
    network: FakeNetwork,
    placement: FakePlacement,
    sent: Sent,
) -> SuperConductor:
    return SuperConductor(service.api_db, service.cells, placement, network, scheduler, sent)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    "refusal",
    [
        ServiceUnreachable("The scheduler did not answer within 60 s."),
        NoValidHost("No valid host was found. 0/3 hosts are available"),
    ],
)
def test_a_build_the_scheduler_cannot_place_ends_in_cell0_holding_nothing(
    world: ComputeService, refusal: Exception
) -> None:
    _request_build(world, [{"port": PORT}])
    placement, network, sent = FakePlacement(), FakeNetwork(), Sent()
    _conductor(world, FakeScheduler(refusal), network, placement, sent).build_instances(
        [SERVER], "req"
    )
    row, fault = _instance(world, cells.CELL0_UUID)
    assert row["vm_state"] == "error" and fault["message"] == str(refusal)
    with world.api_db.read() as conn:
        assert build_requests.get(conn, SERVER) is None
        assert cells.get_instance_mapping(conn, SERVER)["cell_id"] is not None
    assert placement.claims == {} and sent.messages == []
    assert network.ports[PORT]["device_id"] == "" and network.ports[PORT]["binding:host_id"] == ""
    assert _spec_ports(world) == [PORT]  # the spec as it was scheduled, saved as it is buried


def _spec_ports(service: ComputeService) -> list[str]:
    with service.api_db.read() as conn:
        document = request_specs.get(conn, SERVER)
    assert document is not None
    return [port.port_id for port in RequestSpec.from_json(document).ports]


def test_a_refused_binding_moves_the_build_to_the_next_alternate(world: ComputeService) -> None:
    _request_build(world, [{"port": PORT}])
    placement, network, sent = FakePlacement(), FakeNetwork(refuse={"h1"}), Sent()
    chosen = [selection("h1"), selection("h2"), selection("h3")]
    placement.claim(SERVER, chosen[0].allocations, "p", "u")  # the scheduler claimed the first
    _conductor(world, FakeScheduler([chosen]), network, placement, sent).build_instances(
        [SERVER], "req"
    )
    assert placement.claims == {SERVER: chosen[1].allocations}
    assert network.ports[PORT]["binding:host_id"] == "h2"
    ((where, method, (uuid, alternates, attempts)),) = sent.messages
    assert (where, method, uuid) == ("h2", "build_and_run_instance", SERVER)
    # The port asks nothing of Placement: its request groups map to no provider.
    assert alternates == [dataclasses.replace(chosen[2], port_allocations={PORT: {}})]
    assert attempts == [BuildAttempt("h1", "h1 does not reach the segment")]
    row, _ = _instance(world, CELL1_UUID)
    assert (row["host"], row["vm_state"], row["task_state"]) == ("h2", "building", "spawning")
    assert [PortEntry.from_json(e).port_id for e in row["network_info"]] == [PORT]
    assert _spec_ports(world) == [PORT]  # saved with the Instance's mapping, for later moves


def _building(service: ComputeService, host: str, network_info: list[dict[str, Any]]) -> Cell:
    cell = service.cells.cell(CELL1_UUID)
    assert cell is not None
    with service.cells.database(cell).write() as conn:
        instances.create(conn, {
            "uuid": SERVER, "project_id": "p", "user_id": "u", "display_name": "vm",
            "hostname": "vm", "host": host, "node": host, "vm_state": "building",
            "task_state": "spawning", "power_state": 0, "flavor": {}, "image_ref": "img",
            "network_info": network_info,
        })  # fmt: skip
    return cell


def test_the_cell_conductor_claims_binds_and_casts_to_the_next_alternate(
    world: ComputeService,
) -> None:
    entry = PortEntry(PORT, "net", "fa:16:3e:00:00:01")
    cell = _building(world, "h1", [entry.to_json()])
    placement, network, sent = FakePlacement(refuse={"rp-h2"}), FakeNetwork(), Sent()
    conductor = CellConductor(
        cell, world.cells.database(cell), world.api_db, placement, network, sent
    )  # type: ignore[arg-type]
    conductor.reschedule(SERVER, "h1", "spawn failed", [selection("h2"), selection("h3")], [])
    assert placement.claims == {SERVER: selection("h3").allocations}
    ((where, _, (_, alternates, attempts)),) = sent.messages
    assert where == "h3" and alternates == []
    assert attempts == [
        BuildAttempt("h1", "spawn failed"),
        BuildAttempt("h2", "its resources were claimed by another server"),
    ]


def test_when_no_alternate_is_left_the_server_gives_everything_back(world: ComputeService) -> None:
    made = PortEntry(PORT, "net", "fa:16:3e:00:00:01", created_by_compute=True)
    cell = _building(world, "h1", [made.to_json()])
    placement, network, sent = FakePlacement(), FakeNetwork(), Sent()
    placement.claim(SERVER, selection("h1").allocations, "p", "u")
    conductor = CellConductor(
        cell, world.cells.database(cell), world.api_db, placement, network, sent
    )  # type: ignore[arg-type]
    conductor.reschedule(SERVER, "h1", "spawn failed", [], [BuildAttempt("h0", "no room")])
    row, fault = _instance(world, CELL1_UUID)
    assert (row["vm_state"], row["host"], row["network_info"]) == ("error", None, [])
    assert fault["message"].startswith("Build failed on every host tried (2): h0: no room; h1:")
    assert placement.claims == {} and PORT not in network.ports and sent.messages == []


def test_a_failed_spawn_is_handed_to_the_cell_conductor(world: ComputeService) -> None:
    cell = _building(world, "h1", [PortEntry(PORT, "net", "fa:16:3e:00:00:01").to_json()])
    sent = Sent()
    agent = HostAgent(
        "h1", HostResources(4, 4096, 40), world.cells.database(cell), FakePlacement(),  # type: ignore[arg-type]
        FakeNetwork(), SimulatedDriver("h1", failures=FailurePlan(always=True)), sent.conductor(cell),  # type: ignore[arg-type]
    )  # fmt: skip
    agent.build_and_run_instance(SERVER, [selection("h2")], [])
    ((where, method, args),) = sent.messages
    assert (where, method) == ("conductor of cell1", "reschedule")
    assert args[:2] == (SERVER, "h1") and args[3:] == ([selection("h2")], [])


def test_a_spawned_server_is_active_without_activating_its_bound_port(
    world: ComputeService,
) -> None:
    """The port is bound here already (active): activating it again would be a 409."""
    cell = _building(world, "h1", [PortEntry(PORT, "net", "fa:16:3e:00:00:01").to_json()])
    network, sent = FakeNetwork(), Sent()
    network.bind(PORT, "h1")
    agent = HostAgent(
        "h1", HostResources(4, 4096, 40), world.cells.database(cell), FakePlacement(),  # type: ignore[arg-type]
        network, SimulatedDriver("h1"), sent.conductor(cell),  # type: ignore[arg-type]
    )  # fmt: skip
    agent.build_and_run_instance(SERVER, [], [])
    row, _ = _instance(world, CELL1_UUID)
    assert (row["vm_state"], row["task_state"], row["power_state"]) == ("active", None, 1)
    assert sent.messages == []
    assert network.ports[PORT]["binding:host_id"] == "h1"
