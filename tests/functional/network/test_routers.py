"""/v2.0/routers and /v2.0/floatingips over HTTP: gateways on external networks, interfaces on
subnets and ports, extra routes, floating IPs and their associations, and what each keeps from
being deleted."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error, post_made


@pytest.fixture
def alice(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as client:
        yield client


@pytest.fixture
def bob(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "bob", roles=MEMBER_ROLES) as client:
        yield client


def _network(client: httpx.Client, cidr: str, **body: Any) -> tuple[str, dict[str, Any]]:
    net = post_made(client, "/v2.0/networks", "network", **body)
    subnet = post_made(
        client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=4, cidr=cidr
    )
    return net["id"], subnet


@pytest.fixture
def public(network_client: httpx.Client) -> tuple[str, dict[str, Any]]:
    """The admin's external network with 203.0.113.0/28 (pool .2 to .14)."""
    return _network(network_client, "203.0.113.0/28", **{"router:external": True})


def _router(client: httpx.Client, **body: Any) -> dict[str, Any]:
    return post_made(client, "/v2.0/routers", "router", **body)


def _plug(client: httpx.Client, router_id: str, **body: str) -> httpx.Response:
    return client.put(f"/v2.0/routers/{router_id}/add_router_interface", json=body)


def _unplug(client: httpx.Client, router_id: str, **body: str) -> httpx.Response:
    return client.put(f"/v2.0/routers/{router_id}/remove_router_interface", json=body)


def test_a_router_with_a_gateway_holds_an_external_address(
    network_client: httpx.Client, alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> None:
    net_id, subnet = public
    router = _router(alice, name="r1", external_gateway_info={"network_id": net_id})
    gateway = router["external_gateway_info"]
    assert gateway["network_id"] == net_id and gateway["enable_snat"] is True
    assert gateway["external_fixed_ips"] == [
        {"subnet_id": subnet["id"], "ip_address": "203.0.113.2"}
    ]
    assert router["status"] == "ACTIVE" and router["project_id"] == "alice"
    # The gateway port is nobody's project's: only an admin sees it.
    listed = network_client.get("/v2.0/ports", params={"device_id": router["id"]}).json()
    assert [p["device_owner"] for p in listed["ports"]] == ["network:router_gateway"]
    assert alice.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"] == []
    # Clearing the gateway gives the address back.
    cleared = alice.put(
        f"/v2.0/routers/{router['id']}", json={"router": {"external_gateway_info": {}}}
    )
    assert cleared.json()["router"]["external_gateway_info"] is None
    assert (
        network_client.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"] == []
    )


def test_the_gateway_must_be_an_external_network_and_snat_is_the_admins(
    network_client: httpx.Client, alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> None:
    private, _ = _network(alice, "10.0.0.0/24")
    missing = "00000000-0000-0000-0000-000000000001"
    answer = alice.post(
        "/v2.0/routers", json={"router": {"external_gateway_info": {"network_id": missing}}}
    )
    neutron_error(answer, 404, "NetworkNotFound")
    answer = alice.post(
        "/v2.0/routers", json={"router": {"external_gateway_info": {"network_id": private}}}
    )
    assert "not an external network" in neutron_error(answer, 400, "BadRequest")
    for extra in ({"enable_snat": False}, {"external_fixed_ips": [{"subnet_id": public[1]["id"]}]}):
        body = {"external_gateway_info": {"network_id": public[0], **extra}}
        neutron_error(alice.post("/v2.0/routers", json={"router": body}), 403, "NotAuthorized")
    router = _router(
        network_client,
        external_gateway_info={
            "network_id": public[0],
            "enable_snat": False,
            "external_fixed_ips": [{"ip_address": "203.0.113.9"}],
        },
    )
    assert router["external_gateway_info"]["enable_snat"] is False
    assert router["external_gateway_info"]["external_fixed_ips"][0]["ip_address"] == "203.0.113.9"
    # The address is taken: a second router cannot have it.
    body = {
        "external_gateway_info": {
            "network_id": public[0],
            "external_fixed_ips": [{"ip_address": "203.0.113.9"}],
        }
    }
    neutron_error(
        network_client.post("/v2.0/routers", json={"router": body}), 409, "IpAddressInUse"
    )


def test_an_interface_on_a_subnet_takes_its_gateway_address(alice: httpx.Client) -> None:
    net_id, subnet = _network(alice, "10.0.0.0/24")
    router = _router(alice)
    answer = _plug(alice, router["id"], subnet_id=subnet["id"])
    assert answer.status_code == 200, answer.text
    info = answer.json()
    assert info["subnet_id"] == subnet["id"] and info["network_id"] == net_id
    port = alice.get(f"/v2.0/ports/{info['port_id']}").json()["port"]
    assert port["fixed_ips"] == [{"subnet_id": subnet["id"], "ip_address": "10.0.0.1"}]
    assert (port["device_id"], port["device_owner"], port["status"]) == (
        router["id"], "network:router_interface", "ACTIVE",
    )  # fmt: skip
    listed = alice.get("/v2.0/ports", params={"device_id": router["id"]}).json()["ports"]
    assert [p["id"] for p in listed] == [info["port_id"]]
    # The interface keeps its router, subnet, network and port from going.
    neutron_error(alice.delete(f"/v2.0/routers/{router['id']}"), 409, "RouterInUse")
    neutron_error(alice.delete(f"/v2.0/subnets/{subnet['id']}"), 409, "SubnetInUse")
    neutron_error(alice.delete(f"/v2.0/networks/{net_id}"), 409, "NetworkInUse")
    neutron_error(alice.delete(f"/v2.0/ports/{info['port_id']}"), 409, "ServicePortInUse")
    # Twice on one subnet is a 400.
    neutron_error(_plug(alice, router["id"], subnet_id=subnet["id"]), 400, "BadRequest")
    removed = _unplug(alice, router["id"], subnet_id=subnet["id"])
    assert removed.status_code == 200 and removed.json()["port_id"] == info["port_id"]
    assert alice.get(f"/v2.0/ports/{info['port_id']}").status_code == 404
    neutron_error(
        _unplug(alice, router["id"], subnet_id=subnet["id"]),
        404,
        "RouterInterfaceNotFoundForSubnet",
    )
    assert alice.delete(f"/v2.0/routers/{router['id']}").status_code == 204


def test_an_interface_on_a_port_and_overlapping_subnets(alice: httpx.Client) -> None:
    net_id, subnet = _network(alice, "10.0.0.0/24")
    _, overlapping = _network(alice, "10.0.0.0/25")
    router = _router(alice)
    port = post_made(alice, "/v2.0/ports", "port", network_id=net_id)
    info = _plug(alice, router["id"], port_id=port["id"]).json()
    assert info["port_id"] == port["id"] and info["subnet_ids"] == [subnet["id"]]
    shown = alice.get(f"/v2.0/ports/{port['id']}").json()["port"]
    assert shown["device_id"] == router["id"]
    message = neutron_error(
        _plug(alice, router["id"], subnet_id=overlapping["id"]), 400, "BadRequest"
    )
    assert "overlaps" in message
    # A port that is another device's cannot be plugged.
    other = post_made(alice, "/v2.0/ports", "port", network_id=net_id, device_id="vm-1")
    neutron_error(_plug(alice, router["id"], port_id=other["id"]), 409, "PortInUse")
    neutron_error(_unplug(alice, router["id"], port_id=other["id"]), 404, "RouterInterfaceNotFound")
    neutron_error(_plug(alice, router["id"]), 400, "BadRequest")
    # The body is judged before the router is looked up.
    unknown = "00000000-0000-0000-0000-000000000001"
    neutron_error(_plug(alice, unknown, subnet_id="not-a-uuid"), 400, "InvalidInput")
    neutron_error(_plug(alice, unknown, subnet_id=subnet["id"]), 404, "RouterNotFound")
    assert _unplug(alice, router["id"], port_id=port["id"]).status_code == 200
    # Removing an interface deletes its port, as upstream.
    assert alice.get(f"/v2.0/ports/{port['id']}").status_code == 404


def test_extra_routes_need_a_connected_nexthop(alice: httpx.Client) -> None:
    _, subnet = _network(alice, "10.0.0.0/24")
    router = _router(alice)
    route = {"destination": "192.168.0.0/16", "nexthop": "10.0.0.5"}
    body = {"router": {"routes": [route]}}
    assert "not connected" in neutron_error(
        alice.put(f"/v2.0/routers/{router['id']}", json=body), 400, "BadRequest"
    )
    _plug(alice, router["id"], subnet_id=subnet["id"])
    answer = alice.put(f"/v2.0/routers/{router['id']}", json=body)
    assert answer.json()["router"]["routes"] == [route]
    neutron_error(
        _unplug(alice, router["id"], subnet_id=subnet["id"]), 409, "RouterInterfaceInUseByRoute"
    )
    cleared = alice.put(f"/v2.0/routers/{router['id']}", json={"router": {"routes": None}})
    assert cleared.json()["router"]["routes"] == []
    bad = {"router": {"routes": [{"destination": "nowhere", "nexthop": "10.0.0.5"}]}}
    neutron_error(alice.put(f"/v2.0/routers/{router['id']}", json=bad), 400, "InvalidInput")


def test_routers_are_their_projects(alice: httpx.Client, bob: httpx.Client) -> None:
    router = _router(alice, name="mine")
    neutron_error(bob.get(f"/v2.0/routers/{router['id']}"), 404, "RouterNotFound")
    neutron_error(
        bob.put(f"/v2.0/routers/{router['id']}", json={"router": {"name": "x"}}),
        404,
        "RouterNotFound",
    )
    assert bob.get("/v2.0/routers").json()["routers"] == []
    listed = alice.get("/v2.0/routers", params={"name": "mine", "fields": ["id", "name"]}).json()
    assert listed["routers"] == [{"id": router["id"], "name": "mine"}]
    neutron_error(
        alice.post("/v2.0/routers", json={"router": {"distributed": True}}), 400, "BadRequest"
    )


def _reachable(
    alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> tuple[dict[str, Any], dict[str, Any], dict[str, Any]]:
    """A router of alice's with its gateway on ``public`` and an interface on a subnet with a
    port: (router, subnet, port)."""
    net_id, subnet = _network(alice, "10.0.0.0/24")
    router = _router(alice, external_gateway_info={"network_id": public[0]})
    assert _plug(alice, router["id"], subnet_id=subnet["id"]).status_code == 200
    port = post_made(alice, "/v2.0/ports", "port", network_id=net_id)
    return router, subnet, port


def test_a_floating_ip_is_an_external_address_associated_through_a_router(
    network_client: httpx.Client, alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> None:
    router, subnet, port = _reachable(alice, public)
    fip = post_made(alice, "/v2.0/floatingips", "floatingip", floating_network_id=public[0])
    # .2 is the router's gateway.
    assert fip["floating_ip_address"] == "203.0.113.3"
    assert (fip["port_id"], fip["router_id"], fip["status"]) == (None, None, "DOWN")
    answer = alice.put(
        f"/v2.0/floatingips/{fip['id']}", json={"floatingip": {"port_id": port["id"]}}
    )
    associated = answer.json()["floatingip"]
    assert associated["router_id"] == router["id"] and associated["status"] == "ACTIVE"
    assert associated["fixed_ip_address"] == port["fixed_ips"][0]["ip_address"]
    assert associated["port_details"]["mac_address"] == port["mac_address"]
    # What the floating IP goes through cannot go.
    neutron_error(
        _unplug(alice, router["id"], subnet_id=subnet["id"]),
        409,
        "RouterInterfaceInUseByFloatingIP",
    )
    body = {"router": {"external_gateway_info": None}}
    neutron_error(
        alice.put(f"/v2.0/routers/{router['id']}", json=body),
        409,
        "RouterExternalGatewayInUseByFloatingIp",
    )
    body = {"network": {"router:external": False}}
    neutron_error(
        network_client.put(f"/v2.0/networks/{public[0]}", json=body), 409, "RbacPolicyInUse"
    )
    # A second floating IP on the same fixed address is refused.
    answer = alice.post(
        "/v2.0/floatingips",
        json={"floatingip": {"floating_network_id": public[0], "port_id": port["id"]}},
    )
    neutron_error(answer, 409, "FloatingIPPortAlreadyAssociated")
    # Deleting the port leaves the floating IP, associated with nothing.
    assert alice.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    shown = alice.get(f"/v2.0/floatingips/{fip['id']}").json()["floatingip"]
    assert (shown["port_id"], shown["fixed_ip_address"], shown["router_id"]) == (None, None, None)
    assert alice.delete(f"/v2.0/floatingips/{fip['id']}").status_code == 204
    assert (
        network_client.get("/v2.0/ports", params={"device_owner": "network:floatingip"}).json()[
            "ports"
        ]
        == []
    )


def test_a_floating_ip_needs_a_router_between(
    network_client: httpx.Client,
    alice: httpx.Client,
    bob: httpx.Client,
    public: tuple[str, dict[str, Any]],
) -> None:
    net_id, _ = _network(alice, "10.1.0.0/24")
    lonely = post_made(alice, "/v2.0/ports", "port", network_id=net_id)
    body = {"floating_network_id": public[0], "port_id": lonely["id"]}
    neutron_error(
        alice.post("/v2.0/floatingips", json={"floatingip": body}),
        404,
        "ExternalGatewayForFloatingIPNotFound",
    )
    private, _ = _network(alice, "10.2.0.0/24")
    neutron_error(
        alice.post("/v2.0/floatingips", json={"floatingip": {"floating_network_id": private}}),
        400,
        "BadRequest",
    )
    # Choosing the address is the admin's.
    body = {"floating_network_id": public[0], "floating_ip_address": "203.0.113.10"}
    neutron_error(alice.post("/v2.0/floatingips", json={"floatingip": body}), 403, "NotAuthorized")
    chosen = post_made(network_client, "/v2.0/floatingips", "floatingip", **body)
    assert chosen["floating_ip_address"] == "203.0.113.10"
    # Another project's floating IPs are not seen.
    mine = post_made(alice, "/v2.0/floatingips", "floatingip", floating_network_id=public[0])
    assert bob.get("/v2.0/floatingips").json()["floatingips"] == []
    neutron_error(bob.get(f"/v2.0/floatingips/{mine['id']}"), 404, "FloatingIPNotFound")
    # The floating IP's address port is the service's: not deleted through the port API.
    (held,) = network_client.get("/v2.0/ports", params={"device_id": mine["id"]}).json()["ports"]
    neutron_error(network_client.delete(f"/v2.0/ports/{held['id']}"), 409, "ServicePortInUse")


def test_router_and_floating_ip_quotas(
    network_client: httpx.Client, alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> None:
    limits = {"quota": {"router": 1, "floatingip": 1}}
    assert network_client.put("/v2.0/quotas/alice", json=limits).status_code == 200
    _router(alice)
    neutron_error(alice.post("/v2.0/routers", json={"router": {}}), 409, "OverQuota")
    post_made(alice, "/v2.0/floatingips", "floatingip", floating_network_id=public[0])
    body = {"floatingip": {"floating_network_id": public[0]}}
    neutron_error(alice.post("/v2.0/floatingips", json=body), 409, "OverQuota")
    details = alice.get("/v2.0/quotas/alice/details").json()["quota"]
    assert details["router"]["used"] == 1 and details["floatingip"]["used"] == 1


def test_an_external_network_goes_with_its_unassociated_floating_ips(
    network_client: httpx.Client, alice: httpx.Client, public: tuple[str, dict[str, Any]]
) -> None:
    router, _, port = _reachable(alice, public)
    body = {"floating_network_id": public[0], "port_id": port["id"]}
    associated = post_made(alice, "/v2.0/floatingips", "floatingip", **body)
    loose = post_made(alice, "/v2.0/floatingips", "floatingip", floating_network_id=public[0])
    # The router's gateway and the associated floating IP hold the network.
    neutron_error(network_client.delete(f"/v2.0/networks/{public[0]}"), 409, "NetworkInUse")
    assert alice.get(f"/v2.0/floatingips/{loose['id']}").status_code == 200
    assert alice.delete(f"/v2.0/floatingips/{associated['id']}").status_code == 204
    gateway_off = {"router": {"external_gateway_info": None}}
    assert alice.put(f"/v2.0/routers/{router['id']}", json=gateway_off).status_code == 200
    assert network_client.delete(f"/v2.0/networks/{public[0]}").status_code == 204
    neutron_error(alice.get(f"/v2.0/floatingips/{loose['id']}"), 404, "FloatingIPNotFound")
