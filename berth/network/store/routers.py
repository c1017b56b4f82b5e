"""Routers and floating IPs in the network database.

A router's gateway and interfaces are rows of ``ports`` (device_id the router's id); a floating
IP's address is held by a port of its external network. This module reads and writes the two
tables of their own, and finds the ports and addresses that tie them to the rest.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any, Final

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common.timeutils import utcnow
from berth.network.store.schema import floatingips, ip_allocations, ports, routers

GATEWAY: Final = "network:router_gateway"
INTERFACE: Final = "network:router_interface"
FLOATING: Final = "network:floatingip"


# -- routers --------------------------------------------------------------------------------------


def insert_router(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(routers.insert().values(revision_number=0, created_at=utcnow(), **values))


def get_router(conn: Connection, router_id: str) -> RowMapping | None:
    return conn.execute(sa.select(routers).where(routers.c.id == router_id)).mappings().first()


def list_routers(conn: Connection, visible_to: str | None) -> list[RowMapping]:
    query = sa.select(routers).order_by(routers.c.id)
    if visible_to is not None:
        query = query.where(routers.c.project_id == visible_to)
    return list(conn.execute(query).mappings())


def update_router(conn: Connection, router_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(
        routers.update()
        .where(routers.c.id == router_id)
        .values(updated_at=utcnow(), revision_number=routers.c.revision_number + 1, **values)
    )


def delete_router(conn: Connection, router_id: str) -> None:
    conn.execute(routers.delete().where(routers.c.id == router_id))


def router_ports(
    conn: Connection, router_ids: Collection[str], owner: str
) -> dict[str, list[RowMapping]]:
    """The gateway or interface ports of each router, by router."""
    query = (
        sa.select(ports)
        .where(ports.c.device_id.in_(list(router_ids)), ports.c.device_owner == owner)
        .order_by(ports.c.created_at, ports.c.id)
    )
    found: dict[str, list[RowMapping]] = {}
    for row in conn.execute(query).mappings():
        found.setdefault(row["device_id"], []).append(row)
    return found


def interface_subnet_routers(conn: Connection, subnet_ids: Collection[str]) -> dict[str, set[str]]:
    """The routers with an interface on each subnet, by subnet."""
    query = (
        sa.select(ip_allocations.c.subnet_id, ports.c.device_id)
        .join(ports, ports.c.id == ip_allocations.c.port_id)
        .where(ip_allocations.c.subnet_id.in_(list(subnet_ids)), ports.c.device_owner == INTERFACE)
    )
    found: dict[str, set[str]] = {}
    for subnet_id, router_id in conn.execute(query):
        found.setdefault(subnet_id, set()).add(router_id)
    return found


# -- floating IPs ---------------------------------------------------------------------------------


def insert_floatingip(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(floatingips.insert().values(revision_number=0, created_at=utcnow(), **values))


def get_floatingip(conn: Connection, floatingip_id: str) -> RowMapping | None:
    query = sa.select(floatingips).where(floatingips.c.id == floatingip_id)
    return conn.execute(query).mappings().first()


def list_floatingips(conn: Connection, visible_to: str | None) -> list[RowMapping]:
    query = sa.select(floatingips).order_by(floatingips.c.id)
    if visible_to is not None:
        query = query.where(floatingips.c.project_id == visible_to)
    return list(conn.execute(query).mappings())


def floatingips_where(conn: Connection, **equal: str) -> list[RowMapping]:
    """Floating IPs whose columns have the values given (``port_id=...``, ``router_id=...``)."""
    query = sa.select(floatingips).order_by(floatingips.c.id)
    for column, value in equal.items():
        query = query.where(floatingips.c[column] == value)
    return list(conn.execute(query).mappings())


def update_floatingip(conn: Connection, floatingip_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(
        floatingips.update()
        .where(floatingips.c.id == floatingip_id)
        .values(updated_at=utcnow(), revision_number=floatingips.c.revision_number + 1, **values)
    )


def delete_floatingip(conn: Connection, floatingip_id: str) -> None:
    conn.execute(floatingips.delete().where(floatingips.c.id == floatingip_id))


def disassociate_port(conn: Connection, port_id: str) -> None:
    """The port is going: the floating IPs on it stay, associated with nothing."""
    found = floatingips_where(conn, port_id=port_id)
    for row in found:
        update_floatingip(
            conn,
            row["id"],
            {"port_id": None, "fixed_ip_address": None, "router_id": None, "status": "DOWN"},
        )


def routers_with_gateway(conn: Connection, network_id: str) -> set[str]:
    """The routers whose gateway is on the external network."""
    query = sa.select(routers.c.id).where(routers.c.gw_network_id == network_id)
    return set(conn.execute(query).scalars())


def external_users(conn: Connection, network_id: str) -> set[str]:
    """The projects whose routers have their gateway, or whose floating IPs their address, on
    the network."""
    gateways = sa.select(routers.c.project_id).where(routers.c.gw_network_id == network_id)
    floating = sa.select(floatingips.c.project_id).where(
        floatingips.c.floating_network_id == network_id
    )
    return set(conn.execute(gateways).scalars()) | set(conn.execute(floating).scalars())
