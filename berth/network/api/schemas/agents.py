"""Agents: an operator's update, and the report an agent in another process sends (Berth's)."""

from __future__ import annotations

from typing import Any

from berth.common.validation import string
from berth.network.agents import AGENT_TYPES
from berth.network.api.schemas.common import BOOLEAN, DESCRIPTION, one

UPDATE = one("agent", {"admin_state_up": BOOLEAN, "description": DESCRIPTION})

REPORT: dict[str, Any] = one(
    "agent",
    {
        "agent_type": {"enum": list(AGENT_TYPES)},
        "host": string(255),
        "binary": string(255),
        "topic": string(255),
        "configurations": {"type": "object"},
        "availability_zone": string(255, nullable=True),
    },
)
