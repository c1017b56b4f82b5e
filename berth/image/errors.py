"""The image API's refusals, answered as the Image service's error documents::

{"message": "No image found with ID 6e1f...", "code": "404 Not Found", "title": "Not Found"}
"""

from __future__ import annotations


class ImageError(Exception):
    status = 500
    title = "Internal Server Error"

    @property
    def code(self) -> str:
        return f"{self.status} {self.title}"


class BadRequest(ImageError):
    status = 400
    title = "Bad Request"


class ServiceUnavailable(ImageError):
    status = 503
    title = "Service Unavailable"


class Unauthorized(ImageError):
    status = 401
    title = "Unauthorized"


class Forbidden(ImageError):
    status = 403
    title = "Forbidden"


class NotFound(ImageError):
    status = 404
    title = "Not Found"


class MethodNotAllowed(ImageError):
    status = 405
    title = "Method Not Allowed"


class Conflict(ImageError):
    status = 409
    title = "Conflict"


class RequestEntityTooLarge(ImageError):
    status = 413
    title = "Request Entity Too Large"


class UnsupportedMediaType(ImageError):
    status = 415
    title = "Unsupported Media Type"


class Gone(ImageError):
    status = 410
    title = "Gone"


class RangeNotSatisfiable(ImageError):
    status = 416
    title = "Requested Range Not Satisfiable"
