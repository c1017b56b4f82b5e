"""The version documents: / lists the API versions, /v2.1 describes the one served and /v2 the
legacy v2.0 that Nova lists first (SUPPORTED, without microversions). Berth serves the API
under /v2.1 only: a client that discovers versions takes v2.1, the highest."""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute.api import microversion
from berth.compute.api.request import ComputeRequest

_UPDATED = "2026-11-23T00:00:00Z"
# When the v2.0 API last changed, as upstream's document says.
_V20_UPDATED = "2011-01-21T11:33:21Z"


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


def _v20(base: str) -> dict[str, Any]:
    return {
        "id": "v2.0",
        "status": "SUPPORTED",
        "version": "",
        "min_version": "",
        "updated": _V20_UPDATED,
        "links": [{"rel": "self", "href": f"{base}/v2/"}],
        "media-types": [
            {"base": "application/json", "type": "application/vnd.openstack.compute+json;version=2"}
        ],
    }


def versions(req: ComputeRequest) -> Response:
    """v2.0 first, as Nova lists it (tempest checks the order)."""
    return req.respond(
        {
            "versions": [
                _without_media_types(_v20(req.base_url)),
                _without_media_types(_v21(req.base_url)),
            ]
        }
    )


def _without_media_types(document: dict[str, Any]) -> dict[str, Any]:
    """A version as the list shows it: media types only show in one version's document."""
    return {key: value for key, value in document.items() if key != "media-types"}


def legacy_version(req: ComputeRequest) -> Response:
    return req.respond({"version": _v20(req.base_url)})


def version(req: ComputeRequest) -> Response:
    return req.respond({"version": _v21(req.base_url)})
