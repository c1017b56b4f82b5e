"""One route table: every path template maps to ``{method: handler}``.

A known path with an unknown method is a 405 with ``Allow``. Path parameters match any segment, so a
malformed id reaches its handler and gets a 404 that says why.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from starlette.responses import Response

from berth.placement.api.request import NOT_FOUND, HTTPError, PlacementRequest

Handler = Callable[[PlacementRequest], Response]
RouteTable = Mapping[str, Mapping[str, Handler]]

_PARAM = re.compile(r"\{(\w+)\}")


@dataclass(frozen=True)
class _Route:
    pattern: re.Pattern[str]
    methods: Mapping[str, Handler]


class Router:
    def __init__(self, table: RouteTable) -> None:
        self._routes = [
            _Route(re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", path) + "$"), methods)
            for path, methods in table.items()
        ]

    def match(self, method: str, path: str) -> tuple[Handler, dict[str, str]]:
        """The handler and path parameters for a request; HTTPError 404 or 405 otherwise."""
        if len(path) > 1:
            path = path.rstrip("/")
        for route in self._routes:
            found = route.pattern.match(path)
            if found is None:
                continue
            handler = route.methods.get(method)
            if handler is None:
                raise HTTPError(
                    405,
                    f"The method {method} is not allowed for this resource.",
                    headers={"allow": ", ".join(route.methods)},
                )
            return handler, found.groupdict()
        raise HTTPError(404, NOT_FOUND)
