"""A port's ``resource_request``: what its QoS minimum rules ask of Placement.

    {"request_groups": [
        {"id": "<uuid5(port, 'bandwidth')>",
         "required": ["CUSTOM_PHYSNET_PHYSNET0", "CUSTOM_VNIC_TYPE_NORMAL"],
         "resources": {"NET_BW_EGR_KILOBIT_PER_SEC": 1000, "NET_BW_IGR_KILOBIT_PER_SEC": 1000}},
        {"id": "<uuid5(port, 'packet-rate')>",
         "required": ["CUSTOM_VNIC_TYPE_NORMAL"],
         "resources": {"NET_PACKET_RATE_KILOPACKET_PER_SEC": 1000}}],
     "same_subtree": ["<bandwidth id>", "<packet-rate id>"]}

Bandwidth is guaranteed by a bridge or physical function, so its group names the physical
networks the port may use; packet rate is guaranteed by the agent, whose provider carries no
physical network. ``same_subtree`` keeps both under one agent. Group ids derive from the port and
the kind of group only, so the same rules always give the same request: the compute side can keep
the mapping it got from Placement, a policy change that asks for the same resources is no
change at all, and one that changes amounts keeps each group on its provider
(``allocation_change``).
"""

from __future__ import annotations

import functools
import uuid
from collections.abc import Iterable, Sequence
from typing import Final

from berth.network import exceptions
from berth.network.model import (
    BandwidthLimitRule,
    MinimumBandwidthRule,
    MinimumPacketRateRule,
    QosRule,
    RequestGroup,
    ResourceRequest,
)
from berth.network.traits import physnet_trait, vnic_type_trait

__all__ = [
    "BANDWIDTH",
    "PACKET_RATE",
    "check_rules",
    "group_id",
    "is_physnet_requirement",
    "physnet_requirement",
    "physnet_trait",
    "requirement_met",
    "resource_request",
    "rules_in_effect",
    "vnic_type_trait",
]

BANDWIDTH: Final = "bandwidth"
PACKET_RATE: Final = "packet-rate"

_BANDWIDTH_CLASSES: Final = {
    "egress": "NET_BW_EGR_KILOBIT_PER_SEC",
    "ingress": "NET_BW_IGR_KILOBIT_PER_SEC",
}
_PACKET_RATE_CLASSES: Final = {
    "any": "NET_PACKET_RATE_KILOPACKET_PER_SEC",
    "egress": "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC",
    "ingress": "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC",
}

# The rule_type names the Networking API uses.
_RULE_TYPES: Final[dict[type, str]] = {
    MinimumBandwidthRule: "minimum_bandwidth",
    MinimumPacketRateRule: "minimum_packet_rate",
    BandwidthLimitRule: "bandwidth_limit",
}

# Group ids must be the same from every network service instance, forever: never change this.
_GROUP_NAMESPACE: Final = uuid.UUID("1f0e3d2c-8b6a-4e59-a7d1-5c4b3a291807")


# A port's request is worked out several times per request (its binding's read ahead, plan and
# answer) and per boot, and a name-based UUID costs a SHA-1 and a UUID object each time.
@functools.lru_cache(maxsize=4096)
def group_id(port_id: str, kind: str) -> str:
    """The stable id of the port's ``kind`` (BANDWIDTH or PACKET_RATE) request group."""
    return str(uuid.uuid5(_GROUP_NAMESPACE, f"{port_id}/{kind}"))


def physnet_requirement(physical_networks: Iterable[str | None]) -> str | None:
    """The required-trait entry for a network's physical networks: one trait, the any-of form
    ``in:A,B`` (Placement 1.39) for several, None for a network of overlays only."""
    traits = sorted({physnet_trait(p) for p in physical_networks if p})
    if not traits:
        return None
    return traits[0] if len(traits) == 1 else "in:" + ",".join(traits)


def is_physnet_requirement(required: str) -> bool:
    """Whether an entry of a group's ``required`` names physical networks."""
    return required.removeprefix("in:").startswith("CUSTOM_PHYSNET_")


def requirement_met(required: str, traits: frozenset[str]) -> bool:
    """Whether a provider's traits meet one entry of a group's ``required``: a trait ``T``, a
    forbidden trait ``!T``, or the any-of form ``in:A,B``."""
    if required.startswith("in:"):
        return any(t in traits for t in required[3:].split(","))
    if required.startswith("!"):
        return required[1:] not in traits
    return required in traits


def rules_in_effect(
    port_policy_rules: Sequence[QosRule] | None, network_policy_rules: Sequence[QosRule] | None
) -> tuple[QosRule, ...]:
    """A port's own policy (None when it has none) wins over its network's, even without rules."""
    if port_policy_rules is not None:
        return tuple(port_policy_rules)
    return tuple(network_policy_rules or ())


def check_rules(rules: Iterable[QosRule]) -> None:
    """Refuse (409) a policy whose minimum rules could never be served: two rules of one kind
    for one direction, or a packet rate for "any" direction beside a directed one (an agent
    reports one or the other, never both)."""
    seen: set[tuple[str, str]] = set()
    for rule in rules:
        key = (_RULE_TYPES[type(rule)], rule.direction)
        if key in seen:
            raise exceptions.QosRuleConflict(
                f"A QoS policy may have only one {key[0]} rule for direction {rule.direction}."
            )
        seen.add(key)
    packet = {d for kind, d in seen if kind == "minimum_packet_rate"}
    if "any" in packet and packet - {"any"}:
        raise exceptions.QosRuleConflict(
            "A minimum packet rate rule for direction any cannot be combined with one for "
            "egress or ingress."
        )


def resource_request(
    port_id: str,
    vnic_type: str,
    rules: Iterable[QosRule],
    physical_networks: Iterable[str | None],
) -> ResourceRequest | None:
    """The port's request given the QoS rules in effect (see ``rules_in_effect``) and the
    physical networks of its network's segments; None when no rule asks for a minimum.

    A rule with a zero minimum asks for nothing (Placement refuses amounts of zero)."""
    return _worked_out(port_id, vnic_type, tuple(rules), tuple(physical_networks))


# A port's request is asked for at its creation, its answers and its binding, from the same
# rules and segments each time: worked out once. It is not stored with the port, as a change
# of the policy's rules or of the network's segments changes it; a change of either is a new
# key here. (Entries are small; a port's are needed only while it is made and bound.)
_REQUESTS_KEPT = 4096


@functools.lru_cache(maxsize=_REQUESTS_KEPT)
def _worked_out(
    port_id: str,
    vnic_type: str,
    rules: tuple[QosRule, ...],
    physical_networks: tuple[str | None, ...],
) -> ResourceRequest | None:
    check_rules(rules)
    vnic = vnic_type_trait(vnic_type)
    bandwidth = {
        _BANDWIDTH_CLASSES[r.direction]: r.min_kbps
        for r in rules
        if isinstance(r, MinimumBandwidthRule) and r.min_kbps > 0
    }
    packet_rate = {
        _PACKET_RATE_CLASSES[r.direction]: r.min_kpps
        for r in rules
        if isinstance(r, MinimumPacketRateRule) and r.min_kpps > 0
    }
    groups = []
    if bandwidth:
        physnet = physnet_requirement(physical_networks)
        required = (physnet, vnic) if physnet else (vnic,)
        groups.append(RequestGroup(group_id(port_id, BANDWIDTH), required, _sorted(bandwidth)))
    if packet_rate:
        groups.append(RequestGroup(group_id(port_id, PACKET_RATE), (vnic,), _sorted(packet_rate)))
    if not groups:
        return None
    return ResourceRequest(tuple(groups), tuple(g.id for g in groups))


def _sorted(resources: dict[str, int]) -> dict[str, int]:
    return dict(sorted(resources.items()))
