"""The version document (/) and the resources of v2.0 (/v2.0)."""

from __future__ import annotations

from starlette.responses import Response

from berth.network.api.request import NetworkRequest

COLLECTIONS = ("networks", "segments", "subnets", "ports", "agents", "qos/policies",
               "network-ip-availabilities", "extensions")  # fmt: skip


def versions(req: NetworkRequest) -> Response:
    link = {"href": f"{req.base_url}/v2.0/", "rel": "self"}
    return req.respond({"versions": [{"id": "v2.0", "status": "CURRENT", "links": [link]}]})


def resources(req: NetworkRequest) -> Response:
    found = [
        {
            "name": collection.rsplit("/", 1)[-1].rstrip("s"),
            "collection": collection,
            "links": [{"href": f"{req.base_url}/v2.0/{collection}", "rel": "self"}],
        }
        for collection in COLLECTIONS
    ]
    return req.respond({"resources": found})
