"""Instance actions as the workflow records them, and as the API reads them.

An action is written where the Instance lives, in the same transaction that creates or changes
it: the super-conductor writes a server's ``create`` action when it creates the Instance (in the
chosen host's cell, or in cell0 for a server that never got a host), since before that the
server is only a BuildRequest in the API database and has no cell. The API writes ``delete``
when it starts deleting a server that has a cell. Each service then adds one event per step it
takes (:func:`step_done`, or :func:`step_started` and :func:`step_ended` around a long one),
under the instance's newest action of that name, so move operations reuse the same calls.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from dataclasses import dataclass

from sqlalchemy.engine import Connection, RowMapping

from berth.common.context import RequestContext
from berth.common.timeutils import utcnow
from berth.compute import exceptions
from berth.compute.db import build_requests, instance_actions, instances
from berth.compute.db import cells as mappings
from berth.compute.db.instance_actions import ERROR, SUCCESS
from berth.compute.service import ComputeService

__all__ = [
    "BUILD",
    "CREATE",
    "DELETE",
    "ERROR",
    "SCHEDULE",
    "SUCCESS",
    "TERMINATE",
    "Action",
    "begin",
    "for_server",
    "step_done",
    "step_ended",
    "step_started",
]

CREATE = "create"
DELETE = "delete"
# Event names are Nova's (the method that took the step), so tools that read them match.
SCHEDULE = "conductor_schedule_and_build_instances"
BUILD = "compute_build_and_run_instance"
TERMINATE = "compute_terminate_instance"
# Shelving (``berth.compute.shelving``): the actions are the API's action names, the events
# the methods that took the step, as Nova's.
SHELVE = "shelve"
SHELVE_OFFLOAD = "shelveOffload"
UNSHELVE = "unshelve"
SHELVE_STEP = "compute_shelve_instance"
SHELVE_OFFLOAD_STEP = "compute_shelve_offload_instance"
UNSHELVE_SCHEDULE = "conductor_unshelve_instance"
UNSHELVE_STEP = "compute_unshelve_instance"
# Snapshots (``berth.compute.snapshots``, ``host/snapshots``).
CREATE_IMAGE = "createImage"
CREATE_BACKUP = "createBackup"
SNAPSHOT_STEP = "compute_snapshot_instance"
# Rebuilding (``berth.compute.rebuild``, ``host/power``).
REBUILD = "rebuild"
REBUILD_STEP = "compute_rebuild_instance"


def begin(
    conn: Connection,
    instance_uuid: str,
    action: str,
    request_id: str,
    user_id: str,
    project_id: str,
    start_time: dt.datetime | None = None,
) -> int:
    """Record that a request began acting on the instance; the action's id."""
    return instance_actions.start_action(
        conn, instance_uuid, action, request_id, user_id, project_id, start_time
    )


def step_done(
    conn: Connection,
    instance_uuid: str,
    action: str,
    event: str,
    result: str,
    host: str | None = None,
    details: str | None = None,
    start_time: dt.datetime | None = None,
) -> None:
    """Record a step that began at ``start_time`` (now if not given) and is over, under the
    instance's newest ``action``."""
    action_id = _newest(conn, instance_uuid, action)
    if action_id is None:
        return
    event_done(conn, action_id, event, result, host, details, start_time)


def event_done(
    conn: Connection,
    action_id: int,
    event: str,
    result: str,
    host: str | None = None,
    details: str | None = None,
    start_time: dt.datetime | None = None,
) -> None:
    """:func:`step_done` under the action ``action_id`` (which the caller has at hand)."""
    # Started when the step began (now if not given), ended now: one insert of the ended step.
    now = utcnow()
    instance_actions.add_event(
        conn, action_id, event, host, result, details, start_time or now, finish_time=now
    )
    if result == ERROR:
        instance_actions.mark_error(conn, action_id)


def step_started(
    conn: Connection, instance_uuid: str, action: str, event: str, host: str | None = None
) -> int | None:
    """Record a step under way; its event id for :func:`step_ended` (None when the instance has
    no such action, e.g. one created before actions were recorded)."""
    action_id = _newest(conn, instance_uuid, action)
    if action_id is None:
        return None
    return instance_actions.add_event(conn, action_id, event, host)


def step_ended(
    conn: Connection, event_id: int | None, result: str, details: str | None = None
) -> None:
    """End a step with its result; an Error marks its action's message "Error", as Nova's."""
    if event_id is None:
        return
    if instance_actions.finish_event(conn, event_id, result, details) and result == ERROR:
        instance_actions.mark_error(conn, instance_actions.action_of_event(conn, event_id))


def _newest(conn: Connection, instance_uuid: str, action: str) -> int | None:
    return instance_actions.newest_action(conn, instance_uuid, action)


# -- reading ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Action:
    """An action with its events (oldest first) and when it last changed."""

    row: RowMapping
    events: list[RowMapping]

    @property
    def updated_at(self) -> dt.datetime:
        """The latest of the action's and its events' times: the store keeps no column for it,
        and an event starting or ending is what changes an action."""
        times = [self.row["start_time"], self.row["finish_time"]]
        for event in self.events:
            times += [event["start_time"], event["finish_time"]]
        return max(t for t in times if t is not None)


def for_server(
    service: ComputeService,
    context: RequestContext,
    server_uuid: str,
    may_see: Callable[[str], bool],
    include_deleted: bool,
) -> tuple[str, list[Action]]:
    """The server's project and its actions, newest first; NotFound when the caller may not
    see it, or it is deleted and ``include_deleted`` is off. A server still being scheduled has
    no Instance, hence no action yet."""
    with service.api_db.read() as conn:
        mapping = mappings.get_instance_mapping(conn, server_uuid)
        building = build_requests.get(conn, server_uuid) if mapping is not None else None
    if mapping is None or not may_see(mapping["project_id"]):
        raise _not_found(server_uuid)
    if mapping["cell_uuid"] is None:
        if building is None:
            raise _not_found(server_uuid)
        return mapping["project_id"], []
    cell = service.cells.cell(mapping["cell_uuid"])
    if cell is None:
        raise exceptions.ComputeError(f"Cell {mapping['cell_uuid']} is not mapped.")
    with service.cells.database(cell).read() as conn:
        if instances.get(conn, server_uuid, include_deleted=include_deleted) is None:
            raise _not_found(server_uuid)
        found = [
            Action(row, instance_actions.events(conn, row["id"]))
            for row in instance_actions.list_actions(conn, server_uuid)
        ]
    return mapping["project_id"], found


def _not_found(server_uuid: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Instance {server_uuid} could not be found.")
