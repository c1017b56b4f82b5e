"""JSON schemas for Compute request bodies, one module per resource, one schema per microversion
where the shape changes (each built from the one before), newest first in ``BY_VERSION`` lists;
``bodies.BODIES`` says which write takes which.

A schema checks the shape (which keys, their types, lengths and ranges as the database columns
hold them) before the handler runs; what needs parsing or the databases is checked after."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from berth.compute.api.microversion import Version

ByVersion = Sequence[tuple[tuple[int, int], Mapping[str, Any] | None]]


def pick(by_version: ByVersion, version: Version) -> Mapping[str, Any] | None:
    """The newest schema whose microversion ``version`` matches (None: the route is gone)."""
    return next(found for since, found in by_version if version.matches(since))
