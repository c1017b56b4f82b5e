"""What a compute host has and what its servers take, as the legacy ``os-hosts`` API shows it:
the host's totals, what its node says is used now, what its servers' flavors add up to, and
the same sum for each project with servers there."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.cells import CellRegistry
from berth.compute.db import compute_nodes, instances


@dataclass(frozen=True)
class Usage:
    """One line of a host's resources: ``project`` is a project id, or ``(total)``,
    ``(used_now)`` (the node's own count) or ``(used_max)`` (the servers' flavors)."""

    project: str
    cpu: int
    memory_mb: int
    disk_gb: int


def of_host(cells: CellRegistry, host: str) -> list[Usage] | None:
    """The host's usage lines, or None when no compute node of that host is in a cell.

    A host with several nodes shows its first, as upstream does for this old API."""
    cell = cells.cell_of_host(host)
    if cell is None:
        return None
    with cells.database(cell).read() as conn:
        nodes = compute_nodes.list_nodes(conn, host=host)
        servers = instances.list_instances(conn, host=host)
    if not nodes:
        return None
    node = nodes[0]
    by_project: dict[str, list[Mapping[str, Any]]] = {}
    for server in servers:
        by_project.setdefault(server["project_id"], []).append(server["flavor"])
    return [
        Usage("(total)", node["vcpus"], node["memory_mb"], node["local_gb"]),
        Usage("(used_now)", node["vcpus_used"], node["memory_mb_used"], node["local_gb_used"]),
        _sum("(used_max)", [server["flavor"] for server in servers]),
        *(_sum(project, flavors) for project, flavors in sorted(by_project.items())),
    ]


def _sum(project: str, flavors: Iterable[Mapping[str, Any]]) -> Usage:
    flavors = list(flavors)
    return Usage(
        project,
        cpu=sum(int(f.get("vcpus", 0)) for f in flavors),
        memory_mb=sum(int(f.get("memory_mb", 0)) for f in flavors),
        disk_gb=sum(int(f.get("root_gb", 0)) + int(f.get("ephemeral_gb", 0)) for f in flavors),
    )
