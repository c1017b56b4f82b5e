"""Whether a port can be bound on a host, and how: the decision behind a port binding.

A pure function of what the store read: the port, its network's segments and subnets, the host's
agents and the host's providers in Placement. It returns a BindingPlan (the agent, the segment,
the VIF, the subnets to take an address from) or a BindingRefused whose reason is one of a fixed
set of codes, so the conductor can count refusals and move on to the next alternate host.

The checks run cheapest and most general first:

    no-agent               no agent runs on the host
    vnic-type-unsupported  none of its agents binds the port's VNIC type
    agent-dead             every agent that could is not reporting
    agent-disabled         every live one is administratively down
    allocation-missing     the port has a resource request and the binding profile's
                           allocation does not map every request group to a provider
    allocation-wrong-provider
                           a mapped provider is not in the host's tree or cannot serve its group
                           (then agent-dead or agent-disabled again, for the agent holding it)
    segment-unreachable    the agent reaches no segment the port may use
    no-free-ip             the port needs an address and the reachable segments have none left
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from berth.network import exceptions
from berth.network.model import (
    OVS_AGENT,
    Agent,
    AgentType,
    HostProvider,
    Port,
    RequestGroup,
    Segment,
    Subnet,
)
from berth.network.resource_request import is_physnet_requirement, requirement_met
from berth.network.traits import physnet_trait

VIF_OVS = "ovs"
VIF_HW_VEB = "hw_veb"
VIF_HOSTDEV_PHYSICAL = "hostdev_physical"


class Reason(StrEnum):
    """Why a binding was refused. Stable codes: never rename or reuse one."""

    NO_AGENT = "no-agent"
    VNIC_TYPE_UNSUPPORTED = "vnic-type-unsupported"
    AGENT_DEAD = "agent-dead"
    AGENT_DISABLED = "agent-disabled"
    ALLOCATION_MISSING = "allocation-missing"
    ALLOCATION_WRONG_PROVIDER = "allocation-wrong-provider"
    SEGMENT_UNREACHABLE = "segment-unreachable"
    NO_FREE_IP = "no-free-ip"


@dataclass(frozen=True, slots=True)
class BindingRefused:
    reason: Reason
    # Names the port and the host, for people; count by ``reason``.
    message: str

    def as_error(self) -> exceptions.PortBindingError:
        return exceptions.PortBindingError(f"{self.message} ({self.reason})")


@dataclass(frozen=True, slots=True)
class BindingPlan:
    host: str
    agent_type: AgentType
    segment: Segment
    vnic_type: str
    vif_type: str
    vif_details: Mapping[str, Any]
    # The bridge or physical function behind the segment when known (the allocated one first).
    device: str | None
    # Subnets to take an address from now (deferred allocation): one per IP version, IPv4 first.
    allocate_ip_on: tuple[str, ...] = ()


def reachable_segments(agent: Agent, segments: Iterable[Segment]) -> frozenset[str]:
    """The ids of the segments the agent reaches (see ``Agent.reaches``)."""
    return frozenset(s.id for s in segments if agent.reaches(s))


@dataclass(frozen=True, slots=True)
class _Pin:
    """What the port's allocation fixes: the agent, and the device holding its bandwidth."""

    agent: Agent
    bandwidth: tuple[RequestGroup, HostProvider] | None

    def serves(self, segment: Segment) -> bool:
        if self.bandwidth is None:
            return True
        group, provider = self.bandwidth
        if segment.physical_network:
            return physnet_trait(segment.physical_network) in provider.traits
        # An overlay segment can use the bandwidth only if the request named no physical network.
        return not any(is_physnet_requirement(r) for r in group.required)


def plan_binding(
    port: Port,
    segments: Sequence[Segment],
    host: str,
    agents: Sequence[Agent],
    providers: Mapping[str, HostProvider] | None = None,
    *,
    subnets: Sequence[Subnet] = (),
    free_ips: Mapping[str, int] | None = None,
    reachable: Mapping[str, frozenset[str]] | None = None,
) -> BindingPlan | BindingRefused:
    """Decide how ``port`` binds on ``host``.

    ``segments`` and ``subnets`` are the port's network's, segments in their order (the first
    reachable one wins). ``agents`` may include other hosts' agents. ``providers`` are the
    network's providers in the host's Placement tree, by uuid. ``free_ips`` is the number of
    allocatable addresses per subnet id (only deferred ports without an address read it).
    ``reachable`` is the segment ids each of the host's agents reaches, by agent type, when the
    caller has it; it is computed from the agents' mappings otherwise.
    """

    def refuse(reason: Reason, why: str) -> BindingRefused:
        return BindingRefused(reason, f"Port {port.id} cannot be bound on host {host}: {why}.")

    here = [a for a in agents if a.host == host]
    if not here:
        return refuse(Reason.NO_AGENT, "no network agent runs there")
    usable = [a for a in here if port.vnic_type in a.vnic_types]
    if not usable:
        kinds = ", ".join(sorted(a.agent_type for a in here))
        return refuse(
            Reason.VNIC_TYPE_UNSUPPORTED, f"no agent binds VNIC type {port.vnic_type} ({kinds})"
        )
    usable = [a for a in usable if a.alive]
    if not usable:
        return refuse(Reason.AGENT_DEAD, f"the agent for VNIC type {port.vnic_type} is not alive")
    usable = [a for a in usable if a.admin_state_up]
    if not usable:
        return refuse(
            Reason.AGENT_DISABLED, f"the agent for VNIC type {port.vnic_type} is disabled"
        )

    pin = None
    if port.resource_request is not None and port.resource_request.request_groups:
        found = _check_allocation(port, port.resource_request.request_groups, here, providers or {})
        if isinstance(found, tuple):
            return refuse(*found)
        pin = found
        usable = [pin.agent]

    allowed = _allowed_segments(port, segments, subnets)
    options = []
    for agent in usable:
        reached = (
            reachable.get(agent.agent_type, frozenset())
            if reachable is not None
            else reachable_segments(agent, segments)
        )
        options += [
            (agent, s) for s in allowed if s.id in reached and (pin is None or pin.serves(s))
        ]
    if not options:
        return refuse(Reason.SEGMENT_UNREACHABLE, "it reaches no segment the port may use")

    for agent, segment in options:
        addresses = _addresses_needed(port, segment, subnets, free_ips or {})
        if addresses is not None:
            return _plan(port, host, agent, segment, pin, addresses)
    return refuse(
        Reason.NO_FREE_IP, "no subnet of the segments it reaches has a free IP address left"
    )


def _check_allocation(
    port: Port,
    groups: Sequence[RequestGroup],
    here: Sequence[Agent],
    providers: Mapping[str, HostProvider],
) -> _Pin | tuple[Reason, str]:
    """The agent (and bandwidth device) the allocation in the binding profile points at, or why
    that allocation cannot serve the port on this host."""
    allocation = port.binding_profile.get("allocation")
    if not isinstance(allocation, Mapping):
        return (
            Reason.ALLOCATION_MISSING,
            "the port has a resource request but its binding profile has no allocation "
            "mapping each request group to a resource provider",
        )
    missing = sorted(g.id for g in groups if g.id not in allocation)
    if missing:
        return Reason.ALLOCATION_MISSING, f"no provider for request group(s) {', '.join(missing)}"
    unknown = sorted(set(allocation) - {g.id for g in groups})
    if unknown:
        return (
            Reason.ALLOCATION_WRONG_PROVIDER,
            f"the allocation names request group(s) {', '.join(unknown)} the port does not have",
        )
    held: dict[str, HostProvider] = {}
    for group in groups:
        uuid = str(allocation[group.id])
        provider = providers.get(uuid)
        problem = (
            "is not in the host's resource provider tree"
            if provider is None
            else _cannot_serve(group, provider)
        )
        if problem or provider is None:
            return (
                Reason.ALLOCATION_WRONG_PROVIDER,
                f"resource provider {uuid} for request group {group.id} {problem}",
            )
        held[group.id] = provider
    kinds = {p.agent_type for p in held.values()}
    agent = next((a for a in here if a.agent_type in kinds), None)
    if len(kinds) > 1 or agent is None:
        return (
            Reason.ALLOCATION_WRONG_PROVIDER,
            f"the allocated providers are not under one agent running there ({', '.join(sorted(kinds))})",
        )
    if port.vnic_type not in agent.vnic_types:
        return (
            Reason.ALLOCATION_WRONG_PROVIDER,
            f"the allocation is on the {agent.agent_type}, which does not bind VNIC type {port.vnic_type}",
        )
    if not agent.alive:
        return Reason.AGENT_DEAD, f"the {agent.agent_type} holding the allocation is not alive"
    if not agent.admin_state_up:
        return Reason.AGENT_DISABLED, f"the {agent.agent_type} holding the allocation is disabled"
    bandwidth = next(((g, held[g.id]) for g in groups if g.is_bandwidth), None)
    return _Pin(agent, bandwidth)


def _cannot_serve(group: RequestGroup, provider: HostProvider) -> str | None:
    """Why the provider cannot serve the group, or None when it can."""
    if group.is_bandwidth and provider.device is None:
        return "is an agent; bandwidth is held by a bridge or physical function"
    if not group.is_bandwidth and provider.device is not None:
        return f"is device {provider.device}; packet rate is held by the agent"
    lacking = sorted(set(group.resources) - provider.resource_classes)
    if lacking:
        return f"has no inventory of {', '.join(lacking)}"
    unmet = [r for r in group.required if not requirement_met(r, provider.traits)]
    if unmet:
        return f"does not meet the required trait(s) {', '.join(unmet)}"
    return None


def _allowed_segments(
    port: Port, segments: Sequence[Segment], subnets: Sequence[Subnet]
) -> list[Segment]:
    """The segments the port may use: with an address on a segment's subnet already, only that
    one (the address would not route anywhere else)."""
    segment_of = {s.id: s.segment_id for s in subnets}
    pinned = {segment_of.get(ip.subnet_id) for ip in port.fixed_ips} - {None}
    return [s for s in segments if pinned <= {s.id}]


def _addresses_needed(
    port: Port, segment: Segment, subnets: Sequence[Subnet], free_ips: Mapping[str, int]
) -> tuple[str, ...] | None:
    """The subnets to take an address from on ``segment`` (empty when the port needs none), or
    None when it needs one and the segment cannot give it: one address per IP version the
    segment has subnets of, each from the first such subnet with room."""
    if port.ip_allocation != "deferred" or port.fixed_ips:
        return ()
    here = [s for s in subnets if s.segment_id in (segment.id, None)]
    chosen = []
    for version in sorted({s.ip_version for s in here}):
        found = next(
            (s.id for s in here if s.ip_version == version and free_ips.get(s.id, 0) > 0), None
        )
        if found is None:
            return None
        chosen.append(found)
    return tuple(chosen) if chosen else None


def _plan(
    port: Port,
    host: str,
    agent: Agent,
    segment: Segment,
    pin: _Pin | None,
    addresses: tuple[str, ...],
) -> BindingPlan:
    config = agent.configuration
    device = pin.bandwidth[1].device if pin and pin.bandwidth else None
    if agent.agent_type == OVS_AGENT:
        vif_type = VIF_OVS
        details: dict[str, Any] = {
            "connectivity": "l2",
            "port_filter": True,
            "bridge_name": "br-int",
            "datapath_type": "system",
        }
        if device is None and segment.physical_network:
            device = config.bridge_mappings.get(segment.physical_network)
    else:
        vif_type = VIF_HOSTDEV_PHYSICAL if port.vnic_type == "direct-physical" else VIF_HW_VEB
        vlan = segment.segmentation_id if segment.network_type == "vlan" else 0
        details = {"connectivity": "l2", "port_filter": False, "vlan": str(vlan or 0)}
    return BindingPlan(
        host=host,
        agent_type=agent.agent_type,
        segment=segment,
        vnic_type=port.vnic_type,
        vif_type=vif_type,
        vif_details=details,
        device=device,
        allocate_ip_on=addresses,
    )
