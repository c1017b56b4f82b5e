"""Compute nodes in a cell database: each hypervisor a host agent manages, with its capacity and
usage as the agent last reported them.

A node's uuid is also its root resource provider's in Placement. The host agent writes its own
nodes with :func:`upsert`, keyed by hypervisor hostname, so a restart finds the node (and the
provider) it made before.
"""

from __future__ import annotations

import uuid as uuidlib
from collections.abc import Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db import host_changes
from berth.compute.db._tables import try_insert
from berth.compute.db.cell_schema import compute_nodes

RESOURCE_FIELDS = frozenset(
    {
        "hypervisor_type",
        "vcpus",
        "memory_mb",
        "local_gb",
        "vcpus_used",
        "memory_mb_used",
        "local_gb_used",
        "running_vms",
        "cpu_allocation_ratio",
        "ram_allocation_ratio",
        "disk_allocation_ratio",
        "reserved_host_memory_mb",
        "reserved_host_disk_mb",
        "reserved_host_cpus",
    }
)
USAGE_FIELDS = frozenset({"vcpus_used", "memory_mb_used", "local_gb_used", "running_vms"})
# Every update of a node sets this too: when the scheduler's cache of hosts reads every node's
# count (its first pass, a fleet made), it reads again the nodes whose count moved
# (``berth.compute.scheduler.host_cache``). Between, the writes it reads log the node
# (``host_changes``).
_BUMP = {"change_count": compute_nodes.c.change_count + 1}


def upsert(
    conn: Connection,
    service_id: int,
    host: str,
    hypervisor_hostname: str,
    resources: Mapping[str, Any],
    uuid: str | None = None,
) -> RowMapping:
    """Create the node or bring it up to date. A new node gets ``uuid`` (a fresh one when None);
    an existing node keeps the uuid it has, and moves to ``service_id`` and ``host``."""
    _check(resources, RESOURCE_FIELDS)
    row = compute_nodes.c.hypervisor_hostname == hypervisor_hostname
    values = {"service_id": service_id, "host": host, **resources}
    updated = conn.execute(compute_nodes.update().where(row).values(**values, **_BUMP))
    if updated.rowcount == 0:
        new = compute_nodes.insert().values(
            uuid=uuid or str(uuidlib.uuid4()), hypervisor_hostname=hypervisor_hostname, **values
        )
        if not try_insert(conn, new):
            conn.execute(compute_nodes.update().where(row).values(**values, **_BUMP))
    node = get_by_hypervisor_hostname(conn, hypervisor_hostname)
    assert node is not None
    host_changes.touch_nodes(conn, [node["id"]])
    return node


def create_many(conn: Connection, nodes: Mapping[str, tuple[int, Mapping[str, Any]]]) -> bool:
    """Create nodes that do not exist yet, in one statement: per hypervisor hostname (also the
    host's name), its service id and resources. False, with nothing written, when some exist
    (another process made them meanwhile): ``upsert`` them one by one then."""
    rows = []
    for hostname, (service_id, resources) in nodes.items():
        _check(resources, RESOURCE_FIELDS)
        rows.append({"uuid": str(uuidlib.uuid4()), "hypervisor_hostname": hostname,
                     "service_id": service_id, "host": hostname, **resources})  # fmt: skip
    if not rows:
        return True
    made = try_insert(conn, compute_nodes.insert(), rows)
    if made:
        host_changes.touch_everything(conn)
    return made


def record_reported(conn: Connection, reported: Mapping[str, tuple[str, int]]) -> None:
    """Per node uuid: the fingerprint of what it reported to Placement and the provider's
    generation after (nothing the scheduler reads, so not logged in ``host_changes``)."""
    if not reported:
        return
    conn.execute(
        compute_nodes.update()
        .where(compute_nodes.c.uuid == sa.bindparam("b_uuid"))
        .values(**_BUMP),
        [
            {"b_uuid": uuid, "placement_fingerprint": fingerprint,
             "placement_generation": generation}
            for uuid, (fingerprint, generation) in reported.items()
        ],
    )  # fmt: skip


def reported(node: Mapping[str, Any]) -> tuple[str | None, int | None]:
    """What ``record_reported`` recorded of this node (Nones before its first report)."""
    return node["placement_fingerprint"], node["placement_generation"]


def get(conn: Connection, uuid: str) -> RowMapping | None:
    query = sa.select(compute_nodes).where(compute_nodes.c.uuid == uuid)
    return conn.execute(query).mappings().first()


def get_by_id(conn: Connection, node_id: int) -> RowMapping | None:
    query = sa.select(compute_nodes).where(compute_nodes.c.id == node_id)
    return conn.execute(query).mappings().first()


def get_by_hypervisor_hostname(conn: Connection, hypervisor_hostname: str) -> RowMapping | None:
    query = sa.select(compute_nodes).where(
        compute_nodes.c.hypervisor_hostname == hypervisor_hostname
    )
    return conn.execute(query).mappings().first()


def list_nodes(conn: Connection, host: str | None = None) -> list[RowMapping]:
    """The nodes of a host (all when None), by id."""
    query = sa.select(compute_nodes).order_by(compute_nodes.c.id)
    if host is not None:
        query = query.where(compute_nodes.c.host == host)
    return list(conn.execute(query).mappings())


def update_usage(conn: Connection, uuid: str, usage: Mapping[str, int]) -> bool:
    """Record what the node's instances use (``vcpus_used``, ``memory_mb_used``,
    ``local_gb_used``, ``running_vms``); False when there is no such node."""
    _check(usage, USAGE_FIELDS)
    host_changes.touch_nodes(conn, _ids(conn, uuid))
    result = conn.execute(
        compute_nodes.update().where(compute_nodes.c.uuid == uuid).values(**usage, **_BUMP)
    )
    return result.rowcount > 0


def delete(conn: Connection, uuid: str) -> bool:
    """Delete the node and its PCI devices; False when it was gone."""
    host_changes.touch_nodes(conn, _ids(conn, uuid))
    result = conn.execute(compute_nodes.delete().where(compute_nodes.c.uuid == uuid))
    return result.rowcount > 0


def _ids(conn: Connection, uuid: str) -> list[int]:
    """The id of the node ``uuid`` (none when there is no such node), for ``host_changes``."""
    return list(
        conn.execute(sa.select(compute_nodes.c.id).where(compute_nodes.c.uuid == uuid)).scalars()
    )


def _check(values: Mapping[str, Any], allowed: frozenset[str]) -> None:
    unknown = set(values) - allowed
    if unknown:
        raise ValueError(f"compute nodes have no fields {sorted(unknown)} here")
