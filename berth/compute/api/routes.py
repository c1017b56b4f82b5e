"""The route table of the Compute API: every path, its methods and their handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.compute.api import root
from berth.compute.api.request import ComputeRequest

Handler = Callable[[ComputeRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": root.versions},
    "/v2.1": {"GET": root.version},
}
