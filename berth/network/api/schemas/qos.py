"""QoS policies and their rules: a rule's rates from 0 to what their columns hold, in the
directions its type has."""

from __future__ import annotations

from typing import Any

from berth.common.validation import integer
from berth.network.api.schemas.common import BOOLEAN, DESCRIPTION, NAME, PROJECT, one
from berth.network.qos import MAX_RATE, RuleType

_CHANGEABLE: dict[str, Any] = {
    "name": NAME,
    "description": DESCRIPTION,
    "shared": BOOLEAN,
    "is_default": BOOLEAN,
}

POLICY_CREATE = one("policy", {**_CHANGEABLE, "project_id": PROJECT, "tenant_id": PROJECT})
POLICY_UPDATE = one("policy", _CHANGEABLE)


def rule(kind: RuleType) -> dict[str, Any]:
    """A create or update of one rule of ``kind``."""
    rates = dict.fromkeys(kind.rates, integer(0, MAX_RATE))
    return one(kind.member, {**rates, "direction": {"enum": list(kind.directions)}})
