"""The request groups a flavor (and its image) asks of Placement.

The unnamed group holds the flavor's own amounts::

    VCPU      = vcpus
    MEMORY_MB = memory_mb
    DISK_GB   = root_gb (0 when booted from a volume) + ephemeral_gb + ceil(swap_mb / 1024)

Swap counts as disk, not memory: the hypervisor keeps the swap device as a file on the same local
storage as the root and ephemeral disks, so it takes DISK_GB from the host's pool. DISK_GB is
counted in whole gigabytes, so a swap of 1 MiB to 1024 MiB takes one: rounding down would let
swap-only usage exceed what Placement was told, which is the one thing it must never do. (This is
also how the reference compute service has counted it since it moved disk accounting to
Placement.)

Flavor extra specs then adjust it:

    resources:<RC>=N             set the amount of a class (N=0 removes it, e.g. DISK_GB=0)
    trait:<T>=required|forbidden a trait rule on the unnamed group (also from image properties)
    resources<S>:<RC>=N          a suffixed group S: one provider must give all of it
    trait<S>:<T>=required|forbidden
    group_policy=none|isolate    how suffixed groups may share providers

Only the flavor may make suffixed groups: an image property names traits of the unnamed group.
Any other extra spec is for filters and drivers and ignored here.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Final

from berth.compute.objects.request_spec import Flavor, Image

__all__ = [
    "SUFFIX",
    "FlavorGroups",
    "GroupRules",
    "QueryError",
    "flavor_groups",
    "flavor_resources",
    "natural_key",
]

# A request group suffix, as Placement accepts it from microversion 1.33.
SUFFIX: Final = re.compile(r"[a-zA-Z0-9_-]{1,64}")
_CLASS: Final = re.compile(r"[A-Z0-9_]+")
_TRAIT: Final = re.compile(r"[A-Z0-9_]+")
GROUP_POLICIES: Final = ("none", "isolate")


class QueryError(ValueError):
    """The request cannot be expressed as a Placement query (a malformed or contradictory
    extra spec or image property, or clashing request groups): the client's mistake, a 400."""


@dataclass(slots=True)
class GroupRules:
    """One group's rules while they are gathered (mutable; frozen into a ``Group`` later)."""

    resources: dict[str, int] = field(default_factory=dict)
    required: set[str] = field(default_factory=set)
    forbidden: set[str] = field(default_factory=set)

    def add_trait(self, trait: str, rule: str, source: str) -> None:
        if not _TRAIT.fullmatch(trait):
            raise QueryError(f"{source}: {trait!r} is not a trait name")
        if rule == "required":
            self.required.add(trait)
        elif rule == "forbidden":
            self.forbidden.add(trait)
        else:
            raise QueryError(f"{source}: a trait is 'required' or 'forbidden', not {rule!r}")
        if trait in self.required and trait in self.forbidden:
            raise QueryError(f"{source}: trait {trait} is both required and forbidden")


@dataclass(frozen=True, slots=True)
class FlavorGroups:
    unnamed: GroupRules
    # Suffix -> rules, for the flavor's granular groups (never empty ones).
    suffixed: dict[str, GroupRules]
    group_policy: str | None


def flavor_resources(flavor: Flavor, *, boot_from_volume: bool = False) -> dict[str, int]:
    """The flavor's amounts before extra specs, zeros left out (Placement refuses them)."""
    disk = (0 if boot_from_volume else flavor.root_gb) + flavor.ephemeral_gb
    disk += math.ceil(flavor.swap_mb / 1024)
    amounts = {"VCPU": flavor.vcpus, "MEMORY_MB": flavor.memory_mb, "DISK_GB": disk}
    return {rc: n for rc, n in amounts.items() if n > 0}


def flavor_groups(flavor: Flavor, image: Image, *, boot_from_volume: bool = False) -> FlavorGroups:
    """Every group the flavor and image ask for, with each rule checked."""
    unnamed = GroupRules(resources=flavor_resources(flavor, boot_from_volume=boot_from_volume))
    suffixed: dict[str, GroupRules] = {}
    group_policy = None
    for key, value in sorted(flavor.extra_specs.items()):
        source = f"flavor {flavor.name} extra spec {key}"
        if key == "group_policy":
            if value not in GROUP_POLICIES:
                raise QueryError(f"{source}: group_policy is 'none' or 'isolate', not {value!r}")
            group_policy = value
            continue
        parsed = _granular_key(key, source)
        if parsed is None:
            continue
        kind, suffix, name = parsed
        rules = unnamed if suffix == "" else suffixed.setdefault(suffix, GroupRules())
        if kind == "resources":
            _set_amount(rules, name, value, source)
        else:
            rules.add_trait(name, value, source)
    for key, value in sorted(image.properties.items()):
        if key.startswith("trait:"):
            unnamed.add_trait(key.removeprefix("trait:"), value, f"image {image.id} property {key}")
    for suffix, rules in list(suffixed.items()):
        if not rules.resources:
            if rules.required or rules.forbidden:
                raise QueryError(
                    f"flavor {flavor.name}: request group {suffix} has traits but no resources"
                )
            del suffixed[suffix]
    return FlavorGroups(unnamed, suffixed, group_policy)


def _granular_key(key: str, source: str) -> tuple[str, str, str] | None:
    """``resources1:VCPU`` -> ("resources", "1", "VCPU"); None for a key that is not ours."""
    prefix, colon, name = key.partition(":")
    if not colon:
        return None
    for kind in ("resources", "trait"):
        if prefix.startswith(kind):
            suffix = prefix.removeprefix(kind)
            if suffix and not SUFFIX.fullmatch(suffix):
                raise QueryError(f"{source}: {suffix!r} is not a valid request group suffix")
            return kind, suffix, name
    return None


def _set_amount(rules: GroupRules, rc: str, value: str, source: str) -> None:
    if not _CLASS.fullmatch(rc):
        raise QueryError(f"{source}: {rc!r} is not a resource class name")
    try:
        amount = int(value)
    except ValueError:
        raise QueryError(f"{source}: the amount must be an integer, not {value!r}") from None
    if amount < 0:
        raise QueryError(f"{source}: the amount must not be negative")
    if amount == 0:
        rules.resources.pop(rc, None)
    else:
        rules.resources[rc] = amount


def natural_key(suffix: str) -> tuple[int, int, str]:
    """Numbered suffixes in numeric order, then named ones in text order."""
    return (0, int(suffix), "") if suffix.isdigit() else (1, 0, suffix)
