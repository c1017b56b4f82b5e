"""RBAC policies: the object's type and the action as the domain knows them, the target a
project id (or ``*``) its column holds."""

from __future__ import annotations

from berth.common.validation import string
from berth.network.api.schemas.common import PROJECT, UUID, one
from berth.network.rbac import OBJECT_TYPES

_TARGET = string(255, 1)

CREATE = one(
    "rbac_policy",
    {
        "object_type": {"enum": list(OBJECT_TYPES)},
        "object_id": UUID,
        "action": {"type": "string", "maxLength": 255},
        "target_tenant": _TARGET,
        "target_project": _TARGET,
        "project_id": PROJECT,
        "tenant_id": PROJECT,
    },
)
UPDATE = one("rbac_policy", {"target_tenant": _TARGET, "target_project": _TARGET})
