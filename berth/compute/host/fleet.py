"""A fleet of simulated hosts, described in YAML (see etc/fleet.example.yaml).

cells: [cell1, cell2]
hosts:
  - name: cn                 # with count: cn1, cn2, ... cnN
    count: 4
    cell: cell1
    vcpus: 16
    memory_mb: 65536
    disk_gb: 500
    traits: [HW_CPU_X86_AVX2]
    ovs: {bridges: {br-ex: {physnets: [public], egress_kbps: 10000000, ingress_kbps: 10000000}},
          packet_rate_kpps: 1000, tunnel_types: [vxlan]}
    sriov: {pfs: {ens1f0: {physnet: physnet1, vfs: 8, egress_kbps: 25000000}}}
    driver: {spawn_seconds: 0.05, fail: always | <probability>, fail_next: 2}
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from berth.compute.host.agent import HostResources
from berth.compute.host.driver import FailurePlan
from berth.config import ComputeSettings

_TUNABLE = (
    "cpu_allocation_ratio", "ram_allocation_ratio", "disk_allocation_ratio",
    "reserved_host_memory_mb", "reserved_host_disk_mb",
)  # fmt: skip
_DEFAULT = HostResources(vcpus=1, memory_mb=1, disk_gb=1)


class FleetError(ValueError):
    """The fleet description cannot be used; the message names the host and the key."""


@dataclass(frozen=True)
class SimulatedHost:
    name: str
    cell: str
    resources: HostResources
    # The network agents' state reports: agent type -> configurations.
    agents: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    spawn_seconds: float = 0.0
    failures: FailurePlan = field(default_factory=FailurePlan)


@dataclass(frozen=True)
class Fleet:
    cells: tuple[str, ...]
    hosts: tuple[SimulatedHost, ...]


def host_defaults(compute: ComputeSettings) -> dict[str, object]:
    """What every simulated host reports unless the fleet says otherwise: the compute settings."""
    return {name: getattr(compute, name) for name in _TUNABLE}


def load(path: Path, defaults: Mapping[str, Any] | None = None) -> Fleet:
    return parse(yaml.safe_load(path.read_text()) or {}, defaults)


def of_size(hosts: int, cells: int = 1) -> dict[str, Any]:
    """A fleet document for ``berth up --hosts N [--cells C]``: N alike OVS hosts with a
    10 Gbit/s bridge on "public", spread over C cells."""
    names = [f"cell{i}" for i in range(1, cells + 1)]
    per_cell = -(-hosts // cells)
    entries = [
        {"name": f"{cell}-cn", "count": min(per_cell, hosts - i * per_cell), "cell": cell,
         "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10_000_000,
                                       "ingress_kbps": 10_000_000}}, "tunnel_types": ["vxlan"]}}
        for i, cell in enumerate(names)
        if hosts - i * per_cell > 0
    ]  # fmt: skip
    return {"cells": names, "hosts": entries}


def split(document: Mapping[str, Any], parts: int) -> list[dict[str, Any]]:
    """The fleet as ``parts`` fleets of about as many hosts each (every one with all the cells),
    for as many agent processes; a part may be empty when there are fewer hosts than parts."""
    hosts: list[dict[str, Any]] = []
    for entry in document.get("hosts") or ():
        count = int(entry.get("count") or 0)
        names = [f"{entry['name']}{i}" for i in range(1, count + 1)] if count else [entry["name"]]
        hosts += [{**entry, "name": name, "count": 0} for name in names]
    cells = list(document.get("cells") or ["cell1"])
    return [{"cells": cells, "hosts": hosts[part::parts]} for part in range(parts)]


def parse(document: Mapping[str, Any], defaults: Mapping[str, Any] | None = None) -> Fleet:
    """``defaults`` are host keys (allocation ratios, reservations) a host does not give."""
    cells = tuple(str(c) for c in document.get("cells") or ["cell1"])
    hosts: list[SimulatedHost] = []
    for entry in document.get("hosts") or ():
        count = int(entry.get("count") or 0)
        names = [f"{entry['name']}{i}" for i in range(1, count + 1)] if count else [entry["name"]]
        for name in names:
            hosts.append(_host(name, {**(defaults or {}), **entry}, cells))
    seen = [h.name for h in hosts]
    if len(set(seen)) != len(seen):
        raise FleetError("host names must be unique")
    return Fleet(cells, tuple(hosts))


def _host(name: str, entry: Mapping[str, Any], cells: tuple[str, ...]) -> SimulatedHost:
    cell = str(entry.get("cell") or cells[0])
    if cell not in cells:
        raise FleetError(f"host {name}: cell {cell!r} is not in cells {list(cells)}")
    try:
        ovs, sriov = entry.get("ovs"), entry.get("sriov")
        pfs = (sriov or {}).get("pfs") or {}
        resources = HostResources(
            vcpus=int(entry.get("vcpus", 16)),
            memory_mb=int(entry.get("memory_mb", 65536)),
            disk_gb=int(entry.get("disk_gb", 500)),
            traits=tuple(entry.get("traits") or ()),
            **{key: type(getattr(_DEFAULT, key))(entry[key]) for key in _TUNABLE if key in entry},
            pci={
                pf: {
                    "address": spec.get("address") or f"0000:{0x81 + i:02x}:00.0",
                    "physical_network": spec.get("physnet"),
                    "vfs": int(spec.get("vfs", 8)),
                }
                for i, (pf, spec) in enumerate(sorted(pfs.items()))
            },
        )
        agents: dict[str, dict[str, Any]] = {}
        if ovs is not None:
            agents["Open vSwitch agent"] = _ovs(ovs)
        if sriov is not None:
            agents["NIC Switch agent"] = _sriov(pfs)
        driver = entry.get("driver") or {}
        fail = driver.get("fail", 0)
        failures = FailurePlan(
            always=fail == "always",
            next_calls=int(driver.get("fail_next", 0)),
            probability=float(fail) if fail != "always" else 0.0,
        )
    except (TypeError, ValueError, AttributeError, KeyError) as exc:
        raise FleetError(f"host {name}: {exc}") from exc
    return SimulatedHost(
        name, cell, resources, agents, float(driver.get("spawn_seconds", 0)), failures
    )


def _ovs(ovs: Mapping[str, Any]) -> dict[str, Any]:
    bridges = ovs.get("bridges") or {}
    config: dict[str, Any] = {
        "bridge_mappings": {
            p: bridge for bridge, b in bridges.items() for p in b.get("physnets") or ()
        },
        "resource_provider_bandwidths": {
            bridge: {
                "egress": int(b.get("egress_kbps", 0)),
                "ingress": int(b.get("ingress_kbps", 0)),
            }
            for bridge, b in bridges.items()
            if b.get("egress_kbps") or b.get("ingress_kbps")
        },
        "tunnel_types": list(ovs.get("tunnel_types") or []),
    }
    if ovs.get("packet_rate_kpps"):
        config["resource_provider_packet_processing_without_direction"] = int(
            ovs["packet_rate_kpps"]
        )
    return config


def _sriov(pfs: Mapping[str, Any]) -> dict[str, Any]:
    mappings: dict[str, list[str]] = {}
    for pf, spec in pfs.items():
        mappings.setdefault(spec["physnet"], []).append(pf)
    return {
        "device_mappings": mappings,
        "resource_provider_bandwidths": {
            pf: {"egress": int(s.get("egress_kbps", 0)), "ingress": int(s.get("ingress_kbps", 0))}
            for pf, s in pfs.items()
            if s.get("egress_kbps") or s.get("ingress_kbps")
        },
        "num_virtual_functions": {pf: int(s.get("vfs", 8)) for pf, s in pfs.items()},
    }
