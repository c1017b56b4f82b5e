"""A port write's reads made ahead of its transaction (berth.network.read_ahead): when another
request changes what was read in between, the write decides on what is there when it runs, and
answers as it would have had it read everything itself. On every database backend."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import httpx
import pytest
from sqlalchemy import event

from berth.common.db import Database
from berth.network import read_ahead
from berth.network.reporting import provider_uuid
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import (
    bound_answer,
    neutron_error,
    post_made,
    statements_run,
    transactions_begun,
    two_racks,
)

OVS = "Open vSwitch agent"


@pytest.fixture
def flat(network_client: httpx.Client) -> dict[str, Any]:
    """A flat network on physnet "public", shared, with a /29 subnet (pool .2 to .6)."""
    net = post_made(
        network_client, "/v2.0/networks", "network", shared=True,
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )  # fmt: skip
    subnet = post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=4, cidr="10.0.0.0/29",
    )  # fmt: skip
    return {"network": net, "subnet": subnet}


@pytest.fixture
def between(
    monkeypatch: pytest.MonkeyPatch, network_service: NetworkService
) -> Callable[[str, Callable[[httpx.Client], None]], None]:
    """``between(step, change)``: run ``change`` (an admin's requests) once, right after the
    next read ahead of ``step`` ("for_create" or "for_binding"), as another request would."""

    def arrange(step: str, change: Callable[[httpx.Client], None]) -> None:
        original = getattr(read_ahead, step)

        def read_then_change(*args: Any) -> Any:
            ahead = original(*args)
            monkeypatch.setattr(read_ahead, step, original)
            failed: list[BaseException] = []

            def other_request() -> None:
                try:
                    with network_client_for(network_service) as admin:
                        change(admin)
                except BaseException as exc:  # re-raised in the test's thread
                    failed.append(exc)

            # Another thread, as another request: the port request's reads are its own.
            worker = threading.Thread(target=other_request)
            worker.start()
            worker.join()
            if failed:
                raise failed[0]
            return ahead

        monkeypatch.setattr(read_ahead, step, read_then_change)

    return arrange


def test_a_network_deleted_after_the_read_ahead_is_not_found(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    net, subnet = flat["network"], flat["subnet"]

    def delete_network(admin: httpx.Client) -> None:
        assert admin.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
        assert admin.delete(f"/v2.0/networks/{net['id']}").status_code == 204

    between("for_create", delete_network)
    gone = network_client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
    neutron_error(gone, 404, "NetworkNotFound")
    assert network_client.get("/v2.0/ports").json()["ports"] == []


def test_subnets_changed_after_the_read_ahead_are_the_ones_addressed(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    net, subnet = flat["network"], flat["subnet"]
    added: dict[str, Any] = {}

    def replace_subnet(admin: httpx.Client) -> None:
        assert admin.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
        body = {"network_id": net["id"], "ip_version": 4, "cidr": "10.9.0.0/29"}
        added.update(post_made(admin, "/v2.0/subnets", "subnet", **body))

    between("for_create", replace_subnet)
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert port["fixed_ips"] == [{"subnet_id": added["id"], "ip_address": "10.9.0.2"}]


def test_a_share_withdrawn_after_the_read_ahead_hides_the_network(
    network_service: NetworkService, flat: dict[str, Any], between: Any
) -> None:
    net = flat["network"]

    def unshare(admin: httpx.Client) -> None:
        answer = admin.put(f"/v2.0/networks/{net['id']}", json={"network": {"shared": False}})
        assert answer.status_code == 200, answer.text

    between("for_create", unshare)
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        hidden = alice.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
        neutron_error(hidden, 404, "NetworkNotFound")
        assert alice.get("/v2.0/ports").json()["ports"] == []


def test_a_rule_added_after_the_read_ahead_is_in_the_binding_s_request(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    net = flat["network"]
    policy = post_made(network_client, "/v2.0/qos/policies", "policy", name="later")
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"],
                 qos_policy_id=policy["id"])  # fmt: skip
    assert port["resource_request"] is None
    post_made(network_client, "/v2.0/agents", "agent", agent_type=OVS, host="cn1", binary="sim",
          topic="N/A", configurations={
              "bridge_mappings": {"public": "br-ex"},
              "resource_provider_bandwidths": {"br-ex": {"egress": 10000, "ingress": 10000}},
          })  # fmt: skip

    def add_rule(admin: httpx.Client) -> None:
        post_made(admin, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
              "minimum_bandwidth_rule", min_kbps=1000, direction="egress")  # fmt: skip

    between("for_binding", add_rule)
    bind = {"port": {"binding:host_id": "cn1"}}
    refused = network_client.put(f"/v2.0/ports/{port['id']}", json=bind)
    # The port now asks for bandwidth, and the binding names no allocation for it.
    assert "allocation-missing" in neutron_error(refused, 409, "PortBindingError")
    shown = network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert shown["binding:host_id"] == ""
    (group,) = shown["resource_request"]["request_groups"]
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    bind["port"]["binding:profile"] = {"allocation": {group["id"]: bridge}}  # type: ignore[index]
    bound = network_client.put(f"/v2.0/ports/{port['id']}", json=bind)
    assert bound.status_code == 200, bound.text
    assert bound.json()["port"]["binding:vif_type"] == "ovs"


def test_a_port_deleted_after_the_read_ahead_is_not_found(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    port = post_made(network_client, "/v2.0/ports", "port", network_id=flat["network"]["id"])

    def delete_port(admin: httpx.Client) -> None:
        assert admin.delete(f"/v2.0/ports/{port['id']}").status_code == 204

    between("for_binding", delete_port)
    gone = network_client.put(f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "x"}})
    neutron_error(gone, 404, "PortNotFound")


@contextmanager
def _write_statements(network_db: Database) -> Iterator[list[str]]:
    """The statements run inside the database's write transactions meanwhile."""
    seen: list[str] = []
    writing = threading.local()
    original = network_db.write

    @contextmanager
    def write() -> Iterator[Any]:
        writing.on = True
        try:
            with original() as conn:
                yield conn
        finally:
            writing.on = False

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        if getattr(writing, "on", False):
            seen.append(statement)

    event.listen(network_db.engine, "before_cursor_execute", record)
    network_db.write = write  # type: ignore[method-assign]
    try:
        yield seen
    finally:
        network_db.write = original  # type: ignore[method-assign]
        event.remove(network_db.engine, "before_cursor_execute", record)


def test_unchanged_reads_are_not_made_again_under_the_write_lock(
    network_db: Database, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    with _write_statements(network_db) as created:
        port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    with _write_statements(network_db) as bound:
        answer = network_client.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "nowhere"}}
        )
        neutron_error(answer, 409, "PortBindingError")
    for statements in (created, bound):
        assert statements, "no write transaction"
        # The revisions check is the one statement naming these tables.
        reads = [s for s in statements if "FROM networks" in s or "FROM subnets" in s]
        assert len(reads) == 1 and "UNION ALL" in reads[0], statements
        assert not any("FROM rbac_policies" in s or "FROM qos_rules" in s for s in statements)


def _ovs_agent(client: httpx.Client, host: str, bridges: dict[str, str]) -> None:
    post_made(client, "/v2.0/agents", "agent", agent_type=OVS, host=host, binary="sim",
              topic="N/A", configurations={
                  "bridge_mappings": bridges,
                  "resource_provider_bandwidths": {
                      bridge: {"egress": 10000, "ingress": 10000} for bridge in bridges.values()
                  },
              })  # fmt: skip


def test_a_boot_s_requests_with_their_reads_recalled_begin_only_their_writes(
    network_db: Database, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    """A boot's Networking requests once another boot's have read the network: the show's
    one statement (the revisions) and the binding's reads ahead (its port, groups and
    addresses) run outside any transaction; the create and the binding each begin their write
    alone. Their answers are the port and the network read back."""
    net = flat["network"]
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})
    first = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    bound_answer(network_client, first["id"], "cn1")
    network_client.get(f"/v2.0/networks/{net['id']}").raise_for_status()
    with transactions_begun(network_db) as begun, statements_run(network_db) as statements:
        shown = network_client.get(f"/v2.0/networks/{net['id']}")
    assert shown.status_code == 200, shown.text
    assert (len(begun), len(statements)) == (0, 1), statements
    with transactions_begun(network_db) as begun, statements_run(network_db) as statements:
        port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert len(begun) == 1, statements
    with transactions_begun(network_db) as begun, statements_run(network_db) as statements:
        bound = network_client.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "cn1"}}
        )
    assert bound.status_code == 200, bound.text
    assert len(begun) == 1, statements
    # Read ahead: the port, its groups, its addresses; in the write: the revisions, the port
    # locked, the host's agents and the update.
    assert len(statements) == 7, statements
    assert port == {**network_client.get(f"/v2.0/ports/{port['id']}").json()["port"],
                    **{name: port[name] for name in _BINDING_ANSWERED}}  # fmt: skip
    assert bound.json()["port"] == network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (
        shown.json()["network"]
        == (network_client.get("/v2.0/networks", params={"id": net["id"]}).json()["networks"][0])
    )


# What a binding changes of a port's answer.
_BINDING_ANSWERED = (
    "binding:host_id", "binding:vif_type", "binding:vif_details", "status", "revision_number",
    "updated_at",
)  # fmt: skip


def test_a_binding_s_answer_built_from_its_write_is_the_port_read_back(
    network_db: Database, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    """The binding's answer is made of what its write knows (the port as bound, its addresses)
    and its groups as read ahead: the same as reading the port back, which it no longer does."""
    net = flat["network"]
    policy = post_made(network_client, "/v2.0/qos/policies", "policy", name="gold")
    post_made(network_client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
              "minimum_bandwidth_rule", min_kbps=1000, direction="egress")  # fmt: skip
    group = post_made(network_client, "/v2.0/security-groups", "security_group", name="web")
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"], name="eth0",
                     qos_policy_id=policy["id"], security_groups=[group["id"]])  # fmt: skip
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})
    (request_group,) = port["resource_request"]["request_groups"]
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    profile = {"allocation": {request_group["id"]: bridge}, "note": [1, 2.5, None]}
    statements: list[str] = []
    begun: list[object] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_: Any) -> None:
        statements.append(statement)

    def begin(conn: Any) -> None:
        begun.append(conn)

    event.listen(network_db.engine, "before_cursor_execute", record)
    event.listen(network_db.engine, "begin", begin)
    try:
        bound = network_client.put(f"/v2.0/ports/{port['id']}", json={"port": {
            "binding:host_id": "cn1", "binding:profile": profile,
        }})  # fmt: skip
    finally:
        event.remove(network_db.engine, "before_cursor_execute", record)
        event.remove(network_db.engine, "begin", begin)
    assert bound.status_code == 200, bound.text
    answer = bound.json()["port"]
    assert answer == network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (answer["binding:host_id"], answer["status"]) == ("cn1", "ACTIVE")
    assert answer["binding:profile"] == profile
    assert answer["revision_number"] == port["revision_number"] + 1
    assert answer["security_groups"] == [group["id"]]
    assert answer["fixed_ips"] == port["fixed_ips"]
    # The port read ahead and locked in the write, never after it; its addresses once (the
    # binding's plan).
    assert sum("FROM ports" in s for s in statements) == 2, statements
    assert sum("FROM ip_allocations" in s for s in statements) == 1, statements
    # The read ahead and the write: the answer's reads are all remembered, and begin none.
    assert len(begun) == 2, statements
    # A body that says more than the binding: the port is read back, and says the same.
    again = network_client.put(f"/v2.0/ports/{port['id']}", json={"port": {
        "binding:host_id": "cn1", "binding:profile": profile, "device_id": "vm1",
    }})  # fmt: skip
    assert again.status_code == 200, again.text
    assert again.json()["port"] == network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert again.json()["port"]["revision_number"] == port["revision_number"] + 3


def test_a_deferred_address_taken_by_the_binding_is_in_its_answer(
    network_client: httpx.Client,
) -> None:
    net, racks = two_racks(network_client)
    subnet = post_made(network_client, "/v2.0/subnets", "subnet", network_id=net["id"],
                       ip_version=4, cidr="10.1.0.0/29", segment_id=racks["rack1"])  # fmt: skip
    _ovs_agent(network_client, "cn1", {"rack1": "br-1"})
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert port["fixed_ips"] == []
    answer = bound_answer(network_client, port["id"], "cn1")
    assert answer["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.1.0.2"}]


def test_groups_changed_after_the_read_ahead_are_in_the_binding_s_answer(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    port = post_made(network_client, "/v2.0/ports", "port", network_id=flat["network"]["id"])
    assert len(port["security_groups"]) == 1
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})

    def leave_groups(admin: httpx.Client) -> None:
        answer = admin.put(f"/v2.0/ports/{port['id']}", json={"port": {"security_groups": []}})
        assert answer.status_code == 200, answer.text

    between("for_binding", leave_groups)
    answer = bound_answer(network_client, port["id"], "cn1")
    assert answer["security_groups"] == []


def test_addresses_changed_after_the_read_ahead_are_in_the_binding_s_answer(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    net, subnet = flat["network"], flat["subnet"]
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})

    def readdress(admin: httpx.Client) -> None:
        body = {"fixed_ips": [{"subnet_id": subnet["id"], "ip_address": "10.0.0.5"}]}
        answer = admin.put(f"/v2.0/ports/{port['id']}", json={"port": body})
        assert answer.status_code == 200, answer.text

    between("for_binding", readdress)
    answer = bound_answer(network_client, port["id"], "cn1")
    assert answer["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.0.0.5"}]


def test_an_auto_addressed_subnet_deleted_after_the_read_ahead_is_not_in_the_binding_s_answer(
    network_client: httpx.Client, flat: dict[str, Any], between: Any
) -> None:
    """Deleting a SLAAC subnet takes its addresses from the ports without changing them (the
    network's revisions change instead)."""
    net, subnet = flat["network"], flat["subnet"]
    v6 = post_made(network_client, "/v2.0/subnets", "subnet", network_id=net["id"],
                   ip_version=6, cidr="2001:db8:1::/64", ipv6_address_mode="slaac",
                   ipv6_ra_mode="slaac", gateway_ip=None)  # fmt: skip
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert len(port["fixed_ips"]) == 2
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})

    def delete_v6(admin: httpx.Client) -> None:
        assert admin.delete(f"/v2.0/subnets/{v6['id']}").status_code == 204

    between("for_binding", delete_v6)
    answer = bound_answer(network_client, port["id"], "cn1")
    assert [ip["subnet_id"] for ip in answer["fixed_ips"]] == [subnet["id"]]


def _network_reads(statements: list[str]) -> list[str]:
    """The reads of networks, subnets and rules other than the revisions' check."""
    tables = ("FROM networks", "FROM subnets", "FROM qos_rules", "FROM segments")
    return [s for s in statements if any(t in s for t in tables) and "UNION ALL" not in s]


def test_a_create_recalls_what_the_one_before_read_ahead_and_sees_what_changed_since(
    network_db: Database, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    """What a read ahead read is kept for the next request on the same network: recalled
    while its revisions hold, forgotten by the write that finds them changed."""
    net = flat["network"]
    post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    with statements_run(network_db) as unchanged:
        plain = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert plain["resource_request"] is None and len(plain["fixed_ips"]) == 1
    assert plain == network_client.get(f"/v2.0/ports/{plain['id']}").json()["port"]
    # Only the revisions, inside the write.
    assert _network_reads(unchanged) == [], unchanged
    # A policy put on the network, then its rule changed, then a subnet added: each seen by
    # the next create, which reads them inside its write.
    policy = post_made(network_client, "/v2.0/qos/policies", "policy", name="bw")
    rule = post_made(network_client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
                     "minimum_bandwidth_rule", min_kbps=1000)  # fmt: skip
    network_client.put(
        f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": policy["id"]}}
    ).raise_for_status()
    with _write_statements(network_db) as changed:
        asking = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    (group,) = asking["resource_request"]["request_groups"]
    assert group["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
    assert _network_reads(changed), changed
    network_client.put(
        f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules/{rule['id']}",
        json={"minimum_bandwidth_rule": {"min_kbps": 2000}},
    ).raise_for_status()
    more = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    (group,) = more["resource_request"]["request_groups"]
    assert group["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}
    v6 = post_made(network_client, "/v2.0/subnets", "subnet", network_id=net["id"],
                   ip_version=6, cidr="2001:db8:1::/64", ipv6_address_mode="slaac",
                   ipv6_ra_mode="slaac", gateway_ip=None)  # fmt: skip
    dual = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert {ip["subnet_id"] for ip in dual["fixed_ips"]} == {flat["subnet"]["id"], v6["id"]}
    assert dual == network_client.get(f"/v2.0/ports/{dual['id']}").json()["port"]


def test_a_network_deleted_after_a_create_is_not_found_by_the_next(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net, subnet = flat["network"], flat["subnet"]
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    assert network_client.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert network_client.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    assert network_client.delete(f"/v2.0/networks/{net['id']}").status_code == 204
    gone = network_client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
    neutron_error(gone, 404, "NetworkNotFound")


def test_a_binding_recalls_the_network_read_for_the_one_before_and_sees_a_rule_added_since(
    network_db: Database, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    first, second = (
        post_made(network_client, "/v2.0/ports", "port", network_id=net["id"]) for _ in range(2)
    )
    _ovs_agent(network_client, "cn1", {"public": "br-ex"})
    # Refused (no agent on the host), after its read ahead: the network is read for it.
    elsewhere = {"port": {"binding:host_id": "nowhere"}}
    neutron_error(network_client.put(f"/v2.0/ports/{first['id']}", json=elsewhere), 409,
                  "PortBindingError")  # fmt: skip
    with statements_run(network_db) as recalled:
        refused = network_client.put(f"/v2.0/ports/{second['id']}", json=elsewhere)
    assert "no-agent" in neutron_error(refused, 409, "PortBindingError")
    assert _network_reads(recalled) == [], recalled
    policy = post_made(network_client, "/v2.0/qos/policies", "policy", name="bw")
    post_made(network_client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
              "minimum_bandwidth_rule", min_kbps=1000)  # fmt: skip
    network_client.put(
        f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": policy["id"]}}
    ).raise_for_status()
    # The port now asks for bandwidth, and the binding names no allocation for it.
    bind = {"port": {"binding:host_id": "cn1"}}
    refused = network_client.put(f"/v2.0/ports/{second['id']}", json=bind)
    assert "allocation-missing" in neutron_error(refused, 409, "PortBindingError")
    (group,) = network_client.get(f"/v2.0/ports/{second['id']}").json()["port"][
        "resource_request"]["request_groups"]  # fmt: skip
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    bind["port"]["binding:profile"] = {"allocation": {group["id"]: bridge}}  # type: ignore[index]
    bound = network_client.put(f"/v2.0/ports/{second['id']}", json=bind)
    assert bound.status_code == 200, bound.text
    assert bound.json()["port"] == network_client.get(f"/v2.0/ports/{second['id']}").json()["port"]
