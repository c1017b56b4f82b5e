"""The Compute API's OpenAPI description: its route table and the request schemas of the newest
microversion that has each route, and what its main operations answer at that microversion."""

from __future__ import annotations

from typing import Any

from berth.common.openapi import ApiDescription, Body
from berth.common.validation import may_be_absent
from berth.compute.api import microversion
from berth.compute.api.routes import ROUTES
from berth.compute.api.schemas.bodies import BODIES, newest
from berth.compute.api.schemas.replies import QUERIES, REPLIES

# {"itemNotFound": {"code": 404, "message": "..."}}: one key, which names the kind of refusal.
ERROR: dict[str, Any] = {
    "type": "object",
    "minProperties": 1,
    "maxProperties": 1,
    "additionalProperties": {
        "type": "object",
        "properties": {"code": {"type": "integer"}, "message": {"type": "string"}},
        "required": ["code", "message"],
    },
}

DESCRIPTION = ApiDescription(
    title="Compute",
    version=f"{microversion.MIN} to {microversion.MAX}",
    routes=ROUTES,
    error=ERROR,
    replies=REPLIES,
    queries=QUERIES,
    bodies={
        **{
            route: Body(schema, required=not may_be_absent(schema))
            for route, versioned in BODIES.items()
            if (schema := newest(versioned)) is not None
        },
        # The tag is in the path.
        ("PUT", "/v2.1/servers/{server_id}/tags/{tag}"): None,
    },
    not_implemented={
        ("PUT", "/v2.1/os-hosts/{host_name}"): "Berth's hosts have no maintenance mode "
        "(before 2.43; status enable/disable works).",
        **{
            ("GET", f"/v2.1/os-hosts/{{host_name}}/{action}"): "Berth's simulated hosts are not "
            "powered on and off (before 2.43)."
            for action in ("startup", "shutdown", "reboot")
        },
    },
    anonymous=frozenset({"/", "/v2", "/v2.1"}),
)
