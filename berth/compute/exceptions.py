"""The compute service's refusals, each answered in the Compute API's error document:
``{"itemNotFound": {"code": 404, "message": "..."}}``. The key is part of the API."""

from __future__ import annotations


class ComputeError(Exception):
    status = 500
    key = "computeFault"


class BadRequest(ComputeError):
    status = 400
    key = "badRequest"


class Unauthorized(ComputeError):
    status = 401
    key = "unauthorized"


class Forbidden(ComputeError):
    status = 403
    key = "forbidden"


class NotFound(ComputeError):
    status = 404
    key = "itemNotFound"


class MethodNotAllowed(ComputeError):
    status = 405
    key = "methodNotAllowed"


class VersionNotAcceptable(ComputeError):
    status = 406
    key = "notAcceptable"


class Conflict(ComputeError):
    status = 409
    key = "conflictingRequest"


class OverLimit(ComputeError):
    status = 413
    key = "overLimit"


class Unimplemented(ComputeError):
    """Something the API has but Berth's simulated hosts cannot do (powering a host off)."""

    status = 501
    key = "notImplemented"


class ServiceUnavailable(ComputeError):
    """A service the compute API depends on (Placement) did not answer; retrying may work."""

    status = 503
    key = "serviceUnavailable"
