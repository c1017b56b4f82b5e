"""How many more instances of a request fit, host by host: Placement's candidates, less the
hosts the filters remove, each host's candidates counted against its providers' free capacity
(``fit``).

A server group bounds the count: anti-affinity lets a host take ``max_server_per_host`` members
at most (less those on it), and affinity puts every instance on one host (the group's, once it
has members; the filters leave only that one), so the fleet holds as many as that host does.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from berth.compute.objects.request_spec import AFFINITY, ANTI_AFFINITY, RequestSpec
from berth.compute.objects.what_if import HostCapacity
from berth.compute.scheduler.candidates import Candidate, ProviderSummary, ProviderUsage
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import HostFilter, run_filters
from berth.compute.scheduler.fit import most_instances
from berth.compute.scheduler.host_state import HostState

__all__ = ["host_capacities", "together"]


def together(spec: RequestSpec) -> bool:
    """Whether every instance of the request must share one host."""
    return spec.policy() == AFFINITY


def host_capacities(
    spec: RequestSpec,
    candidates: Sequence[Candidate],
    hosts: Iterable[HostState],
    provider_summaries: Mapping[str, ProviderSummary],
    pipeline: Sequence[HostFilter],
) -> tuple[HostCapacity, ...]:
    """Every host the filters keep with room for one more instance, and how many fit there."""
    usage = ProviderUsage(provider_summaries)
    by_node = {h.node_uuid: h for h in hosts}
    options: dict[str, tuple[HostState, list[Candidate]]] = {}
    for candidate in candidates:
        host = by_node.get(candidate.root)
        if host is not None:
            options.setdefault(candidate.root, (host, []))[1].append(candidate)
    kept = run_filters(options, spec, pipeline, Recorder(len(by_node), len(options)))
    found = []
    for host, cands in kept.values():
        free = {
            (rp, rc): usage.free(rp, rc)
            for c in cands
            for rp, amounts in c.allocations.items()
            for rc in amounts
        }
        fit = most_instances([c.allocations for c in cands], free)
        count = min(fit.count, _group_room(spec, host))
        if count > 0:
            found.append(
                HostCapacity(
                    host.host,
                    host.node,
                    host.node_uuid,
                    host.cell_uuid,
                    host.availability_zone,
                    count,
                    fit.exact,
                )
            )
    return tuple(sorted(found, key=lambda h: (-h.instances, h.host, h.node)))


def _group_room(spec: RequestSpec, host: HostState) -> int:
    group = spec.server_group
    if group is None or group.policy != ANTI_AFFINITY:
        return 2**31
    return max(0, group.max_server_per_host - group.members_on(host.host))
