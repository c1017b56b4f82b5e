"""The distributed layout end to end: a QoS-port boot that reschedules to an alternate, a boot in
each of two cells, deletes, and the failures it must survive (a scheduler that does not answer,
a super-conductor killed in the middle of builds, a compute agent that dies), each ending with a
clean audit. See ``tests/integration/cloud.py`` for the layout.
"""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator

import pytest
import yaml

from tests.integration.cloud import (
    ADMIN,
    COMPUTE,
    Cloud,
    distributed_cloud,
    make_public_network,
    needs_servers,
)

# One worker runs the module (scripts/test: --dist loadscope), on one layout: two layouts at once
# would share the broker's API virtual host, where each one's super-conductor and scheduler would
# take the other's messages.
pytestmark = needs_servers


@pytest.fixture(scope="module")
def cloud(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Cloud]:
    with distributed_cloud(tmp_path_factory.mktemp("distributed")) as started:
        yield started


@pytest.fixture(scope="module")
def public(cloud: Cloud) -> str:
    return make_public_network(cloud)


@pytest.fixture(scope="module")
def zones(cloud: Cloud) -> None:
    """A zone per cell (az1: c1-1, c1-2; az2: c2-1, c2-2), so a boot can choose its cell."""
    for zone, hosts in (("az1", ("c1-1", "c1-2")), ("az2", ("c2-1", "c2-2"))):
        aggregate = cloud.client.post(f"{cloud.compute}/os-aggregates", headers=COMPUTE, json={
            "aggregate": {"name": zone, "availability_zone": zone}}).json()["aggregate"]  # fmt: skip
        for host in hosts:
            cloud.client.post(f"{cloud.compute}/os-aggregates/{aggregate['id']}/action",
                              headers=COMPUTE, json={"add_host": {"host": host}}).raise_for_status()  # fmt: skip


def test_a_qos_port_boot_reschedules_within_its_cell_and_holds_its_bandwidth(
    cloud: Cloud, public: str
) -> None:
    policy = cloud.client.post(f"{cloud.network}/v2.0/qos/policies", headers=ADMIN,
                               json={"policy": {"name": "bw", "shared": True}}).json()["policy"]  # fmt: skip
    cloud.client.post(
        f"{cloud.network}/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules", headers=ADMIN,
        json={"minimum_bandwidth_rule": {"min_kbps": 1000, "direction": "egress"}},
    ).raise_for_status()  # fmt: skip
    port = cloud.client.post(f"{cloud.network}/v2.0/ports", headers=ADMIN, json={"port": {
        "network_id": public, "qos_policy_id": policy["id"], "name": "qos"}}).json()["port"]  # fmt: skip
    server_id = cloud.boot("qos", [{"port": port["id"]}])
    server = cloud.wait(server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    # Tried on "bad" first (most memory), failed there, rescheduled to an alternate of cell1.
    assert server["OS-EXT-SRV-ATTR:host"] in {"c1-1", "c1-2"}
    held = cloud.allocations(server_id)
    bandwidth = [rp for rp, a in held.items() if "NET_BW_EGR_KILOBIT_PER_SEC" in a["resources"]]
    assert len(bandwidth) == 1
    (bound,) = cloud.ports_of(server_id)
    assert bound["binding:host_id"] == server["OS-EXT-SRV-ATTR:host"]
    assert list(bound["binding:profile"]["allocation"].values()) == bandwidth
    cloud.delete(server_id)
    assert cloud.allocations(server_id) == {}
    left = cloud.client.get(f"{cloud.network}/v2.0/ports/{port['id']}", headers=ADMIN).json()[
        "port"
    ]
    assert (left["device_id"], left["binding:host_id"]) == ("", "")
    cloud.audit()


def test_a_boot_in_each_cell(cloud: Cloud, public: str, zones: None) -> None:
    in_cell1 = cloud.boot("one", [{"uuid": public}], availability_zone="az1")
    in_cell2 = cloud.boot("two", [{"uuid": public}], availability_zone="az2")
    first, second = cloud.wait(in_cell1), cloud.wait(in_cell2)
    assert first["status"] == second["status"] == "ACTIVE", (
        first.get("fault"),
        second.get("fault"),
    )
    assert first["OS-EXT-SRV-ATTR:host"] in {"c1-1", "c1-2"}
    assert second["OS-EXT-SRV-ATTR:host"] in {"c2-1", "c2-2"}
    for server_id in (in_cell1, in_cell2):
        cloud.delete(server_id)
        assert cloud.allocations(server_id) == {} and cloud.ports_of(server_id) == []
    cloud.audit()


def test_a_scheduler_that_does_not_answer_ends_the_build_holding_nothing(
    cloud: Cloud, public: str
) -> None:
    schedulers = cloud.pids("serve", "scheduler")
    assert len(schedulers) == 2  # the layout runs two copies; neither answers now
    for scheduler in schedulers:
        os.kill(scheduler, signal.SIGSTOP)
    try:
        server_id = cloud.boot("late", [{"uuid": public}])
        server = cloud.wait(server_id)
    finally:
        for scheduler in schedulers:
            os.kill(scheduler, signal.SIGCONT)
    assert server["status"] == "ERROR"
    assert "did not answer within 5 s" in server["fault"]["message"]
    # The scheduler takes the request after its deadline: it drops it, claims nothing.
    time.sleep(3)
    assert cloud.allocations(server_id) == {} and cloud.ports_of(server_id) == []
    cloud.delete(server_id)
    cloud.audit()


def test_a_killed_super_conductor_leaves_no_server_in_build(cloud: Cloud, public: str) -> None:
    servers = [cloud.boot(f"k{i}", [{"uuid": public}]) for i in range(6)]
    os.kill(cloud.pid("serve", "super-conductor"), signal.SIGKILL)
    # The other copy goes on with what the broker had not given the dead one yet; the launcher
    # starts the dead one again; recovery ends what it had taken and left half done.
    ended = [cloud.wait(server_id, timeout=90) for server_id in servers]
    assert {s["status"] for s in ended} <= {"ACTIVE", "ERROR"}
    for server_id in servers:
        cloud.delete(server_id)
    cloud.audit()


def test_a_super_conductor_stopped_with_sigterm_during_boots_leaves_none_in_build(
    cloud: Cloud, public: str
) -> None:
    servers = [cloud.boot(f"t{i}", [{"uuid": public}]) for i in range(6)]
    os.kill(cloud.pid("serve", "super-conductor"), signal.SIGTERM)
    # It finishes what it took within its grace period and exits; the launcher starts it again.
    ended = [cloud.wait(server_id, timeout=90) for server_id in servers]
    assert {s["status"] for s in ended} <= {"ACTIVE", "ERROR"}
    for server_id in servers:
        cloud.delete(server_id)
    cloud.audit()


def test_hosts_of_a_dead_agent_go_down_and_are_skipped(cloud: Cloud, public: str) -> None:
    before = cloud.boot("kept", [{"uuid": public}])
    kept = cloud.wait(before)
    assert kept["status"] == "ACTIVE"
    agent = cloud.pid("--fleet", str(cloud.data / "fleet-agent1.yaml"))
    hosts = {
        h["name"] for h in yaml.safe_load((cloud.data / "fleet-agent1.yaml").read_text())["hosts"]
    }
    os.kill(agent, signal.SIGSTOP)
    try:
        deadline = time.monotonic() + 30
        while True:
            services = cloud.client.get(f"{cloud.compute}/os-services", headers=COMPUTE).json()[
                "services"
            ]
            down = {s["host"] for s in services if s["state"] == "down"}
            if hosts <= down or time.monotonic() > deadline:
                break
            time.sleep(0.5)
        assert hosts <= down, (hosts, down)
        placed = [cloud.wait(cloud.boot(f"after{i}", [{"uuid": public}])) for i in range(3)]
        assert all(s["status"] == "ACTIVE" for s in placed), [s.get("fault") for s in placed]
        assert not {s["OS-EXT-SRV-ATTR:host"] for s in placed} & hosts
        again = cloud.client.get(f"{cloud.compute}/servers/{before}", headers=COMPUTE).json()
        assert again["server"]["status"] == "ACTIVE"
    finally:
        os.kill(agent, signal.SIGCONT)
    for server in placed:
        cloud.delete(server["id"])
    cloud.delete(before)
    cloud.audit()


def test_a_build_that_fails_on_every_host_gives_back_its_port_and_address(
    cloud: Cloud, public: str
) -> None:
    # A zone of the one host whose spawns always fail: every host tried fails.
    aggregate = cloud.client.post(f"{cloud.compute}/os-aggregates", headers=COMPUTE, json={
        "aggregate": {"name": "broken", "availability_zone": "broken"}}).json()["aggregate"]  # fmt: skip
    cloud.client.post(f"{cloud.compute}/os-aggregates/{aggregate['id']}/action",
                      headers=COMPUTE, json={"add_host": {"host": "bad"}}).raise_for_status()  # fmt: skip
    server_id = cloud.boot("doomed", [{"uuid": public}], availability_zone="broken")
    server = cloud.wait(server_id)
    assert server["status"] == "ERROR"
    assert "failed on every host tried" in server["fault"]["message"]
    assert cloud.allocations(server_id) == {} and cloud.ports_of(server_id) == []
    used = cloud.client.get(
        f"{cloud.network}/v2.0/network-ip-availabilities/{public}", headers=ADMIN
    ).json()["network_ip_availability"]["used_ips"]
    cloud.delete(server_id)
    after = cloud.client.get(
        f"{cloud.network}/v2.0/network-ip-availabilities/{public}", headers=ADMIN
    ).json()["network_ip_availability"]["used_ips"]
    assert used == after  # the failed build held no address even before its delete
    cloud.audit()


def test_simultaneous_boots_of_an_anti_affinity_group_never_share_a_host(
    cloud: Cloud, public: str, zones: None
) -> None:
    group = cloud.client.post(f"{cloud.compute}/os-server-groups", headers=COMPUTE, json={
        "server_group": {"name": "spread", "policy": "anti-affinity"}}).json()["server_group"]  # fmt: skip
    # Three at once into zone az2, which has two hosts: two land apart, the third has none.
    servers = [
        cloud.boot(
            f"spread{i}", [{"uuid": public}], {"group": group["id"]}, availability_zone="az2"
        )
        for i in range(3)
    ]
    ended = [cloud.wait(server_id) for server_id in servers]
    hosts = sorted(s["OS-EXT-SRV-ATTR:host"] for s in ended if s["status"] == "ACTIVE")
    assert hosts == ["c2-1", "c2-2"], [s.get("fault") for s in ended]
    for server_id in servers:
        cloud.delete(server_id)
    cloud.audit()
