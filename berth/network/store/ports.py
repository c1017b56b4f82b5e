"""Ports, their addresses and their bindings in the network database.

The port row holds the active binding; ``port_bindings`` holds inactive ones (another host, while
a server moves). An address is taken by inserting its ``ip_allocations`` row: the unique
(subnet, address) constraint settles two ports racing for one address.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.common.db import inserted
from berth.common.timeutils import utcnow
from berth.network.store.schema import ip_allocations, networks, port_bindings, ports

# The statements every port request runs, built once and run on the driver's cursor
# (``berth.common.direct``): SQLAlchemy's own work around each cost more than SQLite takes to
# run it.
_INSERT = ports.insert()
_BY_ID = sa.select(ports).where(ports.c.id == sa.bindparam("port_id"))
_BY_ID_LOCKED = _BY_ID.with_for_update()
_UPDATE = (
    ports.update()
    .where(ports.c.id == sa.bindparam("port_id"))
    .values(revision_number=ports.c.revision_number + 1)
)
_ADDRESS_COLUMNS = (
    ip_allocations.c.port_id, ip_allocations.c.subnet_id, ip_allocations.c.ip_address
)  # fmt: skip
_FIXED_IPS = (
    sa.select(*_ADDRESS_COLUMNS)
    .where(ip_allocations.c.port_id.in_(sa.bindparam("port_ids", expanding=True)))
    .order_by(ip_allocations.c.id)
)
# One port's (every port request's), without an expanding IN, which is rendered at each run.
_FIXED_IPS_OF_ONE = (
    sa.select(*_ADDRESS_COLUMNS)
    .where(ip_allocations.c.port_id == sa.bindparam("port_id"))
    .order_by(ip_allocations.c.id)
)
_TAKE_ADDRESS = ip_allocations.insert()


def insert(conn: Connection, values: Mapping[str, Any]) -> bool:
    """Insert a port; False when its MAC address is taken on its network."""
    row = {"revision_number": 0, "created_at": utcnow(), **values}
    return inserted(conn, _INSERT, row, on_cursor=True)


def get(conn: Connection, port_id: str) -> Mapping[str, Any] | None:
    """The port's row by column name, None when there is no such port."""
    return next(iter(direct.mappings(conn, _BY_ID, {"port_id": port_id})), None)


def get_for_update(conn: Connection, port_id: str) -> Mapping[str, Any] | None:
    """The port, locked against other writers until the transaction ends (bindings, addresses)."""
    query = _BY_ID if conn.dialect.name == "sqlite" else _BY_ID_LOCKED
    return next(iter(direct.mappings(conn, query, {"port_id": port_id})), None)


def list_visible(
    conn: Connection, visible_to: str | None, equal: Mapping[str, list[str]] | None = None
) -> list[RowMapping]:
    """Ports a project owns or that are on its networks (all when ``visible_to`` is None),
    narrowed in SQL by equality filters on plain columns (``device_id``, ``network_id``...)."""
    query = sa.select(ports).order_by(ports.c.id)
    if visible_to is not None:
        owned = sa.select(networks.c.id).where(networks.c.project_id == visible_to)
        query = query.where(sa.or_(ports.c.project_id == visible_to, ports.c.network_id.in_(owned)))
    for column, values in (equal or {}).items():
        query = query.where(ports.c[column].in_(values))
    return list(conn.execute(query).mappings())


def update(conn: Connection, port_id: str, values: Mapping[str, Any]) -> dt.datetime:
    """Change the port (its revision grows by one); returns the time stamped on it."""
    stamp = utcnow()
    direct.execute(conn, _UPDATE, {"port_id": port_id, "updated_at": stamp, **values})
    return stamp


def mac_taken(conn: Connection, network_id: str, mac: str) -> bool:
    query = sa.select(ports.c.id).where(
        ports.c.network_id == network_id, ports.c.mac_address == mac
    )
    return conn.execute(query.limit(1)).first() is not None


def delete(conn: Connection, port_id: str) -> None:
    conn.execute(ports.delete().where(ports.c.id == port_id))


def fixed_ips_of(conn: Connection, port_ids: Collection[str]) -> dict[str, list[dict[str, str]]]:
    if len(port_ids) == 1:
        (one,) = port_ids
        rows: Any = direct.execute(conn, _FIXED_IPS_OF_ONE, {"port_id": one}).rows
    else:
        rows = conn.execute(_FIXED_IPS, {"port_ids": list(port_ids)})
    found: dict[str, list[dict[str, str]]] = {}
    for port_id, subnet_id, address in rows:
        found.setdefault(port_id, []).append({"subnet_id": subnet_id, "ip_address": address})
    return found


def take_address(
    conn: Connection,
    port_id: str,
    network_id: str,
    subnet_id: str,
    address: str,
    offset: int | None,
) -> bool:
    """Record the address (and its ``ipam.address_offset``) as the port's; False when another
    port has it."""
    values = {
        "port_id": port_id,
        "subnet_id": subnet_id,
        "network_id": network_id,
        "ip_address": address,
        "ip_offset": offset,
    }
    return inserted(conn, _TAKE_ADDRESS, values, on_cursor=True)


def release_addresses(
    conn: Connection, port_id: str, subnet_ids: Collection[str] | None = None
) -> None:
    query = ip_allocations.delete().where(ip_allocations.c.port_id == port_id)
    if subnet_ids is not None:
        query = query.where(ip_allocations.c.subnet_id.in_(list(subnet_ids)))
    conn.execute(query)


def release_address(conn: Connection, port_id: str, subnet_id: str, address: str) -> None:
    conn.execute(
        ip_allocations.delete().where(
            ip_allocations.c.port_id == port_id,
            ip_allocations.c.subnet_id == subnet_id,
            ip_allocations.c.ip_address == address,
        )
    )


def inactive_bindings(conn: Connection, port_id: str) -> list[RowMapping]:
    query = (
        sa.select(port_bindings)
        .where(port_bindings.c.port_id == port_id)
        .order_by(port_bindings.c.host)
    )
    return list(conn.execute(query).mappings())


def insert_binding(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(port_bindings.insert().values(**values))


def delete_binding(conn: Connection, port_id: str, host: str) -> None:
    conn.execute(
        port_bindings.delete().where(
            port_bindings.c.port_id == port_id, port_bindings.c.host == host
        )
    )
