"""The lowest free address found in SQL from the used addresses' offsets, on every database
backend: the same answer as the set of every used address gives (``ipam.allocate_lowest``), and
the offsets kept by every way an address is taken and by the migration that added them."""

from __future__ import annotations

import ipaddress
from pathlib import Path
from typing import Any

import httpx
import pytest
import sqlalchemy as sa
from alembic import command
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.common.db import Database
from berth.network.store import subnets as subnet_store
from berth.network.store.migrate import MIGRATIONS
from berth.network.store.schema import ip_allocations
from tests.functional.network.calls import post_made


@pytest.fixture
def subnet(network_client: httpx.Client) -> dict[str, Any]:
    net = post_made(network_client, "/v2.0/networks", "network", name="n")
    made = post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=4, cidr="10.0.0.0/24",
    )  # fmt: skip
    port = post_made(network_client, "/v2.0/ports", "port", network_id=net["id"], fixed_ips=[])
    return {**made, "port_id": port["id"]}


@pytest.mark.parametrize(
    ("used", "first", "last", "lowest"),
    [
        (set(), 5, 9, 5),
        (set(range(5, 20)), 5, 30, 20),
        (set(range(5, 20)), 5, 19, None),
        (set(range(5, 20)) - {12}, 5, 30, 12),
        (set(range(6, 20)), 5, 30, 5),
        ({5, 6, 7, 40}, 5, 50, 8),
        ({3, 4}, 5, 9, 5),
    ],
)
def test_runs_and_holes(
    network_db: Database,
    subnet: dict[str, Any],
    used: set[int],
    first: int,
    last: int,
    lowest: int | None,
) -> None:
    with network_db.write() as conn:
        _use(conn, subnet, used)
        assert subnet_store.lowest_unused(conn, subnet["id"], first, last) == lowest


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    run=st.tuples(st.integers(0, 40), st.integers(0, 30)),
    scattered=st.sets(st.integers(0, 80), max_size=10),
    released=st.sets(st.integers(0, 80), max_size=3),
    first=st.integers(0, 40),
    length=st.integers(0, 40),
)
def test_the_lowest_unused_offset_in_sql_is_the_sets(
    network_db: Database,
    subnet: dict[str, Any],
    run: tuple[int, int],
    scattered: set[int],
    released: set[int],
    first: int,
    length: int,
) -> None:
    """Against the set of used offsets: runs taken one after another, with addresses taken
    here and there and some released."""
    used = (set(range(run[0], run[0] + run[1])) | scattered) - released
    last = first + length
    with network_db.write() as conn:
        _use(conn, subnet, used)
        found = subnet_store.lowest_unused(conn, subnet["id"], first, last)
    assert found == next((o for o in range(first, last + 1) if o not in used), None)


def _use(conn: sa.Connection, subnet: dict[str, Any], offsets: set[int]) -> None:
    """The subnet's used addresses made those of ``offsets`` (all the port's: it matters not)."""
    rows = [
        {
            "port_id": subnet["port_id"], "subnet_id": subnet["id"],
            "network_id": subnet["network_id"], "ip_address": f"10.0.0.{o}", "ip_offset": o,
        }
        for o in offsets
    ]  # fmt: skip
    conn.execute(ip_allocations.delete())
    if rows:
        conn.execute(ip_allocations.insert(), rows)


def _offsets(db: Database) -> dict[str, int | None]:
    with db.read() as conn:
        query = sa.select(ip_allocations.c.ip_address, ip_allocations.c.ip_offset)
        return {address: offset for address, offset in conn.execute(query)}


def test_every_way_of_taking_an_address_keeps_its_offset(
    network_client: httpx.Client, network_db: Database
) -> None:
    net = post_made(network_client, "/v2.0/networks", "network", name="n")
    v4 = post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=4, cidr="10.1.0.0/24",
    )  # fmt: skip
    post_made(
        network_client, "/v2.0/subnets", "subnet", network_id=net["id"], ip_version=6,
        cidr="2001:db8::/64", ipv6_address_mode="slaac", ipv6_ra_mode="slaac",
    )  # fmt: skip
    post_made(network_client, "/v2.0/ports", "port", network_id=net["id"])
    post_made(
        network_client, "/v2.0/ports", "port",
        network_id=net["id"], fixed_ips=[{"subnet_id": v4["id"], "ip_address": "10.1.0.9"}],
    )  # fmt: skip
    router = post_made(network_client, "/v2.0/routers", "router", name="r")
    plugged = network_client.put(
        f"/v2.0/routers/{router['id']}/add_router_interface", json={"subnet_id": v4["id"]}
    )
    assert plugged.status_code == 200, plugged.text
    offsets = _offsets(network_db)
    v6 = next(a for a in offsets if ":" in a)
    # The EUI-64 address of a fa:16:3e MAC lies in the far half of its /64 (the MAC's first
    # byte has its top bit set), beyond the offsets the store keeps.
    assert int(ipaddress.IPv6Address(v6)) - int(ipaddress.IPv6Address("2001:db8::")) >= 2**63
    assert offsets == {"10.1.0.2": 2, "10.1.0.9": 9, "10.1.0.1": 1, v6: None}


def test_released_addresses_are_taken_again_lowest_first(
    network_client: httpx.Client, subnet: dict[str, Any]
) -> None:
    made = [
        post_made(network_client, "/v2.0/ports", "port", network_id=subnet["network_id"])
        for _ in range(4)
    ]
    assert [p["fixed_ips"][0]["ip_address"] for p in made] == [f"10.0.0.{i}" for i in (2, 3, 4, 5)]
    for port in (made[2], made[0]):
        assert network_client.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    again = [
        post_made(network_client, "/v2.0/ports", "port", network_id=subnet["network_id"])
        for _ in range(3)
    ]
    assert [p["fixed_ips"][0]["ip_address"] for p in again] == ["10.0.0.2", "10.0.0.4", "10.0.0.6"]


def test_the_migration_gives_stored_addresses_their_offsets(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'network.db'}")
    try:
        with db.engine.begin() as conn:
            command.upgrade(MIGRATIONS._config(conn), "0006")
        with db.write() as conn:
            conn.execute(
                sa.text(
                    "INSERT INTO networks (id, project_id, name, description, admin_state_up, "
                    "status, mtu, revision_number, created_at) "
                    "VALUES ('n', 'p', '', '', 1, 'ACTIVE', 1450, 0, '2026-11-27 00:00:00')"
                )
            )
            for subnet_id, version, cidr in (("s4", 4, "10.0.0.0/24"), ("s6", 6, "2001:db8::/64")):
                conn.execute(
                    sa.text(
                        "INSERT INTO subnets (id, project_id, network_id, name, description, "
                        "ip_version, cidr, gateway_ip, allocation_pools, enable_dhcp, "
                        "dns_nameservers, host_routes, revision_number, created_at) VALUES "
                        "(:id, 'p', 'n', '', '', :version, :cidr, NULL, '[]', 1, '[]', '[]', 0, "
                        "'2026-11-27 00:00:00')"
                    ),
                    {"id": subnet_id, "version": version, "cidr": cidr},
                )
            conn.execute(
                sa.text(
                    "INSERT INTO ports (id, project_id, network_id, name, description, "
                    "admin_state_up, status, mac_address, device_id, device_owner, "
                    "ip_allocation, binding_host, binding_vnic_type, binding_profile, "
                    "binding_vif_type, binding_vif_details, revision_number, created_at) "
                    "VALUES ('port', 'p', 'n', '', '', 1, 'DOWN', 'fa:16:3e:00:00:01', '', '', "
                    "'immediate', '', 'normal', '{}', 'unbound', '{}', 0, '2026-11-27 00:00:00')"
                )
            )
            for subnet_id, address in (
                ("s4", "10.0.0.7"),
                ("s6", "2001:db8::5"),
                ("s6", "2001:db8::ffff:0:0:1"),
            ):
                conn.execute(
                    sa.text(
                        "INSERT INTO ip_allocations (port_id, subnet_id, network_id, ip_address) "
                        "VALUES ('port', :subnet, 'n', :address)"
                    ),
                    {"subnet": subnet_id, "address": address},
                )
        assert MIGRATIONS.upgrade(db) is True
        assert _offsets(db) == {"10.0.0.7": 7, "2001:db8::5": 5, "2001:db8::ffff:0:0:1": None}
    finally:
        db.dispose()


def test_an_ipv6_subnet_hands_out_its_lowest_addresses(network_client: httpx.Client) -> None:
    """A /64's pool runs to the end of what the store keeps offsets of, and past it."""
    net = post_made(network_client, "/v2.0/networks", "network", name="v6")
    post_made(
        network_client, "/v2.0/subnets", "subnet",
        network_id=net["id"], ip_version=6, cidr="2001:db8::/64",
    )  # fmt: skip
    made = [
        post_made(network_client, "/v2.0/ports", "port", network_id=net["id"]) for _ in range(3)
    ]
    assert [p["fixed_ips"][0]["ip_address"] for p in made] == [
        "2001:db8::2", "2001:db8::3", "2001:db8::4"
    ]  # fmt: skip


def test_an_address_taken_without_its_offset_is_not_chosen_again(
    network_client: httpx.Client, network_db: Database, subnet: dict[str, Any]
) -> None:
    """A process older than the offsets (during an upgrade) takes the lowest address: the next
    port still gets one (the retry reads every used address), not IpAddressGenerationFailure."""
    with network_db.write() as conn:
        conn.execute(
            ip_allocations.insert().values(
                port_id=subnet["port_id"], subnet_id=subnet["id"],
                network_id=subnet["network_id"], ip_address="10.0.0.2",
            )
        )  # fmt: skip
    port = post_made(network_client, "/v2.0/ports", "port", network_id=subnet["network_id"])
    assert port["fixed_ips"][0]["ip_address"] == "10.0.0.3"
