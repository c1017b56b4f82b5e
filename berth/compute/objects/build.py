"""What a build carries from host to host: the attempts so far and the server's port entries.

A ``BuildAttempt`` is a host that could not take the server and why; the list grows with every
reschedule and ends up in the fault when no alternate is left. A ``PortEntry`` is one port of the
server as the compute service keeps it (the instance's ``network_info``): which port, on which
network, with which addresses, and whether the compute service made it (only those are deleted
with the server).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from berth.compute.objects.wire import Version, read, stamp


@dataclass(frozen=True, slots=True)
class BuildAttempt:
    host: str
    reason: str

    # 1.0: first versioned form.
    VERSION = Version(1, 0)

    def to_json(self) -> dict[str, Any]:
        return stamp(BuildAttempt.VERSION, {"host": self.host, "reason": self.reason})

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> BuildAttempt:
        document = read("BuildAttempt", BuildAttempt.VERSION, document)
        return cls(host=document["host"], reason=document["reason"])


def failed_everywhere(attempts: Sequence[BuildAttempt]) -> str:
    """The fault of a server that no host could take."""
    tried = "; ".join(f"{a.host}: {a.reason}" for a in attempts)
    return f"Build failed on every host tried ({len(attempts)}): {tried}"


@dataclass(frozen=True, slots=True)
class PortEntry:
    port_id: str
    network_id: str
    mac_address: str
    fixed_ips: tuple[Mapping[str, Any], ...] = ()
    network_name: str = ""
    vnic_type: str = "normal"
    created_by_compute: bool = False

    # 1.0: first versioned form (the shape network_info entries always had).
    VERSION = Version(1, 0)

    def to_json(self) -> dict[str, Any]:
        return stamp(
            PortEntry.VERSION,
            {
                "port_id": self.port_id,
                "network_id": self.network_id,
                "network_name": self.network_name,
                "mac_address": self.mac_address,
                "fixed_ips": [dict(ip) for ip in self.fixed_ips],
                "vnic_type": self.vnic_type,
                "created_by_compute": self.created_by_compute,
            },
        )

    @classmethod
    def from_json(cls, document: Mapping[str, Any]) -> PortEntry:
        document = read("PortEntry", PortEntry.VERSION, document)
        return cls(
            port_id=document["port_id"],
            network_id=document["network_id"],
            mac_address=document["mac_address"],
            fixed_ips=tuple(dict(ip) for ip in document.get("fixed_ips") or ()),
            network_name=document.get("network_name", ""),
            vnic_type=document.get("vnic_type", "normal"),
            created_by_compute=bool(document.get("created_by_compute")),
        )
