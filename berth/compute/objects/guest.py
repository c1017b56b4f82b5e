"""What a compute host sees of one server's guest (``get_diagnostics``): its power state, how
long it has run, and its virtual devices. The API shows it as server diagnostics."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.wire import Version, read, stamp


@dataclass(frozen=True, slots=True)
class GuestNic:
    port_id: str
    mac_address: str


@dataclass(frozen=True, slots=True)
class GuestView:
    # pending, running, paused, shutdown, crashed, suspended (upstream's names)
    state: str
    # Seconds since the guest last started; None while it is not running.
    uptime: int | None
    vcpus: int
    memory_mb: int
    nics: tuple[GuestNic, ...]
    # The guest's disk devices in bus order: "vda" (root), then ephemeral and swap.
    disks: tuple[str, ...]

    # 1.0: first versioned form.
    VERSION = Version(1, 0)

    def to_json(self) -> dict[str, Any]:
        return stamp(
            GuestView.VERSION,
            {
                "state": self.state,
                "uptime": self.uptime,
                "vcpus": self.vcpus,
                "memory_mb": self.memory_mb,
                "nics": [{"port_id": n.port_id, "mac_address": n.mac_address} for n in self.nics],
                "disks": list(self.disks),
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> GuestView:
        document = read("GuestView", GuestView.VERSION, document)
        return cls(
            state=document["state"],
            uptime=document["uptime"],
            vcpus=int(document["vcpus"]),
            memory_mb=int(document["memory_mb"]),
            nics=tuple(GuestNic(n["port_id"], n["mac_address"]) for n in document["nics"]),
            disks=tuple(document["disks"]),
        )
