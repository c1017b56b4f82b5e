"""How a bound port's new resource request rewrites its server's allocation: pure, no I/O.

A bound port's binding profile names, per request group, the provider that holds that group's
resources in the allocation of the port's server (its ``device_id``)::

    binding:profile = {"allocation": {"<bandwidth group id>": "<bridge provider uuid>"}}

When a QoS policy change gives the port another request, each group's old resources are taken
off its provider and the new ones put on the same provider; nothing else in the allocation
moves. A group the port did not have before has no provider yet (choosing one is scheduling,
the compute side's job), so such a change is refused; a group that goes away leaves the
allocation and the profile. Group ids depend only on the port and the kind of group (see
``resource_request.group_id``), so a change of amounts keeps every group and its provider.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, replace
from enum import Enum

from berth.network import exceptions
from berth.network.model import ResourceRequest

__all__ = [
    "Allocations",
    "PortRequestChange",
    "Reason",
    "check",
    "growth",
    "profile_allocation",
    "refused",
    "rewrite",
]

# Provider uuid -> resource class -> amount: one consumer's allocation.
Allocations = Mapping[str, Mapping[str, int]]


class Reason(Enum):
    """Why a bound port's allocation cannot follow its new request. Fixed codes: never change
    one, never reuse one; each message begins with its code."""

    NO_ALLOCATION = "no-allocation"  # the port asked nothing before: no provider holds it
    NEW_GROUP = "new-request-group"  # a kind of resource the port's allocation has no provider for
    NOT_IN_PROFILE = "allocation-not-in-profile"  # the profile does not map a group
    NOT_HELD = "allocation-not-held"  # the server's allocation lacks what the old request asked
    NO_CONSUMER = "no-consumer"  # a bound port without a device_id
    MOVING = "port-moving"  # the port has bindings on other hosts (a server on the move)
    NO_PLACEMENT = "no-placement"  # the network service has no Placement to write to
    CAPACITY = "placement-refused"  # Placement would not take the new amounts
    CONTENDED = "allocation-contended"  # the allocation kept changing under the update


def refused(
    port_ids: Iterable[str], reason: Reason, detail: str
) -> exceptions.QosPolicyChangeRefused:
    """The 409 for a change of ``port_ids`` refused for ``reason``."""
    ports = ", ".join(sorted(port_ids))
    return exceptions.QosPolicyChangeRefused(
        f"{reason.value}: the QoS policy change of port(s) {ports} cannot be applied to their "
        f"allocation: {detail}"
    )


@dataclass(frozen=True, slots=True)
class PortRequestChange:
    """One bound port's request before and after, with what its binding profile maps."""

    port_id: str
    consumer: str
    old: ResourceRequest | None
    new: ResourceRequest | None
    # Request group id -> provider uuid: the binding profile's "allocation".
    providers: Mapping[str, str]

    def reversed(self) -> PortRequestChange:
        """The change that undoes this one (the providers stay, groups stay mapped)."""
        return replace(self, old=self.new, new=self.old)


def _groups(request: ResourceRequest | None) -> dict[str, Mapping[str, int]]:
    return {g.id: g.resources for g in request.request_groups} if request is not None else {}


def check(change: PortRequestChange) -> None:
    """Refuse (409) a change the allocation cannot follow in place, before asking Placement."""
    old, new = _groups(change.old), _groups(change.new)
    if not change.consumer:
        raise refused([change.port_id], Reason.NO_CONSUMER, "the port has no device_id")
    if not old and new:
        raise refused(
            [change.port_id],
            Reason.NO_ALLOCATION,
            "the port held no resources before, so no provider on its host was chosen for "
            "them; unbind the port (or move the server) to have one chosen",
        )
    unmapped = sorted(set(old) - set(change.providers))
    if unmapped:
        raise refused(
            [change.port_id],
            Reason.NOT_IN_PROFILE,
            f"its binding profile maps no provider for request group(s) {', '.join(unmapped)}",
        )
    added = sorted(set(new) - set(old))
    if added:
        raise refused(
            [change.port_id],
            Reason.NEW_GROUP,
            f"request group(s) {', '.join(added)} would be new and have no provider; unbind "
            "the port (or move the server) to have one chosen",
        )


def profile_allocation(change: PortRequestChange) -> dict[str, str] | None:
    """The binding profile's "allocation" after the change: the groups that remain; None when
    none does (the key goes)."""
    kept = {gid: change.providers[gid] for gid in _groups(change.new) if gid in change.providers}
    return kept or None


def rewrite(
    current: Allocations, changes: Iterable[PortRequestChange]
) -> dict[str, dict[str, int]]:
    """The consumer's allocation with each change applied: per group, the old resources off
    its provider, the new ones on it; amounts that reach zero and empty providers dropped.

    Every group must be mapped to a provider (``check`` refuses new groups first; the reverse
    of a change that dropped a group may bring it back). Refuses (409) when the allocation does
    not hold what an old group asked (it was changed behind the network's back): the
    heal-allocations repair puts that right first."""
    updated: dict[str, dict[str, int]] = defaultdict(dict)
    for provider, resources in current.items():
        updated[provider].update(resources)
    for change in changes:
        for group_id, resources in _groups(change.old).items():
            provider = _provider(change, group_id)
            for rc, amount in resources.items():
                held = updated[provider].get(rc, 0)
                if held < amount:
                    raise refused(
                        [change.port_id],
                        Reason.NOT_HELD,
                        f"the allocation of {change.consumer} holds {held} {rc} on provider "
                        f"{provider}, less than the {amount} the port's request asked",
                    )
                updated[provider][rc] = held - amount
        for group_id, resources in _groups(change.new).items():
            provider = _provider(change, group_id)
            for rc, amount in resources.items():
                updated[provider][rc] = updated[provider].get(rc, 0) + amount
    return {
        provider: kept
        for provider, resources in updated.items()
        if (kept := {rc: n for rc, n in resources.items() if n > 0})
    }


def _provider(change: PortRequestChange, group_id: str) -> str:
    found = change.providers.get(group_id)
    if found is None:
        raise refused(
            [change.port_id],
            Reason.NOT_IN_PROFILE,
            f"its binding profile maps no provider for request group {group_id}",
        )
    return found


def growth(current: Allocations, updated: Allocations) -> list[tuple[str, str, int]]:
    """``(provider, resource class, increase)`` for each amount the update raises, sorted: what
    Placement must find room for, and what a refusal names."""
    return sorted(
        (provider, rc, amount - current.get(provider, {}).get(rc, 0))
        for provider, resources in updated.items()
        for rc, amount in resources.items()
        if amount > current.get(provider, {}).get(rc, 0)
    )
