"""SR-IOV devices of a compute node in a cell database: physical functions (PFs) and their
virtual functions (VFs), and which instance holds which VF.

The host agent describes its NICs as ``{pf_name: {"address": "0000:81:00.0",
"physical_network": "physnet1", "vfs": 8}}`` and :func:`sync_host` makes the rows match,
however often it runs. Only VFs are handed out. A VF goes ``available`` → ``claimed`` (by the
conductor, for a build) → ``allocated`` (spawned) → ``available`` again when released; a VF that
disappears from the description while an instance holds it becomes ``unavailable`` (and is
deleted when that instance releases it, or ``allocated`` again if it comes back first).

A claim takes each VF with ``UPDATE ... WHERE status = 'available'`` and counts the rows it got:
two claims for the last free VF cannot both have it, on any backend.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db import host_changes
from berth.compute.db._tables import try_insert
from berth.compute.db.cell_schema import pci_devices

PF = "type-PF"
VF = "type-VF"
AVAILABLE = "available"
CLAIMED = "claimed"
ALLOCATED = "allocated"
UNAVAILABLE = "unavailable"

_HELD = (CLAIMED, ALLOCATED)


@dataclass(frozen=True, slots=True)
class PhysicalFunction:
    """One PF of a host's description."""

    name: str
    address: str
    physical_network: str | None
    vf_addresses: tuple[str, ...]

    @classmethod
    def from_description(cls, name: str, spec: Mapping[str, Any]) -> PhysicalFunction:
        """``spec`` has ``address``, ``physical_network`` (may be None), and ``vfs`` (a count)
        or ``vf_addresses`` (explicit addresses)."""
        address = spec["address"]
        if "vf_addresses" in spec:
            vf_addresses = tuple(spec["vf_addresses"])
        else:
            vf_addresses = tuple(vf_address(address, n) for n in range(int(spec.get("vfs", 0))))
        return cls(name, address, spec.get("physical_network"), vf_addresses)


def vf_address(pf_address: str, index: int) -> str:
    """Where the ``index``-th VF of a PF sits when the description does not say: from device
    0x10 of the PF's bus on, one device per VF, the function of the PF (as NICs lay them out,
    so the VFs of two functions of one card do not meet)."""
    domain, bus, slot_function = pf_address.split(":")
    function = int(slot_function.split(".")[1], 16)
    devfn = 0x80 + 8 * index + function
    bus_number = int(bus, 16) + devfn // 256
    devfn %= 256
    return f"{domain}:{bus_number:02x}:{devfn >> 3:02x}.{devfn & 7:x}"


def sync_host(
    conn: Connection, compute_node_id: int, description: Mapping[str, Mapping[str, Any]]
) -> bool:
    """Make the node's devices what ``description`` says; True when a row changed. Devices no
    longer described are deleted when free and made ``unavailable`` while an instance holds
    them; a held VF keeps its instance."""
    wanted = _wanted(description)
    changed = False
    present = {row["address"]: row for row in list_devices(conn, compute_node_id)}
    for address, values in wanted.items():
        row = present.get(address)
        if row is None:
            new = pci_devices.insert().values(
                compute_node_id=compute_node_id, address=address, status=AVAILABLE, **values
            )
            changed |= try_insert(conn, new)
        else:
            update = {key: value for key, value in values.items() if row[key] != value}
            if row["status"] == UNAVAILABLE:
                # Back on the host while its instance still holds it.
                update["status"] = ALLOCATED
            if update:
                conn.execute(
                    pci_devices.update().where(pci_devices.c.id == row["id"]).values(**update)
                )
                changed = True
    gone = [row for address, row in present.items() if address not in wanted]
    for row in gone:
        if row["instance_uuid"] is None:
            conn.execute(
                pci_devices.delete().where(
                    pci_devices.c.id == row["id"], pci_devices.c.instance_uuid.is_(None)
                )
            )
            changed = True
        elif row["status"] != UNAVAILABLE:
            conn.execute(
                pci_devices.update()
                .where(pci_devices.c.id == row["id"], pci_devices.c.instance_uuid.is_not(None))
                .values(status=UNAVAILABLE)
            )
            changed = True
    if changed:
        host_changes.touch_nodes(conn, [compute_node_id])
    return changed


def list_devices(conn: Connection, compute_node_id: int) -> list[RowMapping]:
    query = (
        sa.select(pci_devices)
        .where(pci_devices.c.compute_node_id == compute_node_id)
        .order_by(pci_devices.c.address)
    )
    return list(conn.execute(query).mappings())


def nodes_with_devices(conn: Connection) -> set[int]:
    """The ids of the compute nodes that have PCI devices."""
    query = sa.select(pci_devices.c.compute_node_id).distinct()
    return set(conn.execute(query).scalars())


def claim_vfs(
    conn: Connection, compute_node_id: int, pf_name: str, count: int, instance_uuid: str
) -> list[str] | None:
    """Claim ``count`` free VFs of the named PF for the instance; their addresses, or None (and
    nothing claimed) when fewer are free. Atomic against other claims on every backend."""
    parent = _pf_address(conn, compute_node_id, pf_name)
    if parent is None:
        return None
    claimed: list[str] = []
    tried: set[int] = set()
    with conn.begin_nested() as savepoint:
        while len(claimed) < count:
            candidates = [
                (device_id, address)
                for device_id, address in _free_vfs(conn, compute_node_id, parent)
                if device_id not in tried
            ]
            if not candidates:
                savepoint.rollback()
                return None
            for device_id, address in candidates[: count - len(claimed)]:
                tried.add(device_id)
                taken = conn.execute(
                    pci_devices.update()
                    .where(pci_devices.c.id == device_id, pci_devices.c.status == AVAILABLE)
                    .values(status=CLAIMED, instance_uuid=instance_uuid)
                )
                if taken.rowcount == 1:
                    claimed.append(address)
    if claimed:
        host_changes.touch_nodes(conn, [compute_node_id])
    return claimed


# Built once: every build that spawns runs it. (Parameters are not named after their columns,
# which would make them values to set.)
_ALLOCATE = (
    pci_devices.update()
    .where(pci_devices.c.instance_uuid == sa.bindparam("uuid"), pci_devices.c.status == CLAIMED)
    .values(status=ALLOCATED)
)
_ALLOCATE_ON_NODE = _ALLOCATE.where(pci_devices.c.compute_node_id == sa.bindparam("node_id"))


def allocate(conn: Connection, instance_uuid: str, compute_node_id: int | None = None) -> int:
    """The instance's claimed VFs (on one node, or all) become allocated (it spawned); how many.
    (Not logged in ``host_changes``: a VF claimed or allocated is as unavailable to others.)"""
    if compute_node_id is None:
        return conn.execute(_ALLOCATE, {"uuid": instance_uuid}).rowcount
    values = {"uuid": instance_uuid, "node_id": compute_node_id}
    return conn.execute(_ALLOCATE_ON_NODE, values).rowcount


def release(conn: Connection, instance_uuid: str, compute_node_id: int | None = None) -> int:
    """Give back every VF the instance holds (on one node, or all; a move holds VFs on two);
    how many. VFs gone from their host while held are deleted now."""
    held = pci_devices.c.instance_uuid == instance_uuid
    on_node = (
        [pci_devices.c.compute_node_id == compute_node_id] if compute_node_id is not None else []
    )
    if compute_node_id is None:
        # Which nodes, read before the VFs are given back (a move holds VFs on two).
        nodes = sa.select(pci_devices.c.compute_node_id).where(held).distinct()
        host_changes.touch_nodes(conn, conn.execute(nodes).scalars())
    freed = conn.execute(
        pci_devices.update()
        .where(held, pci_devices.c.status.in_(_HELD), *on_node)
        .values(status=AVAILABLE, instance_uuid=None)
    ).rowcount
    gone = conn.execute(
        pci_devices.delete().where(held, pci_devices.c.status == UNAVAILABLE, *on_node)
    ).rowcount
    if compute_node_id is not None and freed + gone:
        host_changes.touch_nodes(conn, [compute_node_id])
    return freed + gone


def held_by(conn: Connection, instance_uuid: str) -> list[RowMapping]:
    """The devices an instance holds, on any node (so a redelivered claim can see its first)."""
    query = (
        sa.select(pci_devices)
        .where(pci_devices.c.instance_uuid == instance_uuid)
        .order_by(pci_devices.c.compute_node_id, pci_devices.c.address)
    )
    return list(conn.execute(query).mappings())


def free_vfs(conn: Connection, compute_node_id: int) -> dict[str, int]:
    """Free VFs per PF name of one node (a PF with none free maps to 0)."""
    return free_vfs_by_node(conn, [compute_node_id]).get(compute_node_id, {})


def free_vfs_by_node(
    conn: Connection, compute_node_ids: list[int] | None = None
) -> dict[int, dict[str, int]]:
    """Free VFs per PF name of each node (of these, or all) that has PFs, in one query."""
    vf = pci_devices.alias("vf")
    query = (
        sa.select(
            pci_devices.c.compute_node_id,
            pci_devices.c.dev_name,
            sa.func.count(vf.c.id),
        )
        .select_from(pci_devices)
        .outerjoin(
            vf,
            sa.and_(
                vf.c.compute_node_id == pci_devices.c.compute_node_id,
                vf.c.parent_addr == pci_devices.c.address,
                vf.c.status == AVAILABLE,
            ),
        )
        .where(pci_devices.c.dev_type == PF)
        .group_by(pci_devices.c.compute_node_id, pci_devices.c.dev_name)
    )
    if compute_node_ids is not None:
        query = query.where(pci_devices.c.compute_node_id.in_(compute_node_ids))
    found: dict[int, dict[str, int]] = {}
    for node_id, pf_name, free in conn.execute(query):
        found.setdefault(node_id, {})[pf_name] = free
    return found


def _wanted(description: Mapping[str, Mapping[str, Any]]) -> dict[str, dict[str, Any]]:
    """The described devices by address: their columns other than status and instance."""
    wanted: dict[str, dict[str, Any]] = {}
    for name, spec in description.items():
        pf = PhysicalFunction.from_description(name, spec)
        wanted[pf.address] = {
            "dev_type": PF,
            "parent_addr": None,
            "dev_name": pf.name,
            "physical_network": pf.physical_network,
        }
        for address in pf.vf_addresses:
            wanted[address] = {
                "dev_type": VF,
                "parent_addr": pf.address,
                "dev_name": None,
                "physical_network": pf.physical_network,
            }
    return wanted


def _pf_address(conn: Connection, compute_node_id: int, pf_name: str) -> str | None:
    query = sa.select(pci_devices.c.address).where(
        pci_devices.c.compute_node_id == compute_node_id,
        pci_devices.c.dev_type == PF,
        pci_devices.c.dev_name == pf_name,
    )
    return conn.execute(query).scalar()


def _free_vfs(conn: Connection, compute_node_id: int, parent: str) -> list[tuple[int, str]]:
    query = (
        sa.select(pci_devices.c.id, pci_devices.c.address)
        .where(
            pci_devices.c.compute_node_id == compute_node_id,
            pci_devices.c.parent_addr == parent,
            pci_devices.c.dev_type == VF,
            pci_devices.c.status == AVAILABLE,
        )
        .order_by(pci_devices.c.address)
    )
    return [(device_id, address) for device_id, address in conn.execute(query)]


def held_vfs(
    conn: Connection, compute_node_id: int, instance_uuid: str, pf_name: str | None = None
) -> list[str]:
    """The addresses of the VFs the instance holds on one node (under the named PF, or any)."""
    query = sa.select(pci_devices.c.address).where(
        pci_devices.c.compute_node_id == compute_node_id,
        pci_devices.c.instance_uuid == instance_uuid,
        pci_devices.c.dev_type == VF,
    )
    if pf_name is not None:
        parent = _pf_address(conn, compute_node_id, pf_name)
        if parent is None:
            return []
        query = query.where(pci_devices.c.parent_addr == parent)
    return [address for (address,) in conn.execute(query.order_by(pci_devices.c.address))]


def release_vfs(
    conn: Connection, compute_node_id: int, instance_uuid: str, addresses: list[str]
) -> int:
    """Give back these VFs of the instance (one interface's, where :func:`release` gives back
    all); how many. Those gone from their host while held are deleted now."""
    mine = (
        pci_devices.c.compute_node_id == compute_node_id,
        pci_devices.c.instance_uuid == instance_uuid,
        pci_devices.c.address.in_(addresses),
    )
    freed = conn.execute(
        pci_devices.update()
        .where(*mine, pci_devices.c.status.in_(_HELD))
        .values(status=AVAILABLE, instance_uuid=None)
    ).rowcount
    gone = conn.execute(
        pci_devices.delete().where(*mine, pci_devices.c.status == UNAVAILABLE)
    ).rowcount
    if freed + gone:
        host_changes.touch_nodes(conn, [compute_node_id])
    return freed + gone
