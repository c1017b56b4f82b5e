"""One route table per service: every path template maps to ``{method: handler}``.

Path parameters match any one segment, so a malformed id reaches its handler, which answers a 404
that says what was not found. A known path with an unknown method is ``MethodNotAllowed``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

H = TypeVar("H")

_PARAM = re.compile(r"\{(\w+)\}")


class NoRoute(Exception):
    """No route has this path."""


class MethodNotAllowed(Exception):
    def __init__(self, method: str, allowed: list[str]) -> None:
        super().__init__(f"The method {method} is not allowed for this resource.")
        self.allowed = allowed


@dataclass(frozen=True)
class _Route(Generic[H]):
    pattern: re.Pattern[str]
    methods: Mapping[str, H]


class Router(Generic[H]):
    def __init__(self, table: Mapping[str, Mapping[str, H]]) -> None:
        self._routes = [
            _Route(re.compile("^" + _PARAM.sub(r"(?P<\1>[^/]+)", path) + "$"), methods)
            for path, methods in table.items()
        ]
        # Paths without parameters, found by a lookup instead of trying each pattern in turn;
        # one that a route before it also matches is left to the patterns, which take that one.
        self._fixed: dict[str, Mapping[str, H]] = {}
        for at, path in enumerate(table):
            if not _PARAM.search(path) and not any(
                r.pattern.match(path) for r in self._routes[:at]
            ):
                self._fixed[path] = table[path]

    def match(self, method: str, path: str) -> tuple[H, dict[str, str]]:
        """The handler and path parameters for a request."""
        if len(path) > 1:
            path = path.rstrip("/")
        fixed = self._fixed.get(path)
        if fixed is not None:
            handler = fixed.get(method)
            if handler is None:
                raise MethodNotAllowed(method, list(fixed))
            return handler, {}
        for route in self._routes:
            found = route.pattern.match(path)
            if found is None:
                continue
            handler = route.methods.get(method)
            if handler is None:
                raise MethodNotAllowed(method, list(route.methods))
            return handler, found.groupdict()
        raise NoRoute(path)
