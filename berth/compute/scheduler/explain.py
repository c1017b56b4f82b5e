"""Why Placement found nothing for a request, request group by request group.

Asked only when the one query of a RequestSpec (``placement_query``) found no candidate, so
the normal path costs nothing more. Each group of the query (the flavor's unsuffixed group,
its granular groups, each port's groups) is asked about alone, with ``limit=1``; a group that
cannot be met alone is taken apart, cheapest question first, until something is found short:

    code                   subject              asked                          means
    missing-trait          trait, or in:A,B     GET /resource_providers        no provider has it
                                                ?required=T
    disabled-hosts         -                    the group without              only disabled
                                                root_required                  nodes have room
    insufficient-resource  resource class       the group's traits and this    no provider (for a
                                                class alone                    port: on its physnet)
                                                                               has that much
    resources-together     RC:N,RC:N            the group's traits and all     each class fits,
                                                its classes                    never all at once
    forbidden-trait        trait                ... and one forbidden trait    every fit has it
    member-of              aggregates           ... and one member_of          the zone, or the
                                                                               port's segments,
                                                                               have no fit
    in-tree                compute node         ... and in_tree                the asked-for node
                                                                               has no room
    rules-together         -                    (nothing above was short)      each rule holds,
                                                                               never all at once

When every group is met alone the request fails only as a whole:

    same-subtree           suffixes             the query without that         a port's groups
                                                same_subtree                   are on different
                                                                               subtrees
    groups-together        -                    (otherwise)                    no one host for all

A bandwidth or packet-rate shortfall says its direction (from the class: ``NET_BW_EGR_*`` is
egress, ``*_IGR_*`` ingress) and its physical network (from the port's ``CUSTOM_PHYSNET_*``
required traits; the trait's name, as Placement only knows that).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Collection, Mapping
from typing import Final

from berth.compute.objects.diagnosis import FLAVOR, GroupVerdict, Shortfall
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.scheduler.placement_query import Group, PlacementQuery

__all__ = ["Probes", "explain"]

Pairs = list[tuple[str, str]]

PHYSNET_PREFIX: Final = "CUSTOM_PHYSNET_"
# Resource class -> (what it measures, unit), for the ones a port asks for.
_NETWORK_CLASSES: Final = {
    "NET_BW_EGR_KILOBIT_PER_SEC": ("egress bandwidth", "kbps"),
    "NET_BW_IGR_KILOBIT_PER_SEC": ("ingress bandwidth", "kbps"),
    "NET_PACKET_RATE_KILOPACKET_PER_SEC": ("packet rate (either direction)", "kpps"),
    "NET_PACKET_RATE_EGR_KILOPACKET_PER_SEC": ("egress packet rate", "kpps"),
    "NET_PACKET_RATE_IGR_KILOPACKET_PER_SEC": ("ingress packet rate", "kpps"),
}


@dataclasses.dataclass(frozen=True)
class Probes:
    """The two questions asked of Placement, each True when the answer is not empty:
    ``candidates`` (``GET /allocation_candidates``) and ``providers`` (``GET
    /resource_providers``). A refused question (an unknown trait, say) answers False."""

    candidates: Callable[[Pairs], bool]
    providers: Callable[[Pairs], bool]


def explain(
    query: PlacementQuery,
    spec: RequestSpec,
    probes: Probes,
    zone_aggregates: Mapping[str, Collection[str]] | None = None,
) -> tuple[tuple[GroupVerdict, ...], tuple[Shortfall, ...]]:
    """Per group of ``query`` its verdict, then what fails only when they are asked together."""
    limits = _limit_sources(spec, zone_aggregates or {})
    owners = dict(query.port_groups or {})
    verdicts = []
    for group in query.groups:
        owner, request_group = owners.get(group.suffix, (FLAVOR, None))
        shortfalls = _why(group, query, probes, limits)
        verdicts.append(
            GroupVerdict(owner, group.suffix, not shortfalls, tuple(shortfalls), request_group)
        )
    if any(not v.met_alone for v in verdicts):
        return tuple(verdicts), ()
    return tuple(verdicts), tuple(_together(query, probes, owners))


def _why(
    group: Group,
    query: PlacementQuery,
    probes: Probes,
    limits: Mapping[tuple[str, ...], tuple[tuple[str, str], ...]],
) -> list[Shortfall]:
    missing = _missing_traits(group, query, probes)
    if missing or not group.resources:
        return missing
    if _met(probes, query, group):
        return []
    if _met(probes, query, group, root_rules=False):
        return [Shortfall("disabled-hosts")]
    physnet = _physnet(group)
    rules = Group(group.suffix, group.resources, group.required, any_of=group.any_of)
    for rc, amount in sorted(group.resources.items()):
        if not _met(probes, query, dataclasses.replace(rules, resources={rc: amount})):
            return [_insufficient(rc, amount, physnet)]
    if len(group.resources) > 1 and not _met(probes, query, rules):
        subject = ",".join(f"{rc}:{n}" for rc, n in sorted(group.resources.items()))
        return [Shortfall("resources-together", subject)]
    for trait in group.forbidden:
        if not _met(probes, query, dataclasses.replace(rules, forbidden=(trait,))):
            return [Shortfall("forbidden-trait", trait)]
    ruled = dataclasses.replace(rules, forbidden=group.forbidden)
    for aggregates in group.member_of:
        if not _met(probes, query, dataclasses.replace(ruled, member_of=(aggregates,))):
            detail = limits.get(aggregates, ())
            return [Shortfall("member-of", ",".join(aggregates), detail=detail)]
    if group.in_tree and not _met(probes, query, dataclasses.replace(ruled, in_tree=group.in_tree)):
        return [Shortfall("in-tree", group.in_tree)]
    return [Shortfall("rules-together")]


def _missing_traits(group: Group, query: PlacementQuery, probes: Probes) -> list[Shortfall]:
    """The group's required traits (and any-of sets) that no provider has at all."""
    asked = [(t, t) for t in group.required] + [("in:" + ",".join(a),) * 2 for a in group.any_of]
    return [
        Shortfall("missing-trait", name)
        for name, rule in asked
        if not probes.providers([("required", rule)])
    ]


def _together(
    query: PlacementQuery, probes: Probes, owners: Mapping[str, tuple[str, str]]
) -> list[Shortfall]:
    for subtree in query.same_subtree:
        without = dataclasses.replace(
            query, same_subtree=tuple(s for s in query.same_subtree if s != subtree), limit=1
        )
        if probes.candidates(without.pairs()):
            port = owners.get(subtree[0], ("", ""))[0]
            return [Shortfall("same-subtree", ",".join(subtree), detail=(("port", port),))]
    return [Shortfall("groups-together")]


def _met(probes: Probes, query: PlacementQuery, group: Group, root_rules: bool = True) -> bool:
    alone = PlacementQuery(
        groups=(group,),
        root_forbidden=query.root_forbidden if root_rules else (),
        limit=1,
        version=query.version,
    )
    return probes.candidates(alone.pairs())


def _physnet(group: Group) -> str | None:
    names = [t for t in group.required if t.startswith(PHYSNET_PREFIX)]
    names += [t for any_of in group.any_of for t in any_of if t.startswith(PHYSNET_PREFIX)]
    return " or ".join(t[len(PHYSNET_PREFIX) :] for t in names) or None


def _insufficient(rc: str, amount: int, physnet: str | None) -> Shortfall:
    detail: list[tuple[str, str]] = []
    if rc in _NETWORK_CLASSES:
        kind, unit = _NETWORK_CLASSES[rc]
        detail += [("kind", kind), ("unit", unit)]
        if physnet:
            detail.append(("physical_network", physnet))
    return Shortfall("insufficient-resource", rc, amount, tuple(detail))


def _limit_sources(
    spec: RequestSpec, zone_aggregates: Mapping[str, Collection[str]]
) -> dict[tuple[str, ...], tuple[tuple[str, str], ...]]:
    """Where each ``member_of`` of the unnamed group comes from: the availability zone, or the
    segments a routed port may use (as ``placement_query`` writes them: sorted uuids)."""
    sources: dict[tuple[str, ...], tuple[tuple[str, str], ...]] = {}
    for port in spec.ports:
        if port.segment_aggregates:
            sources[tuple(sorted(port.segment_aggregates))] = (("port", port.port_id),)
    zone = spec.availability_zone
    if zone and zone_aggregates.get(zone):
        sources[tuple(sorted(zone_aggregates[zone]))] = (("availability_zone", zone),)
    return sources
