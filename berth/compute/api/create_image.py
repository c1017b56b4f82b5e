"""The server actions ``createImage`` (a snapshot of the server, as a new image) and
``createBackup`` (one that the server keeps ``rotation`` of, by ``backup_type``).

Each answers 202 once the image is made (queued) and the server handed to its host: before 2.45
with the image's address in ``Location``, from 2.45 with ``{"image_id": ...}`` (a backup with
rotation 0, which keeps nothing, with neither, as Nova). The domain is
:mod:`berth.compute.snapshots`.
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import snapshots
from berth.compute.api.request import ComputeRequest

# From this microversion the image's id is in the body, no longer in a Location header.
IMAGE_ID_IN_BODY = (2, 45)


def create_image(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:servers:create_image"
    req.authorize(rule)

    def may_see(project_id: str) -> bool:
        return req.allowed(rule, {"project_id": project_id})

    image_id = snapshots.create_image(
        req.service, req.context, server_id, may_see,
        argument["name"], argument.get("metadata") or {},
    )  # fmt: skip
    return _made(req, image_id)


def create_backup(req: ComputeRequest, server_id: str, argument: Any) -> Response:
    rule = "os_compute_api:os-create-backup"
    req.authorize(rule)

    def may_see(project_id: str) -> bool:
        return req.allowed(rule, {"project_id": project_id})

    backup = snapshots.Backup(argument["backup_type"], int(argument["rotation"]))
    image_id = snapshots.create_image(
        req.service, req.context, server_id, may_see,
        argument["name"], argument.get("metadata") or {}, backup,
    )  # fmt: skip
    if backup.rotation == 0:
        return req.no_content(202)
    return _made(req, image_id)


def _made(req: ComputeRequest, image_id: str) -> Response:
    if req.at_least(IMAGE_ID_IN_BODY):
        return req.respond({"image_id": image_id}, 202)
    return Response(status_code=202, headers={"location": f"{req.base_url}/v2.1/images/{image_id}"})
