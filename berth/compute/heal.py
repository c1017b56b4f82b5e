"""Healing a live server's allocation and its ports' binding profiles (``berth manage placement
heal-allocations``).

A live server on a host must hold, in Placement, its flavor's resources on its compute node and,
for each port with a resource request, one provider under that node per request group; each
such port's ``binding:profile.allocation`` names those providers. A lost write, an operator's
``DELETE /allocations`` or a restore from backup can break either. ``plan`` compares what is
held with what should be, without I/O; ``heal`` reads the three services, asks Placement for
providers of what is missing and writes the difference (or only says so, with ``dry_run``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from berth.compute.cells import CellRegistry
from berth.compute.clients.http import ServiceUnavailable, call
from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient, PlacementError
from berth.compute.db import compute_nodes, instances, request_specs
from berth.compute.objects.request_spec import PortRequest, RequestSpec
from berth.compute.scheduler.flavor_groups import QueryError, flavor_groups
from berth.compute.scheduler.placement_query import (
    MappingError,
    group_suffix,
    port_allocations,
    port_group,
)
from berth.compute.servers import spec_flavor

# Provider uuid -> resource class -> amount.
Amounts = Mapping[str, Mapping[str, int]]
# Request group id -> provider uuid (a port's ``binding:profile.allocation``).
GroupProviders = Mapping[str, str]


@dataclass(frozen=True)
class PortState:
    """A port of the server with a resource request, and the providers its profile names."""

    request: PortRequest
    profile: GroupProviders


@dataclass(frozen=True)
class Plan:
    """What a server lacks. ``flavor`` is set when it holds no allocation at all."""

    uuid: str
    flavor: Mapping[str, int] | None = None
    # Ports the allocation already serves, under other providers than their profile names.
    relabel: Mapping[str, GroupProviders] = field(default_factory=dict)
    # Ports whose request groups the allocation does not serve.
    unallocated: tuple[PortRequest, ...] = ()

    @property
    def nothing_to_do(self) -> bool:
        return self.flavor is None and not self.relabel and not self.unallocated


def plan(
    uuid: str,
    node_uuid: str,
    flavor: Mapping[str, int],
    held: Amounts,
    traits: Mapping[str, frozenset[str]],
    ports: Sequence[PortState],
) -> Plan:
    """What ``uuid`` lacks, given the flavor's amounts, what it ``held``, the traits of the
    providers it holds, and its ports with resource requests.

    The flavor's part of the node is set aside first; each port then takes, from what is left,
    the providers its profile names if they serve its groups, else any held providers that do
    (its profile is relabelled), else it is unallocated. Ports go in id order, so two runs over
    the same state agree."""
    left = {rp: dict(amounts) for rp, amounts in held.items()}
    if node_uuid in left:
        _take(left, {node_uuid: flavor})
    relabel: dict[str, GroupProviders] = {}
    unallocated: list[PortRequest] = []
    for port in sorted(ports, key=lambda p: p.request.port_id):
        groups = port.request.request_groups
        if _serves(left, traits, groups, port.profile):
            _take(left, _demand(groups, port.profile))
            continue
        found = _find(left, traits, groups)
        if found is None:
            unallocated.append(port.request)
            continue
        _take(left, _demand(groups, found))
        relabel[port.request.port_id] = found
    return Plan(
        uuid=uuid,
        flavor=None if held else dict(flavor),
        relabel=relabel,
        unallocated=tuple(unallocated),
    )


def port_query(
    ports: Sequence[PortRequest], node_uuid: str, limit: int = 1
) -> list[tuple[str, str]]:
    """``GET /allocation_candidates`` for the request groups of ``ports``, each in the tree of
    the server's compute node: only its providers can serve the ports of a server there. An
    interface attach asks for more than one candidate (an SR-IOV port needs a physical
    function with a free virtual function, which Placement does not know of)."""
    pairs: list[tuple[str, str]] = []
    suffixed = 0
    for port in ports:
        for raw in port.request_groups:
            group = dataclasses.replace(port_group(port, raw), in_tree=node_uuid)
            pairs += group.pairs()
            suffixed += 1
        subtree = [group_suffix(gid) for gid in port.same_subtree]
        if len(subtree) >= 2:
            pairs.append(("same_subtree", ",".join(subtree)))
    if suffixed >= 2:
        # Two ports may share a physical function, as at boot.
        pairs.append(("group_policy", "none"))
    return [*pairs, ("limit", str(limit))]


def merge(held: Amounts, added: Amounts) -> dict[str, dict[str, int]]:
    """The two allocations summed, provider by provider."""
    total = {rp: dict(amounts) for rp, amounts in held.items()}
    for rp, amounts in added.items():
        mine = total.setdefault(rp, {})
        for rc, amount in amounts.items():
            mine[rc] = mine.get(rc, 0) + amount
    return total


def _serves(
    left: Amounts,
    traits: Mapping[str, frozenset[str]],
    groups: Sequence[Mapping[str, Any]],
    chosen: GroupProviders,
) -> bool:
    """Whether ``chosen`` names, for each group, a held provider with the group's traits, and
    the groups' resources, all together, are still left on those providers."""
    if any(str(raw["id"]) not in chosen for raw in groups):
        return False
    for raw in groups:
        if not _traits_fit(traits.get(chosen[str(raw["id"])], frozenset()), raw):
            return False
    wanted = _demand(groups, chosen)
    return all(
        left.get(rp, {}).get(rc, 0) >= amount
        for rp, amounts in wanted.items()
        for rc, amount in amounts.items()
    ) and all(rp in left for rp in wanted)


def _find(
    left: Amounts, traits: Mapping[str, frozenset[str]], groups: Sequence[Mapping[str, Any]]
) -> dict[str, str] | None:
    """Held providers for the groups, one by one, the first (by uuid) that serves each."""
    trial = {rp: dict(amounts) for rp, amounts in left.items()}
    found: dict[str, str] = {}
    for raw in groups:
        gid = str(raw["id"])
        pick = next((rp for rp in sorted(trial) if _serves(trial, traits, [raw], {gid: rp})), None)
        if pick is None:
            return None
        found[gid] = pick
        _take(trial, _demand([raw], {gid: pick}))
    return found


def _traits_fit(has: frozenset[str], raw: Mapping[str, Any]) -> bool:
    for rule in raw.get("required") or ():
        if rule.startswith("in:"):
            if not has & set(rule[3:].split(",")):
                return False
        elif rule.startswith("!"):
            if rule[1:] in has:
                return False
        elif rule not in has:
            return False
    return True


def _demand(
    groups: Sequence[Mapping[str, Any]], chosen: GroupProviders
) -> dict[str, dict[str, int]]:
    wanted: dict[str, dict[str, int]] = {}
    for raw in groups:
        rp = chosen[str(raw["id"])]
        mine = wanted.setdefault(rp, {})
        for rc, amount in (raw.get("resources") or {}).items():
            mine[rc] = mine.get(rc, 0) + int(amount)
    return wanted


def _take(left: dict[str, dict[str, int]], taken: Amounts) -> None:
    for rp, amounts in taken.items():
        mine = left.setdefault(rp, {})
        for rc, amount in amounts.items():
            mine[rc] = mine.get(rc, 0) - amount


# -- reading and writing the services ------------------------------------------------------------


@dataclass
class HealReport:
    checked: int = 0
    allocations_created: int = 0
    port_allocations_added: int = 0
    profiles_fixed: int = 0
    # One line per change made (or, with dry_run, that would be made).
    actions: list[str] = field(default_factory=list)
    failures: list[str] = field(default_factory=list)

    def summary(self) -> str:
        return (
            f"{self.checked} servers checked, {self.allocations_created} allocations created, "
            f"{self.port_allocations_added} port allocations added, {self.profiles_fixed} "
            f"profiles fixed, {len(self.failures)} failures"
        )


class _CannotHeal(Exception):
    """The server cannot be healed; the message says why (a fixed phrase and what it names)."""


@dataclass(frozen=True)
class _Server:
    row: Mapping[str, Any]
    node_uuid: str
    spec: RequestSpec


def heal(
    cells: CellRegistry,
    placement: PlacementClient,
    network: NetworkClient,
    *,
    dry_run: bool = False,
    instance: str | None = None,
) -> HealReport:
    """Heal every live server on a host (or only ``instance``); see the module."""
    report = HealReport()
    for uuid, server in _servers(cells, instance):
        report.checked += 1
        try:
            if server is None:
                raise _CannotHeal("its compute node or its request spec is gone")
            if server.row["task_state"] is not None:
                # A move or build under way holds allocations its row does not describe yet.
                raise _CannotHeal(f"a task is under way ({server.row['task_state']}); try again")
            _heal_one(placement, network, server, dry_run, report)
        except (_CannotHeal, PlacementError, NetworkError, ServiceUnavailable) as exc:
            report.failures.append(f"{uuid}: {exc}")
    if instance is not None and not report.checked:
        report.failures.append(f"{instance}: no live server on a host has this id")
    return report


def _servers(cells: CellRegistry, only: str | None) -> Iterator[tuple[str, _Server | None]]:
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            rows = instances.list_instances(conn, uuids=[only] if only else None)
            nodes = {n["hypervisor_hostname"]: n["uuid"] for n in compute_nodes.list_nodes(conn)}
        for row in rows:
            if not row["host"]:
                continue
            with cells.api_db.read() as conn:
                document = request_specs.get(conn, row["uuid"])
            node = nodes.get(row["node"])
            if node is None or document is None:
                yield row["uuid"], None
                continue
            yield row["uuid"], _Server(row, node, RequestSpec.from_json(document))


def _heal_one(
    placement: PlacementClient,
    network: NetworkClient,
    server: _Server,
    dry_run: bool,
    report: HealReport,
) -> None:
    uuid, node = server.row["uuid"], server.node_uuid
    current = placement.allocations(uuid)
    held = {rp: dict(a["resources"]) for rp, a in current["allocations"].items()}
    traits = {rp: _traits(placement, rp) for rp in held}
    ports = [
        PortState(
            PortRequest(port["id"], resource_request=port.get("resource_request") or {}),
            dict((port.get("binding:profile") or {}).get("allocation") or {}),
        )
        for port in network.ports(device_id=uuid)
        if (port.get("resource_request") or {}).get("request_groups")
    ]
    try:
        spec = server.spec
        # The Instance's flavor is the one it runs with (a resize changes it; the spec follows).
        flavor = flavor_groups(
            spec_flavor(server.row["flavor"]), spec.image, boot_from_volume=spec.boot_from_volume
        )
    except QueryError as exc:
        raise _CannotHeal(f"its flavor cannot be read: {exc}") from exc
    wanted = plan(uuid, node, flavor.unnamed.resources, held, traits, ports)
    if wanted.nothing_to_do:
        return
    added: dict[str, dict[str, int]] = {}
    if wanted.flavor is not None:
        added = merge(added, {node: wanted.flavor})
    profiles = dict(wanted.relabel)
    if wanted.unallocated:
        more, mapped = _candidate(placement, wanted.unallocated, node)
        added = merge(added, more)
        profiles.update(mapped)
    if wanted.flavor is not None:
        report.actions.append(
            f"create the allocation of {uuid} on {node}: {_amounts(wanted.flavor)}"
        )
    for port in wanted.unallocated:
        providers = ", ".join(sorted(set(profiles[port.port_id].values())))
        report.actions.append(
            f"add port {port.port_id}'s request to the allocation of {uuid} on {providers}"
        )
    for port_id, mapping in sorted(wanted.relabel.items()):
        report.actions.append(
            f"set port {port_id}'s profile allocation to {dict(mapping)} (server {uuid})"
        )
    if not dry_run:
        row = server.row
        body = {rp: {"resources": amounts} for rp, amounts in merge(held, added).items()}
        generation = current.get("consumer_generation") if held else None
        if not placement.claim(uuid, body, row["project_id"], row["user_id"], generation):
            raise _CannotHeal("its allocation changed while it was healed; run again")
        for port_id, mapping in sorted(profiles.items()):
            _set_profile(network, port_id, mapping)
    report.allocations_created += wanted.flavor is not None
    report.port_allocations_added += len(wanted.unallocated)
    report.profiles_fixed += len(wanted.relabel)


def _candidate(
    placement: PlacementClient, ports: Sequence[PortRequest], node: str
) -> tuple[dict[str, dict[str, int]], dict[str, dict[str, str]]]:
    """Providers under ``node`` for the ports' groups: what to add, and each port's mapping."""
    try:
        query = port_query(ports, node)
    except QueryError as exc:
        raise _CannotHeal(f"a port's resource request cannot be asked for: {exc}") from exc
    answer = placement.allocation_candidates(query)
    if not answer["allocation_requests"]:
        raise _CannotHeal(f"no provider under compute node {node} can serve its ports' requests")
    chosen = answer["allocation_requests"][0]
    try:
        mapped = port_allocations(ports, chosen["mappings"])
    except MappingError as exc:
        raise _CannotHeal(str(exc)) from exc
    more = {rp: dict(a["resources"]) for rp, a in chosen["allocations"].items()}
    return more, mapped


def _set_profile(network: NetworkClient, port_id: str, mapping: GroupProviders) -> None:
    # Read again: the profile's other keys (PCI slots, capabilities) stay as they are.
    profile = dict(network.port(port_id).get("binding:profile") or {})
    network.update_port(port_id, **{"binding:profile": {**profile, "allocation": dict(mapping)}})


def _traits(placement: PlacementClient, rp: str) -> frozenset[str]:
    answer = call(placement.client, "GET", f"/resource_providers/{rp}/traits")
    return frozenset(answer.json()["traits"]) if answer.is_success else frozenset()


def _amounts(resources: Mapping[str, int]) -> str:
    return ", ".join(f"{rc}={amount}" for rc, amount in sorted(resources.items()))
