"""Schemas for resource classes: only custom classes are created or renamed."""

from __future__ import annotations

from typing import Any

# The same document creates a class (POST, 1.2) and renames one (PUT, 1.2 to 1.6); from 1.7 the
# name in the path of a bodiless PUT is validated against it too.
CUSTOM_CLASS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "name": {"type": "string", "pattern": "^CUSTOM_[A-Z0-9_]+$", "maxLength": 255},
    },
    "required": ["name"],
    "additionalProperties": False,
}
