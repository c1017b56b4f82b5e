"""/v2.0/ports and port bindings over HTTP, on every database backend."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from berth.network import ports
from berth.network.reporting import provider_uuid
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error, post_made, two_racks

OVS = "Open vSwitch agent"
SRIOV = "NIC Switch agent"


def _port(client: httpx.Client, **body: Any) -> dict[str, Any]:
    return post_made(client, "/v2.0/ports", "port", **body)


def _agent(client: httpx.Client, kind: str, host: str, config: dict[str, Any]) -> None:
    body = {
        "agent_type": kind,
        "host": host,
        "binary": "sim",
        "topic": "N/A",
        "configurations": config,
    }
    assert client.post("/v2.0/agents", json={"agent": body}).is_success


@pytest.fixture
def flat(network_client: httpx.Client) -> dict[str, Any]:
    """A flat network on physnet "public" with a /29 subnet (pool .2 to .6)."""
    net = post_made(
        network_client, "/v2.0/networks", "network",
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )  # fmt: skip
    subnet = post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=4, cidr="10.0.0.0/29",
    )  # fmt: skip
    return {"network": net, "subnet": subnet}


def test_a_port_gets_a_mac_and_the_lowest_free_address(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net, subnet = flat["network"], flat["subnet"]
    port = _port(network_client, network_id=net["id"], name="p1", device_id="vm1")
    assert port["mac_address"].startswith("fa:16:3e:")
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.0.0.2"}]
    assert (port["status"], port["binding:vif_type"], port["ip_allocation"]) == (
        "DOWN",
        "unbound",
        "immediate",
    )
    assert port["resource_request"] is None and port["binding:vnic_type"] == "normal"
    second = _port(network_client, network_id=net["id"], fixed_ips=[{"ip_address": "10.0.0.5"}])
    assert second["fixed_ips"][0]["ip_address"] == "10.0.0.5"
    taken = network_client.post(
        "/v2.0/ports",
        json={"port": {"network_id": net["id"], "fixed_ips": [{"ip_address": "10.0.0.5"}]}},
    )
    neutron_error(taken, 409, "IpAddressInUse")
    nowhere = network_client.post(
        "/v2.0/ports",
        json={"port": {"network_id": net["id"], "fixed_ips": [{"ip_address": "10.9.0.5"}]}},
    )
    neutron_error(nowhere, 400, "InvalidInput")
    bare = _port(network_client, network_id=net["id"], fixed_ips=[])
    assert bare["fixed_ips"] == [] and bare["ip_allocation"] == "none"
    same_mac = network_client.post(
        "/v2.0/ports", json={"port": {"network_id": net["id"], "mac_address": port["mac_address"]}}
    )
    neutron_error(same_mac, 409, "MacAddressInUse")
    bad_mac = network_client.post(
        "/v2.0/ports", json={"port": {"network_id": net["id"], "mac_address": "01:00:5e:00:00:01"}}
    )
    neutron_error(bad_mac, 400, "InvalidInput")
    # .3, .4 and .6 are left: three more ports, then the pool is exhausted.
    for _ in range(3):
        _port(network_client, network_id=net["id"])
    full = network_client.post("/v2.0/ports", json={"port": {"network_id": net["id"]}})
    neutron_error(full, 409, "IpAddressGenerationFailure")
    found = network_client.get("/v2.0/ports", params={"device_id": "vm1"}).json()["ports"]
    assert [p["id"] for p in found] == [port["id"]]
    by_ip = network_client.get("/v2.0/ports", params={"fixed_ips": "ip_address=10.0.0.5"}).json()
    assert [p["id"] for p in by_ip["ports"]] == [second["id"]]
    assert network_client.delete(f"/v2.0/ports/{second['id']}").status_code == 204
    availability = network_client.get(f"/v2.0/network-ip-availabilities/{net['id']}").json()
    assert availability["network_ip_availability"]["used_ips"] == 4


def _qos(client: httpx.Client, kbps: int = 1000, kpps: int = 0) -> str:
    policy = post_made(client, "/v2.0/qos/policies", "policy", name=f"bw{kbps}")
    post_made(client, f"/v2.0/qos/policies/{policy['id']}/minimum_bandwidth_rules",
          "minimum_bandwidth_rule", min_kbps=kbps, direction="egress")  # fmt: skip
    if kpps:
        post_made(client, f"/v2.0/qos/policies/{policy['id']}/minimum_packet_rate_rules",
              "minimum_packet_rate_rule", min_kpps=kpps, direction="any")  # fmt: skip
    return str(policy["id"])


def test_resource_request_from_the_port_or_network_policy(
    network_service: NetworkService, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    policy = _qos(network_client, 1000, 100)
    port = _port(network_client, network_id=net["id"], qos_policy_id=policy)
    request = port["resource_request"]
    bandwidth, packet_rate = request["request_groups"]
    assert bandwidth["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 1000}
    assert sorted(bandwidth["required"]) == ["CUSTOM_PHYSNET_PUBLIC", "CUSTOM_VNIC_TYPE_NORMAL"]
    assert packet_rate == {
        "id": packet_rate["id"], "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
        "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 100},
    }  # fmt: skip
    assert request["same_subtree"] == [bandwidth["id"], packet_rate["id"]]
    again = network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]["resource_request"]
    assert again == request
    network_policy = _qos(network_client, 2000)
    network_client.put(
        f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": network_policy}}
    )
    plain = _port(network_client, network_id=net["id"], **{"binding:vnic_type": "direct"})
    (group,) = plain["resource_request"]["request_groups"]
    assert group["resources"] == {"NET_BW_EGR_KILOBIT_PER_SEC": 2000}
    assert "CUSTOM_VNIC_TYPE_DIRECT" in group["required"]
    assert plain["qos_network_policy_id"] == network_policy
    with network_client_for(network_service, "admin:admin") as owner:
        shown = owner.get(f"/v2.0/ports/{plain['id']}").json()["port"]
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        assert alice.get(f"/v2.0/ports/{plain['id']}").status_code == 404
    assert "resource_request" in shown


def test_binding_needs_an_agent_and_the_allocation_of_its_request(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    port = _port(network_client, network_id=net["id"], qos_policy_id=_qos(network_client))
    (group,) = port["resource_request"]["request_groups"]
    nobody = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "cn1"}}
    )
    assert "no-agent" in neutron_error(nobody, 409, "PortBindingError")
    _agent(network_client, OVS, "cn1", {
        "bridge_mappings": {"public": "br-ex"},
        "resource_provider_bandwidths": {"br-ex": {"egress": 10000, "ingress": 10000}},
    })  # fmt: skip
    missing = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "cn1"}}
    )
    assert "allocation-missing" in neutron_error(missing, 409, "PortBindingError")
    agent_rp = provider_uuid("cn1:Open vSwitch agent")
    wrong = network_client.put(
        f"/v2.0/ports/{port['id']}",
        json={
            "port": {
                "binding:host_id": "cn1",
                "binding:profile": {"allocation": {group["id"]: agent_rp}},
            }
        },
    )
    assert "allocation-wrong-provider" in neutron_error(wrong, 409, "PortBindingError")
    unchanged = network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (unchanged["binding:host_id"], unchanged["binding:profile"]) == ("", {})
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    bound = network_client.put(
        f"/v2.0/ports/{port['id']}",
        json={
            "port": {
                "binding:host_id": "cn1",
                "binding:profile": {"allocation": {group["id"]: bridge}},
            }
        },
    ).json()["port"]
    assert (bound["binding:host_id"], bound["binding:vif_type"], bound["status"]) == (
        "cn1",
        "ovs",
        "ACTIVE",
    )
    assert bound["binding:profile"] == {"allocation": {group["id"]: bridge}}
    other = _qos(network_client, 5000)
    change = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": other}}
    )
    # Bound without a device_id: no server's allocation to carry the change to.
    assert neutron_error(change, 409, "QosPolicyChangeRefused").startswith("no-consumer")
    unbound = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": ""}}
    )
    assert (unbound.json()["port"]["binding:vif_type"], unbound.json()["port"]["status"]) == (
        "unbound",
        "DOWN",
    )
    assert network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": other}}
    ).is_success


def test_sriov_ports_bind_to_the_nic_switch_agent(network_client: httpx.Client) -> None:
    net = post_made(
        network_client, "/v2.0/networks", "network",
        **{"provider:network_type": "vlan", "provider:physical_network": "physnet1",
           "provider:segmentation_id": 42},
    )  # fmt: skip
    _agent(network_client, SRIOV, "cn1", {"device_mappings": {"physnet1": ["ens1f0"]}})
    _agent(network_client, OVS, "cn1", {"bridge_mappings": {"physnet1": "br-1"}})
    direct = _port(network_client, network_id=net["id"], **{"binding:vnic_type": "direct"})
    bound = network_client.put(
        f"/v2.0/ports/{direct['id']}", json={"port": {"binding:host_id": "cn1"}}
    ).json()["port"]
    assert bound["binding:vif_type"] == "hw_veb" and bound["binding:vif_details"]["vlan"] == "42"
    normal = _port(network_client, network_id=net["id"])
    assert (
        network_client.put(
            f"/v2.0/ports/{normal['id']}", json={"port": {"binding:host_id": "cn1"}}
        ).json()["port"]["binding:vif_type"]
        == "ovs"
    )
    macvtap_elsewhere = _port(
        network_client, network_id=net["id"], **{"binding:vnic_type": "macvtap"}
    )
    _agent(network_client, OVS, "cn2", {"bridge_mappings": {"physnet1": "br-1"}})
    refused = network_client.put(
        f"/v2.0/ports/{macvtap_elsewhere['id']}", json={"port": {"binding:host_id": "cn2"}}
    )
    assert "vnic-type-unsupported" in neutron_error(refused, 409, "PortBindingError")


def test_routed_network_ports_take_their_address_at_binding(network_client: httpx.Client) -> None:
    net, by_physnet = two_racks(network_client)
    one = post_made(network_client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=4,
                cidr="10.1.0.0/30", segment_id=by_physnet["rack1"])  # fmt: skip
    two = post_made(network_client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=4,
                cidr="10.2.0.0/24", segment_id=by_physnet["rack2"])  # fmt: skip
    _agent(network_client, OVS, "cn1", {"bridge_mappings": {"rack1": "br-1"}})
    _agent(network_client, OVS, "cn2", {"bridge_mappings": {"rack2": "br-2"}})
    _agent(network_client, OVS, "cn3", {"bridge_mappings": {"rack9": "br-9"}})
    first = _port(network_client, network_id=net["id"])
    assert (first["ip_allocation"], first["fixed_ips"]) == ("deferred", [])
    unreachable = network_client.put(
        f"/v2.0/ports/{first['id']}", json={"port": {"binding:host_id": "cn3"}}
    )
    assert "segment-unreachable" in neutron_error(unreachable, 409, "PortBindingError")
    bound = network_client.put(
        f"/v2.0/ports/{first['id']}", json={"port": {"binding:host_id": "cn1"}}
    )
    assert bound.json()["port"]["fixed_ips"] == [{"subnet_id": one["id"], "ip_address": "10.1.0.2"}]
    # rack1's /30 had one address: the next port cannot bind there, but can on cn2.
    second = _port(network_client, network_id=net["id"])
    full = network_client.put(
        f"/v2.0/ports/{second['id']}", json={"port": {"binding:host_id": "cn1"}}
    )
    assert "no-free-ip" in neutron_error(full, 409, "PortBindingError")
    assert network_client.get(f"/v2.0/ports/{second['id']}").json()["port"]["fixed_ips"] == []
    elsewhere = network_client.put(
        f"/v2.0/ports/{second['id']}", json={"port": {"binding:host_id": "cn2"}}
    )
    assert elsewhere.json()["port"]["fixed_ips"][0]["subnet_id"] == two["id"]
    # Unbinding gives the deferred address back.
    network_client.put(f"/v2.0/ports/{first['id']}", json={"port": {"binding:host_id": None}})
    assert network_client.get(f"/v2.0/ports/{first['id']}").json()["port"]["fixed_ips"] == []
    assert (
        network_client.put(
            f"/v2.0/ports/{second['id']}", json={"port": {"binding:host_id": ""}}
        ).json()["port"]["fixed_ips"]
        == []
    )
    assert network_client.put(
        f"/v2.0/ports/{second['id']}", json={"port": {"binding:host_id": "cn1"}}
    ).is_success


def test_port_bindings_extension_moves_a_port(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    for host in ("cn1", "cn2"):
        _agent(network_client, OVS, host, {"bridge_mappings": {"public": "br-ex"}})
    port = _port(network_client, network_id=net["id"], **{"binding:host_id": "cn1"})
    assert port["binding:host_id"] == "cn1"
    created = network_client.post(
        f"/v2.0/ports/{port['id']}/bindings", json={"binding": {"host": "cn2"}}
    )
    assert created.status_code == 201, created.text
    assert created.json()["binding"]["status"] == "INACTIVE"
    again = network_client.post(
        f"/v2.0/ports/{port['id']}/bindings", json={"binding": {"host": "cn2"}}
    )
    neutron_error(again, 409, "PortBindingAlreadyExists")
    listed = network_client.get(f"/v2.0/ports/{port['id']}/bindings").json()["bindings"]
    assert {(b["host"], b["status"]) for b in listed} == {("cn1", "ACTIVE"), ("cn2", "INACTIVE")}
    assert network_client.put(f"/v2.0/ports/{port['id']}/bindings/cn2/activate").status_code == 200
    moved = network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert (moved["binding:host_id"], moved["status"]) == ("cn2", "ACTIVE")
    assert network_client.delete(f"/v2.0/ports/{port['id']}/bindings/cn1").status_code == 204
    neutron_error(
        network_client.get(f"/v2.0/ports/{port['id']}/bindings/cn1"), 404, "PortBindingNotFound"
    )
    neutron_error(
        network_client.put(f"/v2.0/ports/{port['id']}/bindings/cn9/activate"),
        404,
        "PortBindingNotFound",
    )


def test_binding_attributes_are_the_operators(
    network_service: NetworkService, network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    net = flat["network"]
    network_client.put(f"/v2.0/networks/{net['id']}", json={"network": {"shared": True}})
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        mine = _port(alice, network_id=net["id"])
        assert "binding:host_id" not in mine and "resource_request" not in mine
        refused = alice.put(f"/v2.0/ports/{mine['id']}", json={"port": {"binding:host_id": "cn1"}})
        neutron_error(refused, 403, "NotAuthorized")
        neutron_error(alice.get(f"/v2.0/ports/{mine['id']}/bindings"), 403, "NotAuthorized")
        assert alice.delete(f"/v2.0/ports/{mine['id']}").status_code == 204
    neutron_error(network_client.get("/v2.0/ports/nope"), 404, "PortNotFound")
    neutron_error(
        network_client.post(
            "/v2.0/ports", json={"port": {"network_id": net["id"], "binding:vnic_type": "x"}}
        ),
        400,
        "InvalidInput",
    )


def test_policy_changes_of_a_bound_port_are_refused_without_a_placement(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    """With a Placement they rewrite the server's allocation (test_qos_allocations); this
    service has none, so every write that would change a bound port's request is refused."""
    net = flat["network"]
    _agent(network_client, OVS, "cn1", {
        "bridge_mappings": {"public": "br-ex"},
        "resource_provider_bandwidths": {"br-ex": {"egress": 10000}},
    })  # fmt: skip
    policy = _qos(network_client, 1000)
    network_client.put(f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": policy}})
    port = _port(network_client, network_id=net["id"], device_id="server-1")
    (group,) = port["resource_request"]["request_groups"]
    bridge = provider_uuid("cn1:Open vSwitch agent:br-ex")
    profile = {"allocation": {group["id"]: bridge}}
    bound = network_client.put(
        f"/v2.0/ports/{port['id']}",
        json={"port": {"binding:host_id": "cn1", "binding:profile": profile}},
    )
    assert bound.is_success, bound.text
    rules = network_client.get(f"/v2.0/qos/policies/{policy}/minimum_bandwidth_rules").json()
    (rule,) = rules["minimum_bandwidth_rules"]
    path = f"/v2.0/qos/policies/{policy}/minimum_bandwidth_rules/{rule['id']}"

    def refused(answer: httpx.Response) -> None:
        assert neutron_error(answer, 409, "QosPolicyChangeRefused").startswith("no-placement")

    refused(network_client.put(path, json={"minimum_bandwidth_rule": {"min_kbps": 2000}}))
    refused(network_client.delete(path))
    limit = network_client.post(
        f"/v2.0/qos/policies/{policy}/bandwidth_limit_rules",
        json={"bandwidth_limit_rule": {"max_kbps": 5000}},
    )
    assert limit.status_code == 201, limit.text  # a limit asks nothing of Placement
    other = _qos(network_client, 3000)
    refused(
        network_client.put(
            f"/v2.0/networks/{net['id']}", json={"network": {"qos_policy_id": other}}
        )
    )
    refused(
        network_client.put(f"/v2.0/ports/{port['id']}", json={"port": {"qos_policy_id": other}})
    )
    both = {"qos_policy_id": other, "binding:profile": profile}
    neutron_error(
        network_client.put(f"/v2.0/ports/{port['id']}", json={"port": both}), 409, "Conflict"
    )
    assert network_client.get(path).json()["minimum_bandwidth_rule"]["min_kbps"] == 1000
    network_client.put(f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": ""}})
    assert network_client.put(path, json={"minimum_bandwidth_rule": {"min_kbps": 2000}}).is_success


def test_ports_on_a_shared_network_are_seen_by_their_project_and_the_networks_owner(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    net = post_made(network_client, "/v2.0/networks", "network", shared=True, project_id="owner")
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        mine = _port(alice, network_id=net["id"])
    with network_client_for(network_service, "bob", roles=MEMBER_ROLES) as bob:
        assert bob.get(f"/v2.0/ports/{mine['id']}").status_code == 404
        assert bob.get("/v2.0/ports").json()["ports"] == []
    with network_client_for(network_service, "owner", roles=MEMBER_ROLES) as owner:
        assert [p["id"] for p in owner.get("/v2.0/ports").json()["ports"]] == [mine["id"]]


def test_a_binding_profile_given_before_the_host_is_kept(
    network_client: httpx.Client, flat: dict[str, Any]
) -> None:
    profile = {"capabilities": ["switchdev"]}
    port = _port(network_client, network_id=flat["network"]["id"], **{"binding:profile": profile})
    assert (port["binding:profile"], port["binding:host_id"]) == (profile, "")
    later = {"pci_slot": "0000:81:00.1"}
    updated = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:profile": later}}
    )
    assert updated.json()["port"]["binding:profile"] == later


def test_the_network_owner_chooses_mac_addresses(
    network_client: httpx.Client, network_service: NetworkService
) -> None:
    mine = post_made(
        network_client, "/v2.0/networks", "network", project_id="alice",
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )  # fmt: skip
    shared = post_made(network_client, "/v2.0/networks", "network", project_id="bob", shared=True)
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        port = _port(alice, network_id=mine["id"], mac_address="FA:16:3E:00:00:0A")
        assert port["mac_address"] == "fa:16:3e:00:00:0a"
        changed = alice.put(
            f"/v2.0/ports/{port['id']}", json={"port": {"mac_address": "fa:16:3e:00:00:0b"}}
        )
        assert changed.status_code == 200, changed.text
        assert alice.get(f"/v2.0/ports/{port['id']}").json()["port"]["mac_address"] == (
            "fa:16:3e:00:00:0b"
        )
        other = _port(alice, network_id=mine["id"])
        taken = alice.put(
            f"/v2.0/ports/{other['id']}", json={"port": {"mac_address": "fa:16:3e:00:00:0b"}}
        )
        neutron_error(taken, 409, "MacAddressInUse")
        # On bob's shared network alice makes ports, but their MAC addresses are bob's choice.
        refused = alice.post(
            "/v2.0/ports",
            json={"port": {"network_id": shared["id"], "mac_address": "fa:16:3e:00:00:0c"}},
        )
        neutron_error(refused, 403, "NotAuthorized")
        on_shared = _port(alice, network_id=shared["id"])
        refused = alice.put(
            f"/v2.0/ports/{on_shared['id']}", json={"port": {"mac_address": "fa:16:3e:00:00:0c"}}
        )
        neutron_error(refused, 403, "NotAuthorized")
    _agent(network_client, OVS, "cn1", {"bridge_mappings": {"public": "br-ex"}})
    bound = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"binding:host_id": "cn1"}}
    )
    assert bound.status_code == 200, bound.text
    moved = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"mac_address": "fa:16:3e:00:00:0d"}}
    )
    neutron_error(moved, 409, "PortBound")


def test_a_mac_address_drawn_twice_is_drawn_again_in_the_same_transaction(
    network_client: httpx.Client, flat: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The refused insert of a taken MAC address leaves the create's transaction going (a
    savepoint on the servers, SQLite's own statement rollback): the next draw commits."""
    net = flat["network"]
    first = _port(network_client, network_id=net["id"])
    taken = [int(part, 16) for part in first["mac_address"].split(":")[3:]]
    draws = iter([*taken, 0xAB, 0xCD, 0xEF])
    monkeypatch.setattr(ports.random, "randrange", lambda _n: next(draws))
    second = _port(network_client, network_id=net["id"])
    assert second["mac_address"] == first["mac_address"][:9] + "ab:cd:ef"
    assert second["fixed_ips"][0]["ip_address"] == "10.0.0.3"
    listed = network_client.get("/v2.0/ports").json()["ports"]
    assert sorted(p["id"] for p in listed) == sorted([first["id"], second["id"]])
