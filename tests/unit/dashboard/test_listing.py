"""The capacity view's rows and listing at a thousand hosts: joined from Placement's providers
and Compute's nodes, filtered, sorted and paged on the server, quickly."""

from __future__ import annotations

import time

import pytest

from berth.dashboard.fleet import (
    EGRESS,
    INGRESS,
    Amount,
    HostRow,
    NodeRecord,
    ProviderUsage,
    host_rows,
)
from berth.dashboard.listing import BadQuery, HostQuery, select

HOSTS = 1000


def _fleet(hosts: int = HOSTS) -> list[HostRow]:
    """``hosts`` compute nodes over four cells, each with an OVS agent (packet rate) and a
    bridge; host i uses i % 17 of its 64 VCPU and (i * 7) % 100 of its bridge's 100 Mbit/s.
    Every fourth host is in aggregate ``rack-<i % 3>``; a segment provider hangs under none."""
    providers: list[ProviderUsage] = []
    nodes: list[NodeRecord] = []
    aggregates: dict[str, list[str]] = {}
    for i in range(hosts):
        name = f"host{i:04d}"
        root = f"root-{i}"
        agent = f"agent-{i}"
        nodes.append(NodeRecord(root, name, name, f"cell{i % 4}", enabled=i % 50 != 0, up=True))
        providers += [
            ProviderUsage(root, name, None, root, {
                "VCPU": Amount(i % 17, 64), "MEMORY_MB": Amount(1024 * (i % 5), 65536),
                "DISK_GB": Amount(0, 500)}),
            ProviderUsage(agent, f"{name}:Open vSwitch agent", root, root, {
                "NET_PACKET_RATE_KILOPACKET_PER_SEC": Amount(i % 3, 1000)}),
            ProviderUsage(f"bridge-{i}", f"{name}:Open vSwitch agent:br-ex", agent, root, {
                EGRESS: Amount((i * 7) % 100 * 1000, 100_000), INGRESS: Amount(0, 100_000)},
                frozenset({"CUSTOM_PHYSNET_PUBLIC" if i % 2 else "CUSTOM_PHYSNET_PHYSNET1",
                           "CUSTOM_VNIC_TYPE_NORMAL"})),
        ]  # fmt: skip
        if i % 4 == 0:
            aggregates[name] = [f"rack-{i % 3}"]
    providers.append(
        ProviderUsage("segment", "segment:x", None, "segment", {"IPV4_ADDRESS": Amount(0, 254)})
    )
    return host_rows(
        providers, nodes, aggregates, {}, {f"host{i:04d}": i % 9 for i in range(hosts)}
    )


@pytest.fixture(scope="module")
def fleet() -> list[HostRow]:
    return _fleet()


def _query(**values: str) -> HostQuery:
    return HostQuery.parse(list(values.items()))


def test_a_row_per_compute_node_with_its_trees_amounts() -> None:
    (row,) = [r for r in _fleet(20) if r.node.host == "host0007"]
    assert row.compute == {
        "VCPU": Amount(7, 64), "MEMORY_MB": Amount(2048, 65536), "DISK_GB": Amount(0, 500)
    }  # fmt: skip
    (device,) = row.devices
    assert (device.name, device.physnets) == ("Open vSwitch agent:br-ex", ("public",))
    assert (device.egress, device.ingress) == (Amount(49_000, 100_000), Amount(0, 100_000))
    assert row.packet_rate == {"NET_PACKET_RATE_KILOPACKET_PER_SEC": Amount(1, 1000)}
    assert (row.servers, row.node.cell) == (7, "cell3")


def test_the_first_page_of_a_thousand_hosts(fleet: list[HostRow]) -> None:
    page = select(fleet, _query())
    assert (page.matched, page.pages, len(page.rows)) == (HOSTS, 20, 50)
    assert [r.node.host for r in page.rows[:2]] == ["host0000", "host0001"]
    document = page.to_json()
    assert document["totals"]["VCPU"] == {
        "used": sum(i % 17 for i in range(HOSTS)),
        "capacity": 64 * HOSTS,
    }
    assert document["totals"][EGRESS]["capacity"] == 100_000 * HOSTS


def test_pages_cover_the_fleet_once(fleet: list[HostRow]) -> None:
    seen = []
    for number in range(1, 9):
        seen += [
            r.node.host
            for r in select(fleet, _query(sort="-vcpu", per_page="137", page=str(number))).rows
        ]
    assert len(seen) == len(set(seen)) == HOSTS
    assert select(fleet, _query(per_page="137", page="9")).rows == []


def test_sorts_by_how_full_a_resource_is(fleet: list[HostRow]) -> None:
    fullest = select(fleet, _query(sort="-vcpu", per_page="500")).rows
    shares = [r.compute["VCPU"].share for r in fullest]
    assert shares == sorted(shares, reverse=True) and shares[0] == 16 / 64
    # Equal shares stay in host name order, so pages are stable.
    tied = [r.node.host for r in fullest if r.compute["VCPU"].used == 16]
    assert tied == sorted(tied)
    emptiest = select(fleet, _query(sort="bandwidth")).rows[0]
    assert emptiest.bandwidth_share() == 0.0
    busiest = select(fleet, _query(sort="-servers")).rows[0]
    assert busiest.servers == 8


def test_filters_narrow_the_rows(fleet: list[HostRow]) -> None:
    assert select(fleet, _query(cell="cell2")).matched == 250
    assert select(fleet, _query(aggregate="rack-1")).matched == len(
        [i for i in range(HOSTS) if i % 4 == 0 and i % 3 == 1]
    )
    assert select(fleet, _query(physnet="PHYSNET1")).matched == 500
    assert [r.node.host for r in select(fleet, _query(q="HOST012")).rows] == [
        f"host012{d}" for d in range(10)
    ]
    both = select(fleet, _query(cell="cell1", q="host000")).rows
    assert [r.node.host for r in both] == ["host0001", "host0005", "host0009"]


def test_a_thousand_hosts_cost_milliseconds() -> None:
    started = time.perf_counter()
    rows = _fleet()
    for sort in ("host", "-vcpu", "-bandwidth", "packet_rate"):
        select(rows, _query(sort=sort, cell="cell1", page="2")).to_json()
    # A generous ceiling for a busy, shared machine; it takes a few tens of ms when idle.
    assert time.perf_counter() - started < 2.0


@pytest.mark.parametrize(
    ("items", "words"),
    [
        ([("sort", "-name")], "Cannot sort by 'name'"),
        ([("page", "-1")], "'page' must be 1 or more"),
        ([("per_page", "0")], "'per_page' must be 1 to 500"),
        ([("page", "1.5")], "whole number"),
        ([("limit", "5")], "Unknown query parameter 'limit'"),
        ([("cell", "a"), ("cell", "b")], "more than once"),
        ([("q", "x" * 256)], "longer than 255"),
    ],
)
def test_a_bad_query_says_why(items: list[tuple[str, str]], words: str) -> None:
    with pytest.raises(BadQuery, match=words):
        HostQuery.parse(items)
