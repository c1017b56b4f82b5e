"""A RequestSpec as the one ``GET /allocation_candidates`` query, and its answer's mappings as
the allocation each port's binding profile names.

The query, group by group (see ``flavor_groups`` for the flavor's part)::

    resources=DISK_GB:20,MEMORY_MB:2048,VCPU:2     unnamed group: the flavor
    required=HW_CPU_X86_AVX2,!CUSTOM_SLOW          its trait rules (flavor and image)
    member_of=in:AZ_AGG_1,AZ_AGG_2                 the availability zone's aggregates
    member_of=in:SEG_AGG_1,SEG_AGG_2               one per routed port: its segments' aggregates
    in_tree=NODE                                   a requested compute node
    resources1=CUSTOM_X:1  required1=...           the flavor's granular groups
    resources<G>=NET_BW_EGR_KILOBIT_PER_SEC:1000   one group per port request group; its suffix
    required<G>=CUSTOM_VNIC_TYPE_NORMAL            is the group id (see ``group_suffix``)
    required<G>=in:CUSTOM_PHYSNET_A,CUSTOM_PHYSNET_B
    same_subtree=<G1>,<G2>                         one port's groups under one provider subtree
    group_policy=none                              with two or more suffixed groups
    root_required=!COMPUTE_STATUS_DISABLED         never a disabled compute node
    limit=1000

Where the segment constraint goes: the network service puts a segment's aggregate on the segment's
provider and on the *compute node* (the root provider) of every host that reaches the segment; the
bandwidth providers below the node are not in it. A suffixed group is served by one provider, so
``member_of<G>`` on a port's bandwidth group would match no provider at all. The unnamed group's
``member_of`` is met by a provider or by its root, so it is where the segment aggregates go: "this
tree's compute node reaches one of the port's segments". Each routed port adds its own
``member_of`` (all must hold, from 1.24); a port with no segment aggregates adds nothing.

Group policy: Placement wants one as soon as two suffixed groups are asked for. The flavor's
``group_policy`` wins; otherwise ``none``, since two ports may well draw bandwidth from the same
physical function (``isolate`` would refuse that, and it applies to port groups too when a flavor
asks for it).

Disabled hosts: ``COMPUTE_STATUS_DISABLED`` is a trait of the compute node, so it is forbidden on
the root (``root_required``, 1.35) rather than in the unnamed group, whose forbidden traits apply
only to the providers that serve its classes: with VCPU and memory on NUMA child providers a
disabled node would slip through.

Microversion: 1.35 at least (root_required; it also brings string suffixes, 1.33, and mappings,
1.34, which map port groups back to providers, and nested candidates with root providers in the
summaries, 1.29); 1.36 for ``same_subtree`` or a port group without resources; 1.39 for an
any-of ``in:`` trait rule.
"""

from __future__ import annotations

import hashlib
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final
from urllib.parse import urlencode

from berth.compute.objects.request_spec import PortRequest, RequestSpec
from berth.compute.scheduler.flavor_groups import (
    SUFFIX,
    GroupRules,
    QueryError,
    flavor_groups,
    natural_key,
)

__all__ = [
    "DISABLED_TRAIT",
    "Group",
    "MappingError",
    "PlacementQuery",
    "QueryError",
    "build_query",
    "group_suffix",
    "port_allocations",
    "port_group",
]

DISABLED_TRAIT: Final = "COMPUTE_STATUS_DISABLED"
DEFAULT_LIMIT: Final = 1000
_BASE_VERSION: Final = (1, 35)
Pairs = list[tuple[str, str]]


class MappingError(ValueError):
    """A candidate's mappings do not give exactly one provider to a port's request group."""


@dataclass(frozen=True, slots=True)
class Group:
    """One request group as it goes on the wire."""

    suffix: str
    resources: Mapping[str, int]
    required: tuple[str, ...] = ()
    forbidden: tuple[str, ...] = ()
    # Each entry is one any-of rule (``in:A,B``).
    any_of: tuple[tuple[str, ...], ...] = ()
    # Each entry is one ``member_of`` (an any-of set of aggregate uuids); all must hold.
    member_of: tuple[tuple[str, ...], ...] = ()
    in_tree: str | None = None

    def pairs(self) -> Pairs:
        s = self.suffix
        out: Pairs = []
        if self.resources:
            amounts = ",".join(f"{rc}:{n}" for rc, n in sorted(self.resources.items()))
            out.append((f"resources{s}", amounts))
        traits = sorted(self.required) + [f"!{t}" for t in sorted(self.forbidden)]
        if traits:
            out.append((f"required{s}", ",".join(traits)))
        out += [(f"required{s}", "in:" + ",".join(any_of)) for any_of in self.any_of]
        out += [(f"member_of{s}", _any_of(aggs)) for aggs in self.member_of]
        if self.in_tree:
            out.append((f"in_tree{s}", self.in_tree))
        return out


@dataclass(frozen=True, slots=True)
class PlacementQuery:
    groups: tuple[Group, ...]
    same_subtree: tuple[tuple[str, ...], ...] = ()
    group_policy: str | None = None
    root_forbidden: tuple[str, ...] = (DISABLED_TRAIT,)
    limit: int | None = DEFAULT_LIMIT
    version: tuple[int, int] = _BASE_VERSION
    # Suffix -> (port id, request group id), for every port request group in the query.
    port_groups: Mapping[str, tuple[str, str]] | None = None

    @property
    def microversion(self) -> str:
        return f"{self.version[0]}.{self.version[1]}"

    def pairs(self) -> Pairs:
        """The query as ``(key, value)`` pairs, in a fixed order (give them to the HTTP client)."""
        out: Pairs = []
        for group in self.groups:
            out += group.pairs()
        out += [("same_subtree", ",".join(s)) for s in self.same_subtree]
        if self.group_policy:
            out.append(("group_policy", self.group_policy))
        if self.root_forbidden:
            out.append(("root_required", ",".join(f"!{t}" for t in self.root_forbidden)))
        if self.limit is not None:
            out.append(("limit", str(self.limit)))
        return out

    def query_string(self) -> str:
        return urlencode(self.pairs(), safe=":,!")

    def __str__(self) -> str:
        """Readable and canonical, for logs: the same spec always gives the same line."""
        query = "&".join(f"{k}={v}" for k, v in self.pairs())
        return f"GET /allocation_candidates?{query} (placement {self.microversion})"


def group_suffix(group_id: str) -> str:
    """The suffix of a port request group: its id when Placement accepts that as a suffix (a
    UUID does: 36 characters of hex digits and dashes), else a digest of it. Stable, so the
    same group always maps back the same way."""
    if SUFFIX.fullmatch(group_id):
        return group_id
    return "g" + hashlib.sha256(group_id.encode()).hexdigest()[:40]


def build_query(
    spec: RequestSpec,
    *,
    az_aggregates: Mapping[str, Collection[str]] | None = None,
    limit: int | None = DEFAULT_LIMIT,
) -> PlacementQuery:
    """The one query for ``spec`` (the same for each of its instances).

    ``az_aggregates`` maps an availability zone name to its aggregates' uuids; a zone with none
    (the default zone: hosts in no zone aggregate) adds no ``member_of`` and is left to the
    AvailabilityZoneFilter. Raises QueryError for what Placement could never answer.
    """
    fg = flavor_groups(spec.flavor, spec.image, boot_from_volume=spec.boot_from_volume)
    unnamed = _unnamed_group(spec, fg.unnamed, az_aggregates or {})
    groups = [unnamed]
    groups += [_rules_group(s, fg.suffixed[s]) for s in sorted(fg.suffixed, key=natural_key)]
    used = {g.suffix for g in groups}
    port_groups: dict[str, tuple[str, str]] = {}
    same_subtree: list[tuple[str, ...]] = []
    for port in spec.ports:
        suffixes = {}
        for raw in port.request_groups:
            group = port_group(port, raw)
            if group.suffix in used:
                raise QueryError(
                    f"port {port.port_id}: request group {raw['id']} clashes with another "
                    f"request group (suffix {group.suffix})"
                )
            used.add(group.suffix)
            groups.append(group)
            suffixes[str(raw["id"])] = group.suffix
            port_groups[group.suffix] = (port.port_id, str(raw["id"]))
        subtree = _same_subtree(port, suffixes)
        if subtree:
            same_subtree.append(subtree)
        in_subtree = set(subtree)
        for gid, suffix in suffixes.items():
            if not _group(groups, suffix).resources and suffix not in in_subtree:
                raise QueryError(
                    f"port {port.port_id}: request group {gid} asks for no resources and is "
                    "not in a same_subtree with one that does"
                )
    if not unnamed.resources and (unnamed.required or unnamed.member_of or unnamed.in_tree):
        raise QueryError(
            "the flavor leaves the unnamed request group without resources, so its traits, "
            "availability zone and routed-network segments cannot be asked for"
        )
    if not any(g.resources for g in groups):
        raise QueryError("the request asks for no resources at all")
    suffixed = sum(1 for g in groups if g.suffix)
    policy = fg.group_policy or ("none" if suffixed >= 2 else None)
    return PlacementQuery(
        groups=tuple(g for g in groups if g.suffix or g.resources),
        same_subtree=tuple(same_subtree),
        group_policy=policy,
        limit=limit,
        version=_version(groups, same_subtree),
        port_groups=port_groups,
    )


def _unnamed_group(
    spec: RequestSpec, rules: GroupRules, az_aggregates: Mapping[str, Collection[str]]
) -> Group:
    member_of: list[tuple[str, ...]] = []
    if spec.availability_zone:
        member_of.append(tuple(sorted(az_aggregates.get(spec.availability_zone, ()))))
    destination = spec.destination
    if destination is not None:
        member_of += [tuple(sorted(aggs)) for aggs in destination.aggregates]
    member_of += [tuple(sorted(p.segment_aggregates)) for p in spec.ports]
    if DISABLED_TRAIT in rules.required:
        raise QueryError(f"a server cannot ask for a compute node with {DISABLED_TRAIT}")
    return Group(
        suffix="",
        resources=dict(rules.resources),
        required=tuple(sorted(rules.required)),
        forbidden=tuple(sorted(rules.forbidden)),
        member_of=tuple(dict.fromkeys(aggs for aggs in member_of if aggs)),
        in_tree=destination.node_uuid if destination is not None else None,
    )


def _rules_group(suffix: str, rules: GroupRules) -> Group:
    return Group(
        suffix=suffix,
        resources=dict(rules.resources),
        required=tuple(sorted(rules.required)),
        forbidden=tuple(sorted(rules.forbidden)),
    )


def port_group(port: PortRequest, raw: Mapping[str, Any]) -> Group:
    gid = raw.get("id")
    if not isinstance(gid, str) or not gid:
        raise QueryError(f"port {port.port_id}: a request group has no id")
    resources: dict[str, int] = {}
    for rc, amount in (raw.get("resources") or {}).items():
        if not isinstance(amount, int) or isinstance(amount, bool) or amount < 0:
            raise QueryError(f"port {port.port_id}: bad amount {amount!r} of {rc}")
        if amount:
            resources[str(rc)] = amount
    required: list[str] = []
    forbidden: list[str] = []
    any_of: list[tuple[str, ...]] = []
    for entry in raw.get("required") or ():
        if entry.startswith("in:"):
            traits = tuple(sorted(set(entry[3:].split(","))))
            if len(traits) == 1:
                required.append(traits[0])
            else:
                any_of.append(traits)
        elif entry.startswith("!"):
            forbidden.append(entry[1:])
        else:
            required.append(entry)
    clash = set(required) & set(forbidden)
    if clash:
        raise QueryError(
            f"port {port.port_id}: request group {gid} requires and forbids {min(clash)}"
        )
    return Group(
        suffix=group_suffix(gid),
        resources=resources,
        required=tuple(sorted(set(required))),
        forbidden=tuple(sorted(set(forbidden))),
        any_of=tuple(any_of),
    )


def _same_subtree(port: PortRequest, suffixes: Mapping[str, str]) -> tuple[str, ...]:
    """The port's ``same_subtree`` as suffixes; empty when it names fewer than two groups (one
    group is always in its own subtree, and asking would only raise the microversion)."""
    unknown = [gid for gid in port.same_subtree if gid not in suffixes]
    if unknown:
        raise QueryError(
            f"port {port.port_id}: same_subtree names request groups it does not have: "
            + ", ".join(unknown)
        )
    names = tuple(dict.fromkeys(suffixes[gid] for gid in port.same_subtree))
    return names if len(names) >= 2 else ()


def _group(groups: Sequence[Group], suffix: str) -> Group:
    return next(g for g in groups if g.suffix == suffix)


def _version(groups: Sequence[Group], same_subtree: Sequence[tuple[str, ...]]) -> tuple[int, int]:
    if any(g.any_of for g in groups):
        return (1, 39)
    if same_subtree or any(g.suffix and not g.resources for g in groups):
        return (1, 36)
    return _BASE_VERSION


def _any_of(values: Sequence[str]) -> str:
    return values[0] if len(values) == 1 else "in:" + ",".join(values)


def port_allocations(
    ports: Sequence[PortRequest], mappings: Mapping[str, Sequence[str]]
) -> dict[str, dict[str, str]]:
    """``port id -> {request group id -> provider uuid}`` from a candidate's ``mappings``
    (suffix -> provider uuids), for the ``allocation`` of each port's binding profile. Ports
    without request groups are left out. Raises MappingError when a group is not mapped to
    exactly one provider (the candidate was not made from this spec's query)."""
    result: dict[str, dict[str, str]] = {}
    for port in ports:
        groups: dict[str, str] = {}
        for raw in port.request_groups:
            gid = str(raw["id"])
            providers = list(mappings.get(group_suffix(gid), ()))
            if len(providers) != 1:
                raise MappingError(
                    f"port {port.port_id}: request group {gid} is mapped to {len(providers)} "
                    "providers, not one"
                )
            groups[gid] = providers[0]
        if groups:
            result[port.port_id] = groups
    return result
