"""What the quota APIs (os-quota-sets, os-quota-class-sets, limits) show and take at each
microversion, shared by their handlers.

Before 2.36 the network service's resources show too (quota classes' before 2.50): their limits
are kept and shown, unlimited unless set, and nothing is ever counted against them (the quotas
that apply are the network service's). 2.57 drops the
injected file (personality) resources, which Berth shows but never counts (it ignores
``personality``). Quota classes showed no server group resources before 2.50, where they also
dropped the network ones.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from berth.compute import exceptions, quotas
from berth.compute.api.request import ComputeRequest

NETWORK_RESOURCES_GONE = (2, 36)
IMAGE_META_LIMIT_GONE = (2, 39)
CLASS_SERVER_GROUPS = (2, 50)
PERSONALITY_GONE = (2, 57)

_SERVER_GROUP_RESOURCES = (quotas.SERVER_GROUPS, quotas.SERVER_GROUP_MEMBERS)
_INTEGER = re.compile(r"-?[0-9]+")
_TRUE = frozenset({"1", "t", "true", "on", "y", "yes"})
_FALSE = frozenset({"0", "f", "false", "off", "n", "no"})


def project_resources(req: ComputeRequest) -> list[str]:
    """os-quota-sets' resources at this version (the network ones too before 2.36)."""
    found = [name for name in quotas.DEFAULTS if _shown(req, name)]
    if not req.at_least(NETWORK_RESOURCES_GONE):
        found += quotas.LEGACY_NETWORK
    return found


def class_resources(req: ComputeRequest) -> list[str]:
    """os-quota-class-sets' resources at this version."""
    if req.at_least(CLASS_SERVER_GROUPS):
        return [name for name in quotas.DEFAULTS if _shown(req, name)]
    return [
        *(name for name in quotas.DEFAULTS if name not in _SERVER_GROUP_RESOURCES),
        *quotas.LEGACY_NETWORK,
    ]


def _shown(req: ComputeRequest, name: str) -> bool:
    return not (name in quotas.INJECTED and req.at_least(PERSONALITY_GONE))


def limits_view(resources: list[str], limits: Mapping[str, int]) -> dict[str, int]:
    """``{"cores": 20, "instances": 10, ...}``"""
    return {name: limits.get(name, quotas.UNLIMITED) for name in resources}


def detail_view(
    resources: list[str], found: Mapping[str, quotas.Quota]
) -> dict[str, dict[str, int]]:
    """``{"cores": {"in_use": 2, "limit": 20, "reserved": 0}, ...}``: nothing is ever reserved
    (a create counts and adds in one transaction)."""
    unlimited = quotas.Quota(quotas.UNLIMITED, 0)
    return {
        name: {
            "in_use": found.get(name, unlimited).in_use,
            "limit": found.get(name, unlimited).limit,
            "reserved": 0,
        }
        for name in resources
    }


def absolute_limits(req: ComputeRequest, found: Mapping[str, quotas.Quota]) -> dict[str, int]:
    """The ``absolute`` of /limits: ``{"maxTotalInstances": 10, "totalInstancesUsed": 2, ...}``"""
    absolute = {
        "maxTotalInstances": found[quotas.INSTANCES].limit,
        "maxTotalCores": found[quotas.CORES].limit,
        "maxTotalRAMSize": found[quotas.RAM].limit,
        "maxTotalKeypairs": found[quotas.KEY_PAIRS].limit,
        "maxServerMeta": found[quotas.METADATA_ITEMS].limit,
        "maxServerGroups": found[quotas.SERVER_GROUPS].limit,
        "maxServerGroupMembers": found[quotas.SERVER_GROUP_MEMBERS].limit,
        "totalInstancesUsed": found[quotas.INSTANCES].in_use,
        "totalCoresUsed": found[quotas.CORES].in_use,
        "totalRAMUsed": found[quotas.RAM].in_use,
        "totalServerGroupsUsed": found[quotas.SERVER_GROUPS].in_use,
    }
    if not req.at_least(IMAGE_META_LIMIT_GONE):
        absolute["maxImageMeta"] = found[quotas.METADATA_ITEMS].limit
    if not req.at_least(PERSONALITY_GONE):
        absolute["maxPersonality"] = found[quotas.INJECTED_FILES].limit
        absolute["maxPersonalitySize"] = found[quotas.INJECTED_FILE_CONTENT_BYTES].limit
    if not req.at_least(NETWORK_RESOURCES_GONE):
        absolute.update(
            maxTotalFloatingIps=found["floating_ips"].limit,
            maxSecurityGroups=found["security_groups"].limit,
            maxSecurityGroupRules=found["security_group_rules"].limit,
            totalFloatingIpsUsed=0,
            totalSecurityGroupsUsed=0,
        )
    return absolute


def parse_limits(body: Mapping[str, Any], key: str, resources: list[str]) -> dict[str, int]:
    """The limits an update sets, from ``{key: {"cores": 40, ...}}``'s inside. Where the
    network resources are taken, so is ``networks``, which is checked and dropped (no API shows
    it any more)."""
    allowed = set(resources)
    if quotas.LEGACY_NETWORK[0] in allowed:
        allowed.add(quotas.LEGACY_NETWORKS)
    unknown = sorted(set(body) - allowed)
    if unknown:
        raise exceptions.BadRequest(
            f"Invalid input for {key}: additional properties are not allowed ({unknown})."
        )
    limits = {name: _limit(key, name, value) for name, value in body.items()}
    limits.pop(quotas.LEGACY_NETWORKS, None)
    return limits


def _limit(key: str, name: str, value: Any) -> int:
    """An integer from -1 to the largest the database holds, or such an integer as a string."""
    if isinstance(value, str) and _INTEGER.fullmatch(value):
        value = int(value)
    if isinstance(value, bool) or not isinstance(value, int):
        raise exceptions.BadRequest(
            f"Invalid input for {key}: {name} must be an integer, not {value!r}."
        )
    if not quotas.UNLIMITED <= value <= quotas.MAX_LIMIT:
        raise exceptions.BadRequest(
            f"Invalid input for {key}: {name} must be from -1 (unlimited) to "
            f"{quotas.MAX_LIMIT}, not {value}."
        )
    return value


def parse_force(value: Any) -> bool:
    """An update's ``force``: a boolean, or one written as a string ("true", "0", "yes"...)."""
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in _TRUE | _FALSE:
        return value.lower() in _TRUE
    raise exceptions.BadRequest("Invalid input for quota_set: force must be a boolean.")


def user_id(req: ComputeRequest) -> str | None:
    """The ``user_id`` of the query (the last one given), or None; an empty one is a 400."""
    given = [value for name, value in req.query_items if name == "user_id"]
    if not given:
        return None
    if not given[-1] or len(given[-1]) > 255:
        raise exceptions.BadRequest("Invalid input for user_id: 1 to 255 characters expected.")
    return given[-1]
