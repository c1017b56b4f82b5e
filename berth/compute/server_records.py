"""What a server records about itself for its owner, read and changed: its metadata and its
tags (the rules are :mod:`server_metadata` and :mod:`server_tags`).

Both live in the server's Instance row in its cell, or in its BuildRequest while it is being
scheduled, which is where they are read from. A change reads the row, computes the new value
and writes it in one cell transaction (the row locked where the database has row locks), so
two concurrent changes both land. A server being scheduled cannot change (409, as Nova
answers); nor can one in a state Nova refuses it in: both change only while the server is
ACTIVE, SHUTOFF, PAUSED or SUSPENDED, and metadata only while no task runs either and (for
all but admins) while the server is not locked.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from sqlalchemy.engine import RowMapping

from berth.common.context import RequestContext
from berth.compute import exceptions, quotas, server_tags, server_tasks, servers
from berth.compute import server_views as views
from berth.compute.cells import Cell
from berth.compute.db import instances
from berth.compute.service import ComputeService

# The vm_states in which metadata and tags may change, as Nova's.
CHANGEABLE = ("active", "paused", "suspended", "stopped")


@dataclass(frozen=True)
class ServerRef:
    """A server as a request names it: who asks, the server's uuid, and whose servers the
    caller may see (``may_see(project_id)``; any other server is a 404, hiding it exists)."""

    service: ComputeService
    context: RequestContext
    uuid: str
    may_see: Callable[[str], bool]

    def get(self) -> views.Server:
        return servers.get_server(self.service, self.context, self.uuid, self.may_see)

    def find_live(self, action: str) -> tuple[Cell, RowMapping]:
        """Its cell and Instance; 409 while it has no cell yet."""
        return server_tasks.find(self.service, self.context, self.uuid, self.may_see, action)


# -- metadata --------------------------------------------------------------------------------


def metadata(server: ServerRef) -> dict[str, str]:
    return dict(server.get().metadata)


def metadata_item(server: ServerRef, key: str) -> str:
    found = metadata(server)
    if key not in found:
        raise _no_item(key)
    return found[key]


def replace_metadata(server: ServerRef, new: dict[str, str]) -> dict[str, str]:
    """The server's metadata becomes ``new``; what it holds now."""
    return _change_metadata(server, lambda _old: dict(new))


def merge_metadata(server: ServerRef, items: dict[str, str]) -> dict[str, str]:
    """Add ``items`` to the server's metadata, replacing the values of keys it has; what it
    holds now."""
    return _change_metadata(server, lambda old: {**old, **items})


def delete_metadata_item(server: ServerRef, key: str) -> None:
    def without(old: dict[str, str]) -> dict[str, str]:
        if key not in old:
            raise _no_item(key)
        return {k: v for k, v in old.items() if k != key}

    _change_metadata(server, without)


def _change_metadata(
    server: ServerRef, change: Callable[[dict[str, str]], dict[str, str]]
) -> dict[str, str]:
    action = "update metadata"
    cell, row = server.find_live(action)
    with server.service.api_db.read() as conn:
        limits = quotas.project_limits(conn, row["project_id"])

    def new_value(held: RowMapping) -> dict[str, Any]:
        # As Nova's metadata API: a locked server's metadata is its locker's to change.
        server_tasks.refuse_if_locked(server.context, held)
        if held["task_state"] is not None:
            raise _conflict(action, server.uuid, "task_state", held["task_state"])
        new = change(dict(held["metadata"] or {}))
        quotas.check_metadata_items(limits, len(new))
        return {"metadata": new}

    changed = _change(server, cell, action, new_value)
    return dict(changed["metadata"])


def _no_item(key: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Metadata item {key!r} was not found.")


# -- tags ------------------------------------------------------------------------------------


def tags(server: ServerRef) -> list[str]:
    return list(server.get().tags)


def has_tag(server: ServerRef, tag: str) -> bool:
    return tag in server.get().tags


def replace_tags(server: ServerRef, new: list[str]) -> list[str]:
    """The server's tags become ``new`` (none for an empty list); what it has now."""
    return _change_tags(server, lambda _old: list(new))


def add_tag(server: ServerRef, tag: str) -> bool:
    """Tag the server; False when it had the tag already (nothing changes then)."""
    added = False

    def plus(old: list[str]) -> list[str]:
        nonlocal added
        if tag in old:
            return old
        server_tags.check_room([*old, tag])
        added = True
        return [*old, tag]

    _change_tags(server, plus)
    return added


def delete_tag(server: ServerRef, tag: str) -> None:
    def without(old: list[str]) -> list[str]:
        if tag not in old:
            raise no_tag(server.uuid, tag)
        return [t for t in old if t != tag]

    _change_tags(server, without)


def no_tag(server_uuid: str, tag: str) -> exceptions.NotFound:
    return exceptions.NotFound(f"Server {server_uuid} has no tag {tag!r}.")


def _change_tags(server: ServerRef, change: Callable[[list[str]], list[str]]) -> list[str]:
    action = "update tags"
    cell, _row = server.find_live(action)
    changed = _change(server, cell, action, lambda held: {"tags": change(list(held["tags"] or []))})
    return list(changed["tags"])


# -- both ------------------------------------------------------------------------------------


def _change(
    server: ServerRef,
    cell: Cell,
    action: str,
    new_value: Callable[[RowMapping], dict[str, Any]],
) -> dict[str, Any]:
    """Write the columns ``new_value`` computes from the held row; they are returned."""
    with server.service.cells.database(cell).write() as conn:
        held = instances.hold(conn, server.uuid)
        if held is None:
            raise exceptions.NotFound(f"Instance {server.uuid} could not be found.")
        if held["vm_state"] not in CHANGEABLE:
            raise _conflict(action, server.uuid, "vm_state", held["vm_state"])
        values = new_value(held)
        instances.update(conn, server.uuid, values)
    return values


def _conflict(action: str, server_uuid: str, kind: str, state: str) -> exceptions.Conflict:
    return exceptions.Conflict(
        f"Cannot '{action}' instance {server_uuid} while it is in {kind} {state}"
    )
