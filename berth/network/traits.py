"""The Placement traits the network service puts on providers and asks for in resource requests."""

from __future__ import annotations

import re

_NOT_ALLOWED = re.compile(r"[^A-Z0-9_]")


def physnet_trait(physical_network: str) -> str:
    """``CUSTOM_PHYSNET_<NAME>``: the provider reaches that physical network."""
    return "CUSTOM_PHYSNET_" + _NOT_ALLOWED.sub("_", physical_network.upper())


def vnic_type_trait(vnic_type: str) -> str:
    """``CUSTOM_VNIC_TYPE_<TYPE>``: the provider serves ports of that VNIC type."""
    return "CUSTOM_VNIC_TYPE_" + _NOT_ALLOWED.sub("_", vnic_type.upper())


# Marks the providers of routed-network segments, so the sync can find those it made.
SEGMENT_TRAIT = "CUSTOM_NETWORK_SEGMENT"
