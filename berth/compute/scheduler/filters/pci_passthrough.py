"""PciPassthroughFilter: each SR-IOV port (VNIC type ``direct`` or ``macvtap``) needs a free
virtual function, and when Placement guarantees its bandwidth, a VF of the very physical
function whose provider holds that bandwidth: a VF of another PF on the same physical network
would carry traffic the allocation does not cover.

    bandwidth-not-on-a-pf   the candidate puts a port's bandwidth on a provider that is not a
                            PF of this host (an OVS bridge, say): no VF can follow it
    no-free-vf              some PF (or the host, for ports without bandwidth) has fewer free
                            VFs than the candidate's ports need

``vf_demand`` is the one fit function: the filter asks whether it succeeds, and the selection
takes the VFs it returns from the host when an instance lands there, so the two cannot disagree.
Only ports are looked at; flavor PCI aliases are not supported.
"""

from __future__ import annotations

from typing import Final

from berth.compute.objects.request_spec import PortRequest, RequestSpec
from berth.compute.scheduler.candidates import Candidate
from berth.compute.scheduler.filters.base import HostFilter
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.placement_query import group_suffix

BANDWIDTH_NOT_ON_A_PF: Final = "bandwidth-not-on-a-pf"
NO_FREE_VF: Final = "no-free-vf"
VF_VNIC_TYPES: Final = frozenset({"direct", "macvtap"})
_BANDWIDTH_PREFIX: Final = "NET_BW_"


def _bandwidth_suffix(port: PortRequest) -> str | None:
    for group in port.request_groups:
        if any(str(rc).startswith(_BANDWIDTH_PREFIX) for rc in group.get("resources") or {}):
            return group_suffix(str(group["id"]))
    return None


def vf_demand(host: HostState, spec: RequestSpec, candidate: Candidate) -> dict[str, int] | str:
    """PF device name -> VFs the spec's SR-IOV ports take on ``host`` with ``candidate``, or
    the reason they cannot. A port whose bandwidth is mapped takes a VF of that PF; the others
    take VFs from the PFs with the most left (then by name), in port order."""
    demand: dict[str, int] = {}
    unpinned = 0
    for port in spec.ports:
        if port.vnic_type not in VF_VNIC_TYPES:
            continue
        suffix = _bandwidth_suffix(port)
        providers = candidate.mappings.get(suffix, ()) if suffix else ()
        if not providers:
            unpinned += 1
            continue
        device = host.pf_providers.get(providers[0])
        if device is None:
            return BANDWIDTH_NOT_ON_A_PF
        demand[device] = demand.get(device, 0) + 1
    left = {d: n - demand.get(d, 0) for d, n in host.free_vfs.items()}
    if any(left.get(d, 0) < 0 or d not in left for d in demand):
        return NO_FREE_VF
    for _ in range(unpinned):
        device = min(left, key=lambda d: (-left[d], d), default=None)
        if device is None or left[device] <= 0:
            return NO_FREE_VF
        left[device] -= 1
        demand[device] = demand.get(device, 0) + 1
    return demand


class PciPassthroughFilter(HostFilter):
    NAME = "PciPassthroughFilter"
    REASONS = frozenset({BANDWIDTH_NOT_ON_A_PF, NO_FREE_VF})

    def passes_every_host(self, spec: RequestSpec) -> bool:
        return all(port.vnic_type not in VF_VNIC_TYPES for port in spec.ports)

    def check(self, host: HostState, spec: RequestSpec, candidate: Candidate) -> str | None:
        found = vf_demand(host, spec, candidate)
        return found if isinstance(found, str) else None
