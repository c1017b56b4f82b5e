"""What the conductor reads of the network service for a build's ports (conductor.ports)."""

from __future__ import annotations

from typing import Any, cast

from berth.compute.clients.network import NetworkClient
from berth.compute.conductor import ports
from berth.compute.objects.build import PortEntry

FLAT = {"id": "flat", "name": "public", "l2_adjacency": True}
ROUTED = {"id": "routed", "name": "racks", "l2_adjacency": False}
# As a network service without the segments extension answers: no l2_adjacency.
PLAIN = {"id": "plain", "name": "plain"}
SUBNETS = {
    "flat": [{"id": "s-flat", "segment_id": None}],
    "routed": [{"id": "s-rack1", "segment_id": "rack1"}, {"id": "s-rack2", "segment_id": "rack2"}],
    "plain": [{"id": "s-plain", "segment_id": None}],
}


class RecordingNetwork:
    """The calls the conductor makes, answered from the tables above."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def network(self, network_id: str) -> dict[str, Any]:
        self.calls.append(("network", network_id))
        return {"flat": FLAT, "routed": ROUTED, "plain": PLAIN}[network_id]

    def subnets(self, network_id: str) -> list[dict[str, Any]]:
        self.calls.append(("subnets", network_id))
        return SUBNETS[network_id]

    def port(self, port_id: str) -> dict[str, Any]:
        self.calls.append(("port", port_id))
        raise AssertionError("every port's binding answer is known")


def port(port_id: str, network_id: str, subnet_id: str) -> dict[str, Any]:
    return {
        "id": port_id,
        "network_id": network_id,
        "fixed_ips": [{"subnet_id": subnet_id, "ip_address": "10.0.0.5"}],
        "mac_address": "fa:16:3e:00:00:01",
    }


def test_ports_of_one_l2_network_read_it_once_and_no_subnets() -> None:
    network = RecordingNetwork()
    answered = [port("p1", "flat", "s-flat"), port("p2", "flat", "s-flat")]
    networks: dict[str, Any] = {}
    found = ports.requests(cast(NetworkClient, network), answered, networks)
    assert [r.segment_aggregates for r in found] == [(), ()]
    assert network.calls == [("network", "flat")]
    entries = [PortEntry(p["id"], p["network_id"], p["mac_address"]) for p in answered]
    info = ports.refreshed(
        cast(NetworkClient, network), entries, {p["id"]: p for p in answered}, networks
    )
    # The names come from the networks read for the requests: nothing is read again.
    assert [e.network_name for e in info] == ["public", "public"]
    assert network.calls == [("network", "flat")]


def test_a_routed_network_port_keeps_to_its_subnet_segment() -> None:
    network = RecordingNetwork()
    (found,) = ports.requests(cast(NetworkClient, network), [port("p1", "routed", "s-rack2")])
    assert found.segment_aggregates == ("rack2",)
    assert network.calls == [("network", "routed"), ("subnets", "routed")]


def test_without_l2_adjacency_the_subnets_tell() -> None:
    network = RecordingNetwork()
    (found,) = ports.requests(cast(NetworkClient, network), [port("p1", "plain", "s-plain")])
    assert found.segment_aggregates == ()
    assert network.calls == [("network", "plain"), ("subnets", "plain")]


def test_refreshed_reads_the_networks_it_was_not_given() -> None:
    network = RecordingNetwork()
    answered = port("p1", "routed", "s-rack1")
    entry = PortEntry("p1", "routed", answered["mac_address"])
    (info,) = ports.refreshed(cast(NetworkClient, network), [entry], {"p1": answered})
    assert (info.network_name, info.fixed_ips) == ("racks", tuple(answered["fixed_ips"]))
    assert network.calls == [("network", "routed")]
