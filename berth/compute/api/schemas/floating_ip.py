"""Nova's floating IP proxy (before 2.36): ``POST /os-floating-ips`` takes no body, or an object
with the pool (an external network's name or id) to take the address from."""

from __future__ import annotations

from typing import Any

ALLOCATE: dict[str, Any] = {
    "type": ["object", "null"],
    "properties": {"pool": {"type": ["string", "null"], "maxLength": 255}},
}
