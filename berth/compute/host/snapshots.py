"""What a compute host does to snapshot or back up a server (``HostAgent.snapshot_instance``)
and to keep a shelved server's image (``upload``, called by ``host/shelving``).

The API made the image (queued) and set the task ``image_snapshot``; the host takes it through
Nova's task states ``image_pending_upload`` and ``image_uploading`` while it copies the guest's
disk to the Image API (the image is ``saving`` then ``active``), and ends the task. An image
deleted meanwhile (a client may delete a snapshot while it saves) only ends the upload; any
other failure is the step's error, and the half-made image is deleted, as Nova does.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from berth.compute import actions
from berth.compute.clients.http import ServiceUnavailable
from berth.compute.clients.image import ImageError
from berth.compute.db import instances

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)


def snapshot(agent: HostAgent, instance_uuid: str, image_id: str, rotation: int | None) -> None:
    """A snapshot; with a ``rotation``, a backup (the API set ``image_backup``)."""
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    task_state = "image_snapshot" if rotation is None else "image_backup"
    if row is None or row["task_state"] != task_state or row["host"] != agent.host:
        return
    action = actions.CREATE_IMAGE if rotation is None else actions.CREATE_BACKUP
    with agent.db.write() as conn:
        step = actions.step_started(conn, instance_uuid, action, actions.SNAPSHOT_STEP, agent.host)
        instances.update(conn, instance_uuid, {"task_state": "image_pending_upload"}, [task_state])
    with agent.db.write() as conn:
        uploading = instances.update(
            conn, instance_uuid, {"task_state": "image_uploading"}, ["image_pending_upload"]
        )
    failure = upload(agent, instance_uuid, image_id) if uploading else "the server changed"
    if failure is None and rotation is not None:
        failure = rotate(agent, instance_uuid, image_id, rotation)
    with agent.db.write() as conn:
        instances.update(conn, instance_uuid, {"task_state": None}, ["image_uploading"])
        actions.step_ended(conn, step, actions.ERROR if failure else actions.SUCCESS, failure)


def rotate(agent: HostAgent, instance_uuid: str, image_id: str, rotation: int) -> str | None:
    """Delete the server's backups of the new one's type beyond the newest ``rotation`` (the new
    one first, whatever the times say: they are to the second; all of them for 0, as Nova);
    why it failed, or None."""
    assert agent.images is not None  # the upload needed it
    try:
        backup_type = agent.images.image(image_id)["backup_type"]
        found = agent.images.images(
            [("instance_uuid", instance_uuid), ("image_type", "backup"),
             ("backup_type", backup_type), ("sort_key", "created_at"), ("sort_dir", "desc"),
             ("limit", "1000")]
        )["images"]  # fmt: skip
        newest_first = [image_id, *(str(i["id"]) for i in found if i["id"] != image_id)]
        for old in newest_first[rotation:]:
            agent.images.delete(old)
    except (ImageError, ServiceUnavailable) as exc:
        return f"the backups of server {instance_uuid} were not rotated: {exc}"
    return None


def upload(agent: HostAgent, instance_uuid: str, image_id: str) -> str | None:
    """Copy the guest's disk to the image; why it failed, or None."""
    if agent.images is None:
        return "this host has no image service to upload to"
    try:
        agent.images.upload(image_id, agent.driver.disk_image(instance_uuid))
    except ImageError as exc:
        if exc.status in (404, 410):
            LOG.info("image %s of server %s was deleted while it saved", image_id, instance_uuid)
            return None
        failure = f"the image service refused the snapshot {image_id}: {exc}"
    except ServiceUnavailable as exc:
        failure = f"the image service is unavailable: {exc}"
    else:
        return None
    LOG.warning("snapshot of server %s failed: %s", instance_uuid, failure)
    try:
        agent.images.delete(image_id)
    except (ImageError, ServiceUnavailable) as exc:
        LOG.warning("the failed snapshot %s was not deleted: %s", image_id, exc)
    return failure
