"""What the placement domain can refuse, independent of HTTP.

The API layer maps each class to a status code in one table (``berth.placement.api.faults``);
domain and storage code raise these and never an HTTP error.
"""

from __future__ import annotations

from berth.placement import errors


class PlacementError(Exception):
    """Base class; ``code`` is the stable error code shown to clients from 1.23."""

    code: str = errors.DEFAULT

    def __init__(self, message: str, code: str | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code


class NotFound(PlacementError):
    """The named thing does not exist (404)."""


class Conflict(PlacementError):
    """The request conflicts with the current state (409)."""


class ConcurrentUpdate(Conflict):
    """A generation changed since the caller read it (409, placement.concurrent_update)."""

    code = errors.CONCURRENT_UPDATE


class DuplicateName(Conflict):
    code = errors.DUPLICATE_NAME


class InventoryInUse(Conflict):
    code = errors.INVENTORY_INUSE


class ProviderInUse(Conflict):
    code = errors.PROVIDER_IN_USE


class CannotDeleteParent(Conflict):
    code = errors.PROVIDER_CANNOT_DELETE_PARENT


class InvalidInput(PlacementError):
    """The request is well formed but its values are not acceptable (400)."""


class Forbidden(PlacementError):
    """Policy does not allow the caller to do this (403)."""
