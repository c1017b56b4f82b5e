"""GET / : version discovery, the only document that needs no token."""

from __future__ import annotations

from starlette.responses import Response

from berth.placement import microversion
from berth.placement.api.request import PlacementRequest


def home(req: PlacementRequest) -> Response:
    """
    {"versions": [{"id": "v1.0", "min_version": "1.0", "max_version": "1.39",
                   "status": "CURRENT", "links": [{"rel": "self", "href": ""}]}]}
    """
    version = {
        "id": f"v{microversion.MIN_VERSION}",
        "min_version": str(microversion.MIN_VERSION),
        "max_version": str(microversion.MAX_VERSION),
        "status": "CURRENT",
        # A relative link: placement never needs to know the address it is reached through.
        "links": [{"rel": "self", "href": ""}],
    }
    return req.respond({"versions": [version]})
