"""Endpoints and methods that exist only from (or until) some microversion.

Outside its range a handler answers as if the resource were not there: upstream answers 404, and
clients probe for features that way.
"""

from __future__ import annotations

from berth.placement.api.request import HTTPError, PlacementRequest


def require(
    req: PlacementRequest, minimum: tuple[int, int], maximum: tuple[int, int] | None = None
) -> None:
    """Refuse with 404 unless ``minimum <= req.version`` (and ``<= maximum`` when given)."""
    if not req.version.matches(minimum, maximum):
        raise HTTPError(404, "The resource could not be found.")
