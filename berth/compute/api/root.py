"""The version documents: / lists the API versions, /v2.1 describes the one served."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest

_UPDATED = "2026-11-23T00:00:00Z"


def _v21(base: str) -> dict[str, Any]:
    return {
        "id": "v2.1",
        "status": "CURRENT",
        "version": microversion.MAX,
        "min_version": microversion.MIN,
        "updated": _UPDATED,
        "links": [{"rel": "self", "href": f"{base}/v2.1/"}],
        "media-types": [
            {
                "base": "application/json",
                "type": "application/vnd.openstack.compute+json;version=2.1",
            }
        ],
    }


def versions(req: ComputeRequest) -> Response:
    return req.respond({"versions": [_v21(req.base_url)]})


def version(req: ComputeRequest) -> Response:
    return req.respond({"version": _v21(req.base_url)})
