"""Every URL of the Placement API and its handler per method."""

from __future__ import annotations

from berth.placement.api import root
from berth.placement.api.router import RouteTable

ROUTES: RouteTable = {
    "/": {"GET": root.home},
}
