"""A port create answers with the port as its write made it (its row, with the table's defaults
where the create says nothing, and its addresses in the order taken), reading back only its
security groups: the same answer as reading the port back. On every database backend."""

from __future__ import annotations

from typing import Any

import httpx

from berth.common.db import Database
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import post_made, statements_run, transactions_begun


def _dual_stack(client: httpx.Client, **network: Any) -> dict[str, Any]:
    """A network with an IPv4 subnet and an auto-addressed (SLAAC) IPv6 one."""
    net = post_made(client, "/v2.0/networks", "network", **network)
    v4 = post_made(client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=4,
                   cidr="10.0.0.0/24")  # fmt: skip
    v6 = post_made(client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=6,
                   cidr="2001:db8:1::/64", ipv6_address_mode="slaac", ipv6_ra_mode="slaac",
                   gateway_ip=None)  # fmt: skip
    return {"network": net, "v4": v4, "v6": v6}


def _read_back(client: httpx.Client, port: dict[str, Any]) -> dict[str, Any]:
    return client.get(f"/v2.0/ports/{port['id']}").json()["port"]  # type: ignore[no-any-return]


def test_a_created_port_s_answer_is_the_port_read_back(
    network_db: Database, network_client: httpx.Client
) -> None:
    made = _dual_stack(network_client)
    net, v4 = made["network"], made["v4"]
    group = post_made(network_client, "/v2.0/security-groups", "security_group", name="web")
    with statements_run(network_db) as statements:
        plain = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert plain == _read_back(network_client, plain)
    assert [ip["subnet_id"] for ip in plain["fixed_ips"]] == [made["v6"]["id"], v4["id"]]
    assert len(plain["security_groups"]) == 1 and plain["revision_number"] == 0
    # The port, its addresses and its groups are not read back (the default group's join
    # returns the group, where the database returns what an INSERT wrote).
    read_back = ("WHERE ports.id =", "WHERE ip_allocations.port_id IN")
    assert not any(where in s for s in statements for where in read_back), statements
    groups_read = 0 if network_db.engine.dialect.insert_returning else 1
    assert sum("FROM port_security_groups" in s for s in statements) == groups_read, statements
    # The network's row is read once (ahead of the write), its check and the view alike.
    assert sum(s.startswith("SELECT networks.id") for s in statements) == 1, statements
    said = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"], name="eth1",
                     description="said", admin_state_up=False, device_id="vm1",
                     device_owner="compute:nova", mac_address="FA:16:3E:00:00:01",
                     fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.0.0.50"},
                                {"subnet_id": v4["id"]}],
                     security_groups=[group["id"]],
                     **{"binding:vnic_type": "direct"})  # fmt: skip
    assert said == _read_back(network_client, said)
    assert said["mac_address"] == "fa:16:3e:00:00:01"
    assert [ip["ip_address"] for ip in said["fixed_ips"]] == ["10.0.0.50", "10.0.0.3"]
    unsecured = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"],
                          port_security_enabled=False, fixed_ips=[])  # fmt: skip
    assert unsecured == _read_back(network_client, unsecured)
    assert (unsecured["security_groups"], unsecured["fixed_ips"]) == ([], [])


def test_a_bulk_create_and_a_member_s_ports_answer_as_read_back(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    made = _dual_stack(network_client, shared=True)
    net = made["network"]
    answer = network_client.post("/v2.0/ports", json={"ports": [
        {"network_id": net["id"], "name": "one"}, {"network_id": net["id"], "name": "two"},
    ]})  # fmt: skip
    assert answer.status_code == 201, answer.text
    for port in answer.json()["ports"]:
        assert port == _read_back(network_client, port)
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        mine = post_made(alice, "/v2.0/ports", "port", network_id=net["id"])
        assert mine == _read_back(alice, mine)
        assert "binding:host_id" not in mine and mine["project_id"] == "alice"


def test_a_port_bound_at_its_create_is_read_back(network_client: httpx.Client) -> None:
    made = _dual_stack(
        network_client,
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )
    post_made(network_client, "/v2.0/agents", "agent", agent_type="Open vSwitch agent",
              host="cn1", binary="sim", topic="N/A",
              configurations={"bridge_mappings": {"public": "br-ex"}})  # fmt: skip
    bound = post_made(network_client, "/v2.0/ports", "port", network_id=made["network"]["id"],
                      **{"binding:host_id": "cn1"})  # fmt: skip
    assert bound["binding:vif_type"] == "ovs" and bound["status"] == "ACTIVE"
    assert bound == _read_back(network_client, bound)


def test_a_port_s_create_on_a_network_with_a_policy_reads_nothing_after_its_write(
    network_db: Database, network_client: httpx.Client
) -> None:
    """The rules of the network's QoS policy are read ahead of the write with the network
    (recalled from the create before, whose revisions the write finds again), and the groups
    come back from their join: the answer, resource request and groups included, begins no
    transaction but the write's."""
    policy = post_made(network_client, "/v2.0/qos/policies", "policy", name="bw")
    post_made(network_client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
              "minimum_bandwidth_rule", min_kbps=1000)  # fmt: skip
    made = _dual_stack(network_client, qos_policy_id=policy["id"], **{
        "provider:network_type": "flat", "provider:physical_network": "public"})  # fmt: skip
    net = made["network"]
    post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    with transactions_begun(network_db) as begun, statements_run(network_db) as statements:
        port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"],
                         device_owner="compute:nova")  # fmt: skip
    assert port == _read_back(network_client, port)
    assert port["qos_network_policy_id"] == policy["id"]
    (group,) = port["resource_request"]["request_groups"]
    assert group["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
    returning = network_db.engine.dialect.insert_returning
    # The write; a read of the groups only where the join cannot say them.
    assert len(begun) == (1 if returning else 2), statements
    assert not any("FROM qos_rules" in s for s in statements), statements


def test_a_port_in_groups_it_names_answers_them_as_read_back(network_client: httpx.Client) -> None:
    made = _dual_stack(network_client)
    web = post_made(network_client, "/v2.0/security-groups", "security_group", name="web")
    db = post_made(network_client, "/v2.0/security-groups", "security_group", name="db")
    both = [web["id"], db["id"], web["id"]]
    port = post_made(network_client, "/v2.0/ports", "port", network_id=made["network"]["id"],
                     security_groups=both)  # fmt: skip
    assert port == _read_back(network_client, port)
    assert port["security_groups"] == sorted({web["id"], db["id"]})
