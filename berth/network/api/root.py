"""The version document (/) and the resources of v2.0 (/v2.0)."""

from __future__ import annotations

from starlette.responses import Response

from berth.network.api.request import NetworkRequest

# Each collection under /v2.0 and the name of one of its members (the key of a show's body).
COLLECTIONS = {
    "networks": "network", "segments": "segment", "subnets": "subnet", "ports": "port",
    "agents": "agent", "qos/policies": "policy",
    "network-ip-availabilities": "network_ip_availability", "extensions": "extension",
    "quotas": "quota", "rbac-policies": "rbac_policy", "security-groups": "security_group",
    "security-group-rules": "security_group_rule", "routers": "router",
    "floatingips": "floatingip",
}  # fmt: skip


def versions(req: NetworkRequest) -> Response:
    link = {"href": f"{req.base_url}/v2.0/", "rel": "self"}
    return req.respond({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [link]}]})


def resources(req: NetworkRequest) -> Response:
    found = [
        {
            "name": name,
            "collection": collection,
            "links": [{"href": f"{req.base_url}/v2.0/{collection}", "rel": "self"}],
        }
        for collection, name in COLLECTIONS.items()
    ]
    return req.respond({"resources": found})
