"""What this host sees of a server's guest (``get_diagnostics``): the simulated driver's power
state and start time, and the devices the guest was given: a virtual CPU per flavor VCPU, its
memory, a NIC per port and a disk per root, ephemeral and swap disk of its flavor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.common.timeutils import utcnow
from berth.compute.host.driver import SimulatedDriver
from berth.compute.objects.build import PortEntry
from berth.compute.objects.guest import GuestNic, GuestView


def guest_view(driver: SimulatedDriver, instance: Mapping[str, Any]) -> GuestView | None:
    """The guest of ``instance`` (its row) as this host's driver has it; None when the driver
    has no such guest (not spawned here, or lost with a restart of the host)."""
    found = driver.state_of(instance["uuid"])
    if found is None:
        return None
    state, started = found
    flavor = instance["flavor"]
    disks = ["vda"]
    for size in (flavor.get("ephemeral_gb") or 0, flavor.get("swap") or 0):
        if size:
            disks.append(f"vd{chr(ord('a') + len(disks))}")
    return GuestView(
        state=state,
        uptime=int((utcnow() - started).total_seconds()) if started is not None else None,
        vcpus=int(flavor["vcpus"]),
        memory_mb=int(flavor["memory_mb"]),
        nics=tuple(
            GuestNic(entry.port_id, entry.mac_address)
            for entry in map(PortEntry.from_json, instance["network_info"])
        ),
        disks=tuple(disks),
    )
