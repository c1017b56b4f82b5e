"""A server's allocation as it gains or loses one port's resources (interface attach, detach).

Pure: the current allocation (provider -> resource class -> amount), the port's request groups
(the Networking API's ``resource_request.request_groups``) and the mapping of those groups to
providers (the port's ``binding:profile.allocation``) in, the new allocation out. Attaching adds
each group's resources to the provider the mapping names; detaching takes off exactly those, so
a detach after an attach gives back the allocation the server had::

    shrunk(grown(held, groups, mapping), groups, mapping) == held

A detach never takes more than is held (an allocation that lost the port's part, healed or
not, is left with nothing of it), and drops a provider left with nothing.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

# Provider uuid -> resource class -> amount.
Amounts = Mapping[str, Mapping[str, int]]

__all__ = ["Amounts", "demand", "grown", "shrunk"]


def demand(
    groups: Sequence[Mapping[str, Any]], mapping: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """What the port's groups take, per provider the mapping names. A group the mapping does not
    name takes nothing (it was never allocated)."""
    wanted: dict[str, dict[str, int]] = {}
    for group in groups:
        provider = mapping.get(str(group["id"]))
        if provider is None:
            continue
        mine = wanted.setdefault(provider, {})
        for rc, amount in (group.get("resources") or {}).items():
            if amount:
                mine[rc] = mine.get(rc, 0) + int(amount)
    return {rp: amounts for rp, amounts in wanted.items() if amounts}


def grown(
    held: Amounts, groups: Sequence[Mapping[str, Any]], mapping: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """``held`` with the port's resources added on the providers the mapping names."""
    total = {rp: dict(amounts) for rp, amounts in held.items()}
    for rp, amounts in demand(groups, mapping).items():
        mine = total.setdefault(rp, {})
        for rc, amount in amounts.items():
            mine[rc] = mine.get(rc, 0) + amount
    return total


def shrunk(
    held: Amounts, groups: Sequence[Mapping[str, Any]], mapping: Mapping[str, str]
) -> dict[str, dict[str, int]]:
    """``held`` without the port's resources (never below zero); empty classes and providers
    are dropped."""
    left = {rp: dict(amounts) for rp, amounts in held.items()}
    for rp, amounts in demand(groups, mapping).items():
        mine = left.get(rp)
        if mine is None:
            continue
        for rc, amount in amounts.items():
            mine[rc] = max(0, mine.get(rc, 0) - amount)
    return {
        rp: {rc: n for rc, n in amounts.items() if n}
        for rp, amounts in left.items()
        if any(amounts.values())
    }
