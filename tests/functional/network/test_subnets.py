"""/v2.0/subnets and /v2.0/network-ip-availabilities over HTTP, on every database backend."""

from __future__ import annotations

import httpx
import sqlalchemy as sa

from berth.common.timeutils import utcnow
from berth.network.service import NetworkService
from berth.network.store.schema import ip_allocations, ports
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error


def _network(client: httpx.Client, **network: object) -> dict[str, object]:
    answer = client.post("/v2.0/networks", json={"network": network})
    assert answer.status_code == 201, answer.text
    return answer.json()["network"]  # type: ignore[no-any-return]


def _subnet(client: httpx.Client, **subnet: object) -> httpx.Response:
    return client.post("/v2.0/subnets", json={"subnet": subnet})


def test_defaults_gateway_and_pools(network_client: httpx.Client) -> None:
    net = _network(network_client)
    answer = _subnet(network_client, network_id=net["id"], ip_version=4, cidr="10.0.0.0/24")
    assert answer.status_code == 201, answer.text
    subnet = answer.json()["subnet"]
    assert subnet["gateway_ip"] == "10.0.0.1"
    assert subnet["allocation_pools"] == [{"start": "10.0.0.2", "end": "10.0.0.254"}]
    assert subnet["segment_id"] is None and subnet["enable_dhcp"] is True
    shown = network_client.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert shown["subnets"] == [subnet["id"]] and shown["l2_adjacency"] is True
    v6 = _subnet(
        network_client, network_id=net["id"], ip_version=6, cidr="2001:db8::/64",
        ipv6_address_mode="slaac", ipv6_ra_mode="slaac", gateway_ip=None,
    ).json()["subnet"]  # fmt: skip
    assert v6["gateway_ip"] is None
    assert v6["allocation_pools"] == [
        {"start": "2001:db8::1", "end": "2001:db8::ffff:ffff:ffff:ffff"}
    ]


def test_refusals(network_client: httpx.Client) -> None:
    net = _network(network_client)
    base = {"network_id": net["id"], "ip_version": 4}
    neutron_error(_subnet(network_client, **base, cidr="10.0.0.1/24"), 400, "InvalidInput")
    neutron_error(_subnet(network_client, **base, cidr="nope"), 400, "InvalidInput")
    neutron_error(_subnet(network_client, **base, cidr="2001:db8::/64"), 400, "InvalidInput")
    neutron_error(
        _subnet(network_client, **base, cidr="10.0.0.0/24", gateway_ip="10.9.9.9"),
        400, "InvalidInput",
    )  # fmt: skip
    neutron_error(
        _subnet(network_client, **base, cidr="10.0.0.0/24",
                allocation_pools=[{"start": "10.0.0.10", "end": "10.0.1.5"}]),
        400, "InvalidInput",
    )  # fmt: skip
    assert _subnet(network_client, **base, cidr="10.0.0.0/24").status_code == 201
    overlap = _subnet(network_client, **base, cidr="10.0.0.128/25")
    assert "overlaps" in neutron_error(overlap, 400, "BadRequest")
    neutron_error(_subnet(network_client, ip_version=4, cidr="10.1.0.0/24"), 400, "InvalidInput")
    missing = _subnet(
        network_client, network_id="00000000-0000-0000-0000-00000000dead", ip_version=4,
        cidr="10.2.0.0/24",
    )  # fmt: skip
    neutron_error(missing, 404, "NetworkNotFound")
    neutron_error(network_client.get("/v2.0/subnets/x"), 404, "SubnetNotFound")


def test_routed_network_subnets_name_their_segment(network_client: httpx.Client) -> None:
    net = _network(
        network_client,
        segments=[
            {"provider:network_type": "vlan", "provider:physical_network": "rack1",
             "provider:segmentation_id": 11},
            {"provider:network_type": "vlan", "provider:physical_network": "rack2",
             "provider:segmentation_id": 11},
        ],
    )  # fmt: skip
    segments = network_client.get("/v2.0/segments", params={"network_id": net["id"]}).json()
    seg1, seg2 = sorted(segments["segments"], key=lambda s: s["physical_network"])
    base = {"network_id": net["id"], "ip_version": 4}
    neutron_error(_subnet(network_client, **base, cidr="10.1.0.0/24"), 400, "BadRequest")
    first = _subnet(network_client, **base, cidr="10.1.0.0/24", segment_id=seg1["id"])
    assert first.json()["subnet"]["segment_id"] == seg1["id"]
    assert _subnet(network_client, **base, cidr="10.2.0.0/24", segment_id=seg2["id"]).is_success
    elsewhere = _network(network_client)
    other = network_client.get("/v2.0/segments", params={"network_id": elsewhere["id"]}).json()
    wrong = _subnet(
        network_client, **base, cidr="10.3.0.0/24", segment_id=other["segments"][0]["id"]
    )
    neutron_error(wrong, 400, "InvalidInput")
    shown = network_client.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert shown["l2_adjacency"] is False
    in_use = network_client.delete(f"/v2.0/segments/{seg1['id']}")
    neutron_error(in_use, 409, "SegmentInUse")


def test_ipv6_modes_must_agree(network_client: httpx.Client) -> None:
    net = _network(network_client)
    base = {"network_id": net["id"], "ip_version": 6, "cidr": "2001:db8::/64"}
    disagree = _subnet(
        network_client, **base, ipv6_ra_mode="slaac", ipv6_address_mode="dhcpv6-stateful"
    )
    assert "must be the same" in neutron_error(disagree, 400, "InvalidInput")
    # Either alone is fine: addresses may come from elsewhere than the router advertisements.
    only_address = _subnet(network_client, **base, ipv6_address_mode="dhcpv6-stateless")
    assert only_address.status_code == 201, only_address.text
    assert only_address.json()["subnet"]["ipv6_ra_mode"] is None


def test_an_auto_addressed_subnet_is_deleted_from_under_its_ports(
    network_client: httpx.Client,
) -> None:
    net = _network(network_client)
    base = {"network_id": net["id"], "ip_version": 6}
    made = {}
    for mode, cidr in (
        ("slaac", "2001:db8:1::/64"),
        ("dhcpv6-stateless", "2001:db8:2::/64"),
        ("dhcpv6-stateful", "2001:db8:3::/64"),
    ):
        answer = _subnet(
            network_client, **base, cidr=cidr, ipv6_ra_mode=mode, ipv6_address_mode=mode
        )
        made[mode] = answer.json()["subnet"]["id"]
    answer = network_client.post(
        "/v2.0/ports", json={"port": {"network_id": net["id"], "mac_address": "fa:16:3e:11:22:33"}}
    )
    assert answer.status_code == 201, answer.text
    # Every auto-addressed subnet's EUI-64 address, and one handed out by the stateful one.
    assert sorted(f["ip_address"] for f in answer.json()["port"]["fixed_ips"]) == [
        "2001:db8:1:0:f816:3eff:fe11:2233",
        "2001:db8:2:0:f816:3eff:fe11:2233",
        "2001:db8:3::2",
    ]
    port = answer.json()["port"]
    moved = network_client.put(
        f"/v2.0/ports/{port['id']}", json={"port": {"mac_address": "fa:16:3e:44:55:66"}}
    )
    assert moved.status_code == 200, moved.text
    # A new MAC address moves the EUI-64 addresses with it.
    assert sorted(f["ip_address"] for f in moved.json()["port"]["fixed_ips"]) == [
        "2001:db8:1:0:f816:3eff:fe44:5566",
        "2001:db8:2:0:f816:3eff:fe44:5566",
        "2001:db8:3::2",
    ]
    # Addresses a host makes itself go with their subnet; the port stays.
    for mode in ("slaac", "dhcpv6-stateless"):
        deleted = network_client.delete(f"/v2.0/subnets/{made[mode]}")
        assert deleted.status_code == 204, deleted.text
    shown = network_client.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert [f["subnet_id"] for f in shown["fixed_ips"]] == [made["dhcpv6-stateful"]]
    # Addresses handed out by DHCP are the ports' own: that subnet stays in use.
    neutron_error(
        network_client.delete(f"/v2.0/subnets/{made['dhcpv6-stateful']}"), 409, "SubnetInUse"
    )
    in_use = network_client.delete(f"/v2.0/networks/{net['id']}")
    assert "ports still in use" in neutron_error(in_use, 409, "NetworkInUse")


def test_update_delete_and_ip_availability(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    net = _network(network_client, name="n")
    subnet = _subnet(network_client, network_id=net["id"], ip_version=4, cidr="10.0.0.0/29").json()[
        "subnet"
    ]
    updated = network_client.put(
        f"/v2.0/subnets/{subnet['id']}",
        json={
            "subnet": {"name": "s", "allocation_pools": [{"start": "10.0.0.3", "end": "10.0.0.6"}]}
        },
    ).json()["subnet"]
    assert updated["name"] == "s" and updated["revision_number"] == 1
    assert updated["allocation_pools"] == [{"start": "10.0.0.3", "end": "10.0.0.6"}]
    neutron_error(
        network_client.put(f"/v2.0/subnets/{subnet['id']}", json={"subnet": {"cidr": "10.9.0.0/24"}}),
        400, "BadRequest",
    )  # fmt: skip
    now = utcnow()
    with network_service.db.write() as conn:
        conn.execute(
            ports.insert().values(
                id="p1", network_id=net["id"], project_id="admin", name="", description="",
                mac_address="fa:16:3e:00:00:01", admin_state_up=True, status="DOWN", device_id="",
                device_owner="", ip_allocation="immediate", binding_profile={},
                binding_vif_details={}, created_at=now,
            )
        )  # fmt: skip
        conn.execute(
            ip_allocations.insert().values(
                port_id="p1", subnet_id=subnet["id"], network_id=net["id"], ip_address="10.0.0.3"
            )
        )
    availability = network_client.get(f"/v2.0/network-ip-availabilities/{net['id']}").json()
    found = availability["network_ip_availability"]
    assert (found["total_ips"], found["used_ips"], found["network_name"]) == (4, 1, "n")
    listed = network_client.get("/v2.0/network-ip-availabilities", params={"ip_version": 6}).json()
    assert listed["network_ip_availabilities"] == []
    neutron_error(network_client.delete(f"/v2.0/subnets/{subnet['id']}"), 409, "SubnetInUse")
    with network_service.db.write() as conn:
        conn.execute(sa.delete(ports))
    assert network_client.delete(f"/v2.0/subnets/{subnet['id']}").status_code == 204
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        neutron_error(alice.get("/v2.0/network-ip-availabilities"), 403, "NotAuthorized")


def test_projects_see_subnets_of_their_own_and_shared_networks(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    shared = _network(network_client, shared=True)
    private = _network(network_client)
    for net, cidr in ((shared, "10.0.0.0/24"), (private, "10.1.0.0/24")):
        assert _subnet(network_client, network_id=net["id"], ip_version=4, cidr=cidr).is_success
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        seen = alice.get("/v2.0/subnets", params={"fields": "cidr"}).json()["subnets"]
        assert seen == [{"cidr": "10.0.0.0/24"}]
        refused = alice.post(
            "/v2.0/subnets",
            json={"subnet": {"network_id": shared["id"], "ip_version": 4, "cidr": "10.5.0.0/24"}},
        )
        neutron_error(refused, 403, "NotAuthorized")


def test_an_ipv6_64_counts_past_64_bits(network_client: httpx.Client) -> None:
    net = _network(network_client)
    assert _subnet(
        network_client, network_id=net["id"], ip_version=6, cidr="2001:db8::/64"
    ).is_success
    found = network_client.get(f"/v2.0/network-ip-availabilities/{net['id']}").json()
    # Every address but the subnet-router anycast one (::) and the gateway (::1).
    assert found["network_ip_availability"]["total_ips"] == 2**64 - 2
