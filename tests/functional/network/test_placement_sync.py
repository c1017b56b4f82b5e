"""The reporter puts agents' and routed segments' providers into a real Placement, in process."""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import sqlalchemy as sa

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.network import networks
from berth.network.model import OVS_AGENT as OVS
from berth.network.model import SRIOV_AGENT as SRIOV
from berth.network.placement_sync import PlacementSync
from berth.network.reporter import PlacementReporter
from berth.network.reporting import provider_uuid
from berth.network.store import agents as agent_store
from berth.network.store import migrate
from berth.network.store.schema import agents, ip_allocations, ports, subnets
from berth.network.store.schema import networks as networks_table
from berth.placement.service import PlacementService
from tests.conftest import wsgi_client

OVS_CONFIG = {
    "bridge_mappings": {"public": "br-ex"},
    "resource_provider_bandwidths": {"br-ex": {"egress": 10_000, "ingress": 10_000}},
    "resource_provider_packet_processing_without_direction": 1000,
}
SRIOV_CONFIG = {
    "device_mappings": {"physnet1": ["ens1f0"]},
    "resource_provider_bandwidths": {"ens1f0": {"egress": 25_000, "ingress": 25_000}},
}


@pytest.fixture
def placement(placement_service: PlacementService) -> Iterator[httpx.Client]:
    with wsgi_client(placement_service) as client:
        client.headers.update({"x-auth-token": "admin", "openstack-api-version": "placement 1.39"})
        yield client


@pytest.fixture
def network_db(tmp_path: Path) -> Iterator[Database]:
    db = Database(f"sqlite:///{tmp_path / 'network.db'}")
    migrate.sync(db)
    yield db
    db.dispose()


def _compute_node(placement: httpx.Client, host: str) -> str:
    node = str(uuid.uuid4())
    assert (
        placement.post("/resource_providers", json={"name": host, "uuid": node}).status_code == 200
    )
    return node


def _agent(db: Database, kind: str, host: str, config: dict[str, object]) -> None:
    now = utcnow()
    with db.write() as conn:
        conn.execute(
            agents.insert().values(
                id=str(uuid.uuid4()), agent_type=kind, binary="sim", topic="N/A", host=host,
                admin_state_up=True, description="", configurations=config, started_at=now,
                heartbeat_at=now, created_at=now,
            )
        )  # fmt: skip


def _configure(db: Database, host: str, kind: str, config: dict[str, object]) -> None:
    with db.write() as conn:
        conn.execute(
            agents.update()
            .where(agents.c.host == host, agents.c.agent_type == kind)
            .values(configurations=config)
        )


def test_agents_providers_appear_under_their_compute_nodes_and_follow_changes(
    placement: httpx.Client, network_db: Database
) -> None:
    node = _compute_node(placement, "cn1")
    _agent(network_db, OVS, "cn1", OVS_CONFIG)
    _agent(network_db, SRIOV, "cn1", SRIOV_CONFIG)
    _agent(network_db, OVS, "cn9", OVS_CONFIG)  # no compute node yet
    reporter = PlacementReporter(network_db, PlacementSync(placement))
    report = reporter.run_once()
    assert list(report.problems) == ["cn9"]
    tree = placement.get("/resource_providers", params={"in_tree": node}).json()
    names = sorted(p["name"] for p in tree["resource_providers"])
    assert names == [
        "cn1", "cn1:NIC Switch agent", "cn1:NIC Switch agent:ens1f0",
        "cn1:Open vSwitch agent", "cn1:Open vSwitch agent:br-ex",
    ]  # fmt: skip
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    inventory = placement.get(f"/resource_providers/{bridge}/inventories").json()["inventories"]
    assert inventory["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 10_000
    traits = placement.get(f"/resource_providers/{bridge}/traits").json()["traits"]
    assert sorted(traits) == ["CUSTOM_PHYSNET_PUBLIC", "CUSTOM_VNIC_TYPE_NORMAL"]
    with network_db.read() as conn:
        synced = dict(conn.execute(sa.select(agents.c.host, agents.c.resources_synced)).all())
    assert synced == {"cn1": True, "cn9": False}

    # A bandwidth request of a port finds exactly the bridge.
    found = placement.get(
        "/allocation_candidates",
        params={
            "resources_bw": "NET_BW_EGR_KILOBIT_PER_SEC:1000",
            "required_bw": "CUSTOM_PHYSNET_PUBLIC,CUSTOM_VNIC_TYPE_NORMAL",
        },
    ).json()
    assert [list(r["allocations"]) for r in found["allocation_requests"]] == [[bridge]]

    # Claim some bandwidth, then grow the bridge: the allocation stays.
    consumer = str(uuid.uuid4())
    claim = {
        "allocations": {bridge: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 8_000}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE",
    }  # fmt: skip
    assert placement.put(f"/allocations/{consumer}", json=claim).status_code == 204
    bigger = {
        **OVS_CONFIG,
        "resource_provider_bandwidths": {"br-ex": {"egress": 20_000, "ingress": 10_000}},
    }
    _configure(network_db, "cn1", OVS, bigger)
    assert reporter.run_once().problems.keys() == {"cn9"}
    inventory = placement.get(f"/resource_providers/{bridge}/inventories").json()["inventories"]
    assert inventory["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 20_000
    assert placement.get(f"/allocations/{consumer}").json()["allocations"][bridge]

    # Shrinking below what is allocated is refused and reported; the inventory stays.
    smaller = {
        **OVS_CONFIG,
        "resource_provider_bandwidths": {"br-ex": {"egress": 5_000, "ingress": 10_000}},
    }
    _configure(network_db, "cn1", OVS, smaller)
    problems = reporter.run_once().problems
    assert problems["cn1"] == [
        "the new inventory of cn1:Open vSwitch agent:br-ex refused: "
        "NET_BW_EGR_KILOBIT_PER_SEC would hold 5000, but 8000 is allocated"
    ]
    inventory = placement.get(f"/resource_providers/{bridge}/inventories").json()["inventories"]
    assert inventory["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 20_000
    with network_db.read() as conn:
        assert (
            conn.scalar(sa.select(agents.c.resources_synced).where(agents.c.host == "cn1")) is False
        )


class _Counting(httpx.Client):
    """The Placement client, noting every call and what it reads of single providers."""

    def __init__(self, inner: httpx.Client, headers: dict[str, str] | None = None) -> None:
        self.inner = inner
        self.extra = headers or {}
        self.calls: list[str] = []
        self.provider_reads: list[str] = []

    def request(self, method: str, url: object, **kwargs: object) -> httpx.Response:  # type: ignore[override]
        self.calls.append(f"{method} {url}")
        if method == "GET" and str(url).count("/") > 2:
            self.provider_reads.append(str(url))
        headers = {**dict(kwargs.pop("headers", None) or {}), **self.extra}  # type: ignore[call-overload]
        return self.inner.request(method, url, headers=headers, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("roles", "reshaper"), [("admin,service", True), ("admin", False)], ids=["service", "admin"]
)
def test_new_providers_are_made_without_reading_them_and_inventoried_in_batches(
    placement: httpx.Client, network_db: Database, roles: str, reshaper: bool
) -> None:
    # Placement gives the reshaper to the service role only: without it, one PUT each.
    hosts = [f"cn{i}" for i in range(1, 4)]
    for host in hosts:
        _compute_node(placement, host)
        _agent(network_db, OVS, host, OVS_CONFIG)
    counting = _Counting(placement, {"x-roles": roles})
    assert PlacementReporter(network_db, PlacementSync(counting)).run_once().problems == {}
    assert counting.provider_reads == []
    puts = [c for c in counting.calls if c.startswith("PUT") and c.endswith("/inventories")]
    assert counting.calls.count("POST /reshaper") == 1
    assert len(puts) == (0 if reshaper else 6)  # each host's bridge and agent (packet rate)
    for host in hosts:
        bridge = provider_uuid(f"{host}:Open vSwitch agent:br-ex")
        inventory = placement.get(f"/resource_providers/{bridge}/inventories").json()
        assert inventory["inventories"]["NET_BW_IGR_KILOBIT_PER_SEC"]["total"] == 10_000
    # What the sync recorded is each provider's generation now: a restart reads nothing.
    counting.calls.clear()
    restarted = PlacementReporter(network_db, PlacementSync(counting))
    assert restarted.run_once().problems == {}
    assert counting.provider_reads == []


def test_a_restarted_reporter_reads_only_providers_written_since(
    placement: httpx.Client, network_db: Database
) -> None:
    for host in ("cn1", "cn2"):
        _compute_node(placement, host)
        _agent(network_db, OVS, host, OVS_CONFIG)
    assert PlacementReporter(network_db, PlacementSync(placement)).run_once().problems == {}
    # An allocation moves cn2's bridge's generation on; nothing else changes.
    bridge2 = provider_uuid("cn2:Open vSwitch agent:br-ex")
    claim = {
        "allocations": {bridge2: {"resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 100}}},
        "project_id": "p", "user_id": "u", "consumer_generation": None, "consumer_type": "INSTANCE",
    }  # fmt: skip
    assert placement.put(f"/allocations/{uuid.uuid4()}", json=claim).status_code == 204

    counting = _Counting(placement)
    restarted = PlacementReporter(network_db, PlacementSync(counting))
    assert restarted.run_once().problems == {}
    assert counting.provider_reads
    assert {url.split("/")[2] for url in counting.provider_reads} == {bridge2}

    # A changed configuration is applied although its provider did not move.
    counting.provider_reads.clear()
    bigger = {
        **OVS_CONFIG,
        "resource_provider_bandwidths": {"br-ex": {"egress": 20_000, "ingress": 10_000}},
    }
    _configure(network_db, "cn1", OVS, bigger)
    again = PlacementReporter(network_db, PlacementSync(counting))
    assert again.run_once().problems == {}
    bridge1 = provider_uuid("cn1:Open vSwitch agent:br-ex")
    inventory = placement.get(f"/resource_providers/{bridge1}/inventories").json()["inventories"]
    assert inventory["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 20_000
    assert {url.split("/")[2] for url in counting.provider_reads} == {bridge1}


def test_a_removed_device_loses_its_provider(placement: httpx.Client, network_db: Database) -> None:
    _compute_node(placement, "cn1")
    two = {
        "device_mappings": {"physnet1": ["ens1f0", "ens1f1"]},
        "resource_provider_bandwidths": {"ens1f0": {"egress": 1}, "ens1f1": {"egress": 1}},
    }
    _agent(network_db, SRIOV, "cn1", two)
    reporter = PlacementReporter(network_db, PlacementSync(placement))
    assert reporter.run_once().problems == {}
    gone = provider_uuid("cn1:NIC Switch agent:ens1f1")
    assert placement.get(f"/resource_providers/{gone}").status_code == 200
    one = {
        "device_mappings": {"physnet1": ["ens1f0"]},
        "resource_provider_bandwidths": {"ens1f0": {"egress": 1}},
    }
    _configure(network_db, "cn1", SRIOV, one)
    assert reporter.run_once().problems == {}
    assert placement.get(f"/resource_providers/{gone}").status_code == 404


def test_routed_segments_become_providers_and_host_aggregates(
    placement: httpx.Client, network_db: Database
) -> None:
    node1, node2 = _compute_node(placement, "cn1"), _compute_node(placement, "cn2")
    _agent(network_db, OVS, "cn1", {"bridge_mappings": {"rack1": "br-1"}})
    _agent(network_db, OVS, "cn2", {"bridge_mappings": {"rack2": "br-2"}})
    now = utcnow()
    with network_db.write() as conn:
        conn.execute(
            networks_table.insert().values(
                id="n1", project_id="p", name="routed", description="", admin_state_up=True,
                status="ACTIVE", mtu=1500, created_at=now,
            )
        )  # fmt: skip
        seg1 = networks.add_segment(conn, "n1", "vlan", "rack1", 10)
        seg2 = networks.add_segment(conn, "n1", "vlan", "rack2", 10)
        for sid, segment, cidr, pool in (
            ("sub1", seg1, "10.0.1.0/24", [{"start": "10.0.1.2", "end": "10.0.1.254"}]),
            ("sub2", seg2, "10.0.2.0/29", [{"start": "10.0.2.2", "end": "10.0.2.6"}]),
        ):
            conn.execute(
                subnets.insert().values(
                    id=sid, network_id="n1", segment_id=segment, project_id="p", name="", description="",
                    ip_version=4, cidr=cidr, gateway_ip=None, allocation_pools=pool, dns_nameservers=[],
                    host_routes=[], enable_dhcp=False, created_at=now,
                )
            )  # fmt: skip
        conn.execute(
            ports.insert().values(
                id="port1", network_id="n1", project_id="p", name="", description="",
                mac_address="fa:16:3e:00:00:01", admin_state_up=True, status="DOWN", device_id="",
                device_owner="", ip_allocation="immediate", binding_profile={}, binding_vif_details={},
                created_at=now,
            )
        )  # fmt: skip
        conn.execute(
            ip_allocations.insert().values(
                port_id="port1", subnet_id="sub2", network_id="n1", ip_address="10.0.2.2"
            )
        )
    reporter = PlacementReporter(network_db, PlacementSync(placement))
    assert reporter.run_once().problems == {}
    inventory = placement.get(f"/resource_providers/{seg2}/inventories").json()["inventories"]
    assert (inventory["IPV4_ADDRESS"]["total"], inventory["IPV4_ADDRESS"]["reserved"]) == (5, 1)
    assert placement.get(f"/resource_providers/{node1}/aggregates").json()["aggregates"] == [seg1]
    assert placement.get(f"/resource_providers/{node2}/aggregates").json()["aggregates"] == [seg2]
    # A scheduler limiting a port to the hosts of segment 2 finds only cn2.
    found = placement.get(
        "/allocation_candidates", params={"resources": "IPV4_ADDRESS:1", "member_of": seg2}
    ).json()
    assert [list(r["allocations"]) for r in found["allocation_requests"]] == [[seg2]]

    # cn1's agent now reaches rack2 instead: its aggregates follow; a segment that goes goes.
    _configure(network_db, "cn1", OVS, {"bridge_mappings": {"rack2": "br-1"}})
    with network_db.write() as conn:
        conn.execute(subnets.delete().where(subnets.c.id == "sub1"))
        networks.store.delete_segment(conn, seg1)
    assert reporter.run_once().problems == {}
    assert placement.get(f"/resource_providers/{node1}/aggregates").json()["aggregates"] == [seg2]
    assert placement.get(f"/resource_providers/{seg1}").status_code == 404


def test_a_pass_with_nothing_changed_asks_placement_nothing(
    placement: httpx.Client, network_db: Database
) -> None:
    for host in ("cn1", "cn2"):
        _compute_node(placement, host)
        _agent(network_db, OVS, host, OVS_CONFIG)
    counting = _Counting(placement)
    reporter = PlacementReporter(network_db, PlacementSync(counting))
    assert reporter.run_once().problems == {}
    # A heartbeat: the same agents and segments, so no pass is made.
    counting.calls.clear()
    with network_db.write() as conn:
        ids = list(conn.scalars(sa.select(agents.c.id)))
        agent_store.heartbeat(conn, ids, utcnow())
    assert reporter.run_once().problems == {}
    assert counting.calls == []
    # A changed configuration is applied.
    bandwidths = {"br-ex": {"egress": 5_000, "ingress": 5_000}}
    _configure(network_db, "cn1", OVS, {**OVS_CONFIG, "resource_provider_bandwidths": bandwidths})
    assert reporter.run_once().problems == {}
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    inventory = placement.get(f"/resource_providers/{bridge}/inventories").json()
    assert inventory["inventories"]["NET_BW_EGR_KILOBIT_PER_SEC"]["total"] == 5_000
