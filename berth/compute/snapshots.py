"""Snapshots of a server: the ``createImage`` action, and the image shelving keeps, as Nova makes
them.

The compute API makes the image in the Image API (queued, owned by the server's project,
``image_type=snapshot``, ``instance_uuid``, the base image's properties inherited) and hands the
server to its host with the image's id; the host uploads the guest's disk to it (saving, then
active) and ends the task. While the task is ``image_snapshot`` (and the host's steps after it)
every other task on the server is a 409, a second ``createImage`` included.

``createBackup`` is a snapshot with ``image_type=backup`` and its ``backup_type``, under the task
``image_backup``; once it is saved the host deletes the server's oldest backups of that type
beyond the ``rotation`` asked.

Shelving makes ``<server name>-shelved`` the same way (its property ``shelved_instance_uuid``
names the server, so that unshelving, or deleting the shelved server, finds and deletes it).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.bus import BusError
from berth.common.context import RequestContext
from berth.compute import actions, exceptions, server_tasks
from berth.compute.cells import Cell
from berth.compute.clients.http import ServiceUnavailable
from berth.compute.clients.image import ImageClient, ImageError
from berth.compute.db import images as image_store
from berth.compute.service import ComputeService

LOG = logging.getLogger(__name__)

SNAPSHOTTABLE = ("active", "stopped", "paused", "suspended")
SHELVED_MARK = "shelved_instance_uuid"
# Properties of the base image a snapshot does not inherit (they describe that image's data or
# its signature, not the guest).
_NOT_INHERITED = frozenset(
    {
        "checksum", "os_hash_algo", "os_hash_value", "img_signature", "img_signature_hash_method",
        "img_signature_key_type", "img_signature_certificate_uuid", "cache_in_nova",
        "bittorrent", "instance_uuid", "image_type", "base_image_ref", "user_id",
        SHELVED_MARK,
    }
)  # fmt: skip


@dataclass(frozen=True)
class Backup:
    """What makes a snapshot a backup: its kind (``daily``...) and how many of that kind the
    server keeps (the oldest beyond are deleted once the new one is saved)."""

    backup_type: str
    rotation: int


def create_image(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    name: str,
    metadata: Mapping[str, str],
    backup: Backup | None = None,
) -> str:
    """Start the snapshot (or the backup) of the server; the new image's id."""
    images = _images(service)
    task_state = "image_snapshot" if backup is None else "image_backup"
    started = server_tasks.start(
        service, context, server_uuid, may_see,
        action=actions.CREATE_IMAGE if backup is None else actions.CREATE_BACKUP,
        task_state=task_state, vm_states=SNAPSHOTTABLE, check=_on_a_host,
    )  # fmt: skip
    if backup is not None:
        metadata = {
            **metadata, "image_type": "backup", "backup_type": backup.backup_type,
        }  # fmt: skip
    try:
        image_id = _make_image(service, images, started.instance, name, metadata)
    except BaseException:
        server_tasks.undo(service, started, task_state)
        raise
    try:
        host = service.cell_rpc.host(started.cell, started.instance["host"])
        host.snapshot_instance(server_uuid, image_id, None if backup is None else backup.rotation)
    except BusError:
        server_tasks.undo(service, started, task_state)
        images.delete(image_id)
        raise exceptions.ComputeError(
            f"The host of instance {server_uuid} could not be reached; no image was made."
        ) from None
    return image_id


def shelved_image(service: ComputeService, instance: Mapping[str, Any]) -> str:
    """The image a shelve keeps of the server (its host uploads the data)."""
    images = _images(service)
    name = f"{instance['display_name']}-shelved"
    return _make_image(service, images, instance, name, {SHELVED_MARK: str(instance["uuid"])})


def delete_shelved_image(images: ImageClient | None, server_uuid: str) -> None:
    """Delete the image shelving kept of the server, if any (the server was unshelved or
    deleted); one that cannot be deleted now is logged and left."""
    if images is None:
        return
    try:
        found = images.images([(SHELVED_MARK, server_uuid)])["images"]
        for image in found:
            images.delete(str(image["id"]))
    except (ImageError, ServiceUnavailable) as exc:
        LOG.warning("the shelved image of server %s was not deleted: %s", server_uuid, exc)


def snapshot_body(
    instance: Mapping[str, Any],
    base: Mapping[str, Any] | None,
    name: str,
    metadata: Mapping[str, str],
) -> dict[str, Any]:
    """The Image API body of a snapshot of ``instance`` booted from ``base`` (None when that
    image is gone): the base image's properties and formats, Nova's snapshot properties, then
    the caller's ``metadata`` over them."""
    flavor = instance["flavor"] or {}
    inherited: dict[str, Any] = {}
    body: dict[str, Any] = {"min_ram": 0, "min_disk": 0}
    if base is not None:
        inherited = {
            key: value
            for key, value in (base["properties"] or {}).items()
            if key not in _NOT_INHERITED
        }
        body.update(
            min_ram=base["min_ram"],
            min_disk=base["min_disk"],
            disk_format=base["disk_format"],
            container_format=base["container_format"],
        )
    body["min_disk"] = max(body["min_disk"], int(flavor.get("root_gb") or 0))
    return {
        **inherited,
        **body,
        "name": name,
        "visibility": "private",
        "owner": instance["project_id"],
        "instance_uuid": str(instance["uuid"]),
        "user_id": str(instance["user_id"]),
        "image_type": "snapshot",
        "base_image_ref": str(instance["image_ref"] or ""),
        **metadata,
    }


def _make_image(
    service: ComputeService,
    images: ImageClient,
    instance: Mapping[str, Any],
    name: str,
    metadata: Mapping[str, str],
) -> str:
    with service.api_db.read() as conn:
        base = image_store.get(conn, instance["image_ref"]) if instance["image_ref"] else None
    body = snapshot_body(instance, base, name, metadata)
    try:
        return str(images.create(body)["id"])
    except ImageError as exc:
        if exc.status == 400:
            raise exceptions.BadRequest(f"Invalid image metadata: {exc}") from None
        raise exceptions.ComputeError(f"The image service refused the snapshot: {exc}") from None
    except ServiceUnavailable as exc:
        raise exceptions.ServiceUnavailable(f"The image service is unavailable: {exc}") from None


def _images(service: ComputeService) -> ImageClient:
    if service.images is None:
        raise exceptions.ComputeError("This compute API has no image service to snapshot to.")
    return service.images


def _on_a_host(cell: Cell, row: RowMapping) -> None:
    if not row["host"]:
        raise exceptions.Conflict(
            f"Instance {row['uuid']} has no host in vm_state {row['vm_state']}; it cannot be "
            "snapshotted."
        )
