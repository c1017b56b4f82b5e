"""PUT /os-hosts/{host}: ``status`` and ``maintenance_mode``, "enable" or "disable" in any
case (the handler reads them); one of them at least."""

from __future__ import annotations

from typing import Any

_SWITCH: dict[str, Any] = {"type": "string", "pattern": "^([Ee][Nn]|[Dd][Ii][Ss])[Aa][Bb][Ll][Ee]$"}

UPDATE: dict[str, Any] = {
    "type": "object",
    "properties": {"status": _SWITCH, "maintenance_mode": _SWITCH},
    "minProperties": 1,
    "additionalProperties": False,
}
