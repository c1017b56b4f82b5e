"""GET /servers/{server_id}/diagnostics: what the server's host sees of its guest (admins).

Before 2.48 the shape was each hypervisor driver's own; Berth answers libvirt's (counters named
after the guest's devices). From 2.48 it is one documented shape for every driver. A simulated
guest moves no data and burns no CPU, so its counters are 0 (and the rates libvirt does not
measure are null); ``driver`` is ``libvirt`` because 2.48 allows only real drivers' names (the
hypervisor is named ``simulated``). The domain is :mod:`berth.compute.guest_diagnostics`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import guest_diagnostics
from berth.compute.api.request import ComputeRequest
from berth.compute.objects.guest import GuestView

COMMON_SHAPE = (2, 48)
# What a simulated guest's devices have counted: nothing; the rates libvirt does not measure.
_NIC_COUNTERS = {
    **dict.fromkeys(("rx_octets", "rx_errors", "rx_drop", "rx_packets"), 0),
    **dict.fromkeys(("tx_octets", "tx_errors", "tx_drop", "tx_packets"), 0),
    "rx_rate": None,
    "tx_rate": None,
}
_DISK_COUNTERS = dict.fromkeys(
    ("read_bytes", "read_requests", "write_bytes", "write_requests", "errors_count"), 0
)
_RULE = "os_compute_api:os-server-diagnostics"


def show(req: ComputeRequest) -> Response:
    req.authorize(_RULE)
    guest = guest_diagnostics.guest_of(
        req.service,
        req.context,
        req.param("server_id"),
        lambda project_id: req.allowed(_RULE, {"project_id": project_id}),
    )
    if req.at_least(COMMON_SHAPE):
        return req.respond(_transform(guest))
    return req.respond(_transform_libvirt(guest))


def _transform(guest: GuestView) -> dict[str, Any]:
    """``{"state": "running", "driver": "libvirt", "num_cpus": 1, "cpu_details": [...],
    "memory_details": {"maximum": 512, "used": 0}, "nic_details": [...], ...}``"""
    return {
        "state": guest.state,
        "driver": "libvirt",
        "hypervisor": "simulated",
        "hypervisor_os": None,
        "uptime": guest.uptime,
        "config_drive": False,
        "num_cpus": guest.vcpus,
        "num_nics": len(guest.nics),
        "num_disks": len(guest.disks),
        "cpu_details": [{"id": cpu, "time": 0, "utilisation": 0} for cpu in range(guest.vcpus)],
        "memory_details": {"maximum": guest.memory_mb, "used": 0},
        "nic_details": [{"mac_address": nic.mac_address, **_NIC_COUNTERS} for nic in guest.nics],
        "disk_details": [dict(_DISK_COUNTERS) for _ in guest.disks],
    }


def _transform_libvirt(guest: GuestView) -> dict[str, int]:
    """``{"cpu0_time": 0, "memory": 524288, "vda_read": 0, ..., "tap5f0e1c2a-3b_rx": 0, ...}``:
    memory in KiB, a tap device per port named as the port's first 11 characters."""
    found = {f"cpu{cpu}_time": 0 for cpu in range(guest.vcpus)}
    found["memory"] = guest.memory_mb * 1024
    for disk in guest.disks:
        for counter in ("read", "read_req", "write", "write_req", "errors"):
            found[f"{disk}_{counter}"] = 0
    for nic in guest.nics:
        for counter in ("rx", "rx_packets", "rx_errors", "rx_drop", "tx", "tx_packets",
                        "tx_errors", "tx_drop"):  # fmt: skip
            found[f"tap{nic.port_id[:11]}_{counter}"] = 0
    return found
