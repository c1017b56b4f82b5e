"""What the simulation measures, read from Placement's API: capacity and usage per resource
(VCPU, MEMORY_MB, DISK_GB, bandwidth per physical network and direction, packet rate), and
fragmentation: the share of free capacity that sits on hosts unable to fit the largest flavor.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import httpx

__all__ = ["COMPUTE_CLASSES", "Provider", "Sample", "read_providers", "sample"]

PLACEMENT = {"openstack-api-version": "placement 1.39"}
COMPUTE_CLASSES = ("VCPU", "MEMORY_MB", "DISK_GB")
_BANDWIDTH = {"NET_BW_EGR_KILOBIT_PER_SEC": "egress", "NET_BW_IGR_KILOBIT_PER_SEC": "ingress"}
_PACKET_RATE = (
    "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
    "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
)
_PHYSNET = "CUSTOM_PHYSNET_"


@dataclass(frozen=True)
class Provider:
    uuid: str
    root: str
    # Usable amount per resource class: (total - reserved) * allocation_ratio.
    capacity: Mapping[str, int]
    physnet: str | None = None

    def series(self, resource_class: str) -> str | None:
        """The report line this provider's ``resource_class`` counts towards."""
        if resource_class in COMPUTE_CLASSES:
            return resource_class
        if resource_class in _BANDWIDTH:
            return f"bandwidth {_BANDWIDTH[resource_class]} {self.physnet or 'unknown'}"
        if resource_class in _PACKET_RATE:
            return "packet rate"
        return None


@dataclass(frozen=True)
class Sample:
    """The cloud at one simulated time."""

    time: float
    active: int
    accepted: int
    failed: int
    # Report line -> amount used / usable.
    used: Mapping[str, int] = field(default_factory=dict)
    capacity: Mapping[str, int] = field(default_factory=dict)
    # Compute resource class -> share of its free amount on hosts that cannot fit the largest
    # flavor (0 when nothing is free).
    fragmentation: Mapping[str, float] = field(default_factory=dict)

    def utilisation(self, series: str) -> float:
        usable = self.capacity.get(series, 0)
        return self.used.get(series, 0) / usable if usable else 0.0


def read_providers(placement: httpx.Client) -> list[Provider]:
    """Every resource provider with its usable inventory and physical network (read once: the
    simulation does not change inventories)."""
    listing = _get(placement, "/resource_providers")["resource_providers"]
    providers = []
    for rp in listing:
        inventories = _get(placement, f"/resource_providers/{rp['uuid']}/inventories")
        traits = _get(placement, f"/resource_providers/{rp['uuid']}/traits")["traits"]
        physnets = [t.removeprefix(_PHYSNET).lower() for t in traits if t.startswith(_PHYSNET)]
        providers.append(
            Provider(
                rp["uuid"],
                rp["root_provider_uuid"],
                {
                    rc: int((inv["total"] - inv["reserved"]) * inv["allocation_ratio"])
                    for rc, inv in inventories["inventories"].items()
                },
                physnets[0] if physnets else None,
            )
        )
    return providers


def sample(
    placement: httpx.Client,
    providers: Iterable[Provider],
    largest: Mapping[str, int],
    time: float,
    counts: tuple[int, int, int],
) -> Sample:
    """Usage now; ``largest`` is the largest flavor's compute request, ``counts`` the active,
    accepted and failed servers so far."""
    used: dict[str, int] = {}
    capacity: dict[str, int] = {}
    free_on_root: dict[str, dict[str, int]] = {}
    for provider in providers:
        usages = _get(placement, f"/resource_providers/{provider.uuid}/usages")["usages"]
        for rc, usable in provider.capacity.items():
            series = provider.series(rc)
            if series is None:
                continue
            amount = int(usages.get(rc, 0))
            used[series] = used.get(series, 0) + amount
            capacity[series] = capacity.get(series, 0) + usable
            if rc in COMPUTE_CLASSES:
                free_on_root.setdefault(provider.root, {})[rc] = max(0, usable - amount)
    active, accepted, failed = counts
    return Sample(
        time, active, accepted, failed, used, capacity, fragmentation(free_on_root, largest)
    )


def fragmentation(
    free_by_host: Mapping[str, Mapping[str, int]], largest: Mapping[str, int]
) -> dict[str, float]:
    """Per compute resource class, the share of the free amount on hosts where the largest
    flavor no longer fits."""
    stranded = {
        host for host, free in free_by_host.items()
        if any(free.get(rc, 0) < need for rc, need in largest.items() if need)
    }  # fmt: skip
    shares = {}
    for rc in COMPUTE_CLASSES:
        free = sum(f.get(rc, 0) for f in free_by_host.values())
        lost = sum(free_by_host[h].get(rc, 0) for h in stranded)
        shares[rc] = lost / free if free else 0.0
    return shares


def _get(placement: httpx.Client, path: str) -> dict[str, object]:
    answer = placement.get(path, headers=PLACEMENT)
    answer.raise_for_status()
    return answer.json()  # type: ignore[no-any-return]
