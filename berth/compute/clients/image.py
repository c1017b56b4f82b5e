"""What the compute service asks of the Image API, as Nova asks Glance: the images of the
compute API's ``/images`` proxy (with the caller's own token, so the caller sees what the Image
API lets it see), and the snapshots it makes (as the service: an image owned by the server's
project, whose data a compute host uploads).
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping, Sequence
from typing import Any

import httpx

from berth.compute.clients.http import call

PATCH_MEDIA_TYPE = "application/openstack-images-v2.1-json-patch"
# The headers that say who a caller is (a token; noauth2's roles, project and scope too).
CREDENTIALS = ("x-auth-token", "x-roles", "x-project-id", "openstack-system-scope")


def credentials(headers: Mapping[str, str]) -> dict[str, str]:
    """The caller's credentials among a request's headers, to call the Image API as it."""
    return {name: headers[name] for name in CREDENTIALS if name in headers}


class _AsCaller(httpx.Auth):
    def __init__(self, headers: Mapping[str, str]) -> None:
        self.headers = headers

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers.update(self.headers)
        yield request


class ImageError(Exception):
    """The Image API refused a request; ``status`` is its HTTP status."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


class ImageClient:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def _call(
        self, method: str, path: str, caller: Mapping[str, str] | None, **kwargs: Any
    ) -> httpx.Response:
        """As the service, or as the caller whose ``credentials`` are given."""
        if caller is not None:
            kwargs["auth"] = _AsCaller(caller)
        answer = call(self.client, method, path, **kwargs)
        if not answer.is_success:
            try:
                message = str(answer.json()["message"])
            except (ValueError, KeyError, TypeError):
                message = answer.text[:500]
            raise ImageError(answer.status_code, message)
        return answer

    def images(
        self, params: Sequence[tuple[str, str]], caller: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """One page of ``GET /v2/images`` (``{"images": [...], "next": ...}``)."""
        return self._call("GET", "/v2/images", caller, params=list(params)).json()  # type: ignore[no-any-return]

    def image(self, image_id: str, caller: Mapping[str, str] | None = None) -> dict[str, Any]:
        return self._call("GET", f"/v2/images/{image_id}", caller).json()  # type: ignore[no-any-return]

    def create(
        self, body: Mapping[str, Any], caller: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        return self._call("POST", "/v2/images", caller, json=dict(body)).json()  # type: ignore[no-any-return]

    def update(
        self,
        image_id: str,
        operations: Sequence[Mapping[str, Any]],
        caller: Mapping[str, str] | None = None,
    ) -> dict[str, Any]:
        answer = self._call(
            "PATCH", f"/v2/images/{image_id}", caller,
            json=list(operations), headers={"content-type": PATCH_MEDIA_TYPE},
        )  # fmt: skip
        return answer.json()  # type: ignore[no-any-return]

    def delete(self, image_id: str, caller: Mapping[str, str] | None = None) -> None:
        self._call("DELETE", f"/v2/images/{image_id}", caller)

    def upload(self, image_id: str, chunks: Iterable[bytes]) -> None:
        self._call(
            "PUT", f"/v2/images/{image_id}/file", None,
            content=chunks, headers={"content-type": "application/octet-stream"},
        )  # fmt: skip
