"""Placement's route table lookup: ``berth.common.routing`` answering in Placement's errors."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.common import routing
from berth.placement.api.request import NOT_FOUND, HTTPError, PlacementRequest

Handler = Callable[[PlacementRequest], Response]
RouteTable = Mapping[str, Mapping[str, Handler]]


class Router:
    def __init__(self, table: RouteTable) -> None:
        self._router = routing.Router(table)

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        """The handler and path parameters for a request; HTTPError 404 or 405 otherwise."""
        try:
            return self._router.match(method, path)
        except routing.MethodNotAllowed as exc:
            raise HTTPError(405, str(exc), headers={"allow": ", ".join(exc.allowed)}) from None
        except routing.NoRoute:
            raise HTTPError(404, NOT_FOUND) from None
