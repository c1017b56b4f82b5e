"""A port create answers with the port as its write made it (its row, with the table's defaults
where the create says nothing, and its addresses in the order taken), reading back only its
security groups: the same answer as reading the port back. On every database backend."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import httpx
from sqlalchemy import event

from berth.common.db import Database
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import post_made


@contextmanager
def _statements(network_db: Database) -> Iterator[list[str]]:
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        seen.append(statement)

    event.listen(network_db.engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(network_db.engine, "before_cursor_execute", record)


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
    with _statements(network_db) as statements:
        plain = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert plain == _read_back(network_client, plain)
    assert [ip["subnet_id"] for ip in plain["fixed_ips"]] == [made["v6"]["id"], v4["id"]]
    assert len(plain["security_groups"]) == 1 and plain["revision_number"] == 0
    # The port and its addresses are not read back; its groups are.
    read_back = ("WHERE ports.id =", "WHERE ip_allocations.port_id IN")
    assert not any(where in s for s in statements for where in read_back), statements
    assert sum("FROM port_security_groups" in s for s in statements) == 1, statements
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
