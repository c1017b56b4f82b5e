"""Per-user quotas: limits an operator sets for one user of a project (``os-quota-sets`` with
``user_id``), as upstream's legacy quota driver keeps them.

A user's limit for a resource is, first found: its own, the project's (``berth.compute.quotas``).
Its own limits sit below the project's: the limits the project's users have of their own add up
to at most the project's limit (so a user may not be unlimited in a limited project), and unless
``force`` a user's limit is at least what the user uses. What a user uses is counted as the
project's, narrowed to what the user owns: the servers they made (BuildRequests and Instances
whose ``user_id`` is theirs), their server groups, their key pairs. Creates count against both
the project's limits and the user's own (``quotas.admit_servers`` and the other admissions).
"""

from __future__ import annotations

from collections.abc import Mapping

from sqlalchemy.engine import Connection

from berth.compute import exceptions, quotas
from berth.compute.cells import CellRegistry
from berth.compute.db import quotas as store


def user_limits(conn: Connection, project_id: str, user_id: str) -> dict[str, int]:
    """The user's limits: the project's, under the user's own."""
    own = store.user_limits(conn, project_id, user_id)
    return {**quotas.project_limits(conn, project_id), **quotas.known(own)}


def user_usage(
    conn: Connection, cells: CellRegistry, project_id: str, user_id: str
) -> dict[str, int]:
    """What the user uses of each resource in the project (server group members show 0, as in
    the project's view)."""
    servers = quotas.servers_of(conn, cells, project_id, user_id).values()
    return {
        **dict.fromkeys(quotas.DEFAULTS, 0),
        quotas.INSTANCES: len(servers),
        quotas.CORES: sum(server.vcpus for server in servers),
        quotas.RAM: sum(server.memory_mb for server in servers),
        quotas.SERVER_GROUPS: store.count_server_groups(conn, project_id, user_id),
        quotas.KEY_PAIRS: store.count_key_pairs(conn, user_id),
    }


def user_quotas(
    conn: Connection, cells: CellRegistry, project_id: str, user_id: str
) -> dict[str, quotas.Quota]:
    limits = user_limits(conn, project_id, user_id)
    usage = user_usage(conn, cells, project_id, user_id)
    return {name: quotas.Quota(limit, usage.get(name, 0)) for name, limit in limits.items()}


def set_user_limits(
    conn: Connection,
    cells: CellRegistry,
    owner: tuple[str, str],
    limits: Mapping[str, int],
    force: bool,
) -> None:
    """Set some of the limits of the project and user ``owner``. Each must leave the users'
    own limits within the project's (an unlimited one only under an unlimited project), and
    unless ``force`` be at least what the user uses: a 400 otherwise, and nothing is set. Taken
    under the project's lock, as the project's own limits are."""
    project_id, user_id = owner
    store.hold_project(conn, project_id)
    project = quotas.project_limits(conn, project_id)
    others = store.users_limits(conn, project_id, except_user=user_id)
    usage = user_usage(conn, cells, project_id, user_id) if not force else {}
    for name, limit in limits.items():
        if name in quotas.LEGACY_NETWORK or project[name] < 0:
            room = None
        else:
            room = max(project[name] - others.get(name, 0), 0)
        if room is not None and not 0 <= limit <= room:
            raise exceptions.BadRequest(
                f"Quota limit {limit} for {name} must be less than or equal to {room}: the "
                f"project's limit ({project[name]}) less its other users' own limits."
            )
        if 0 <= limit < usage.get(name, 0):
            raise exceptions.BadRequest(
                f"Quota limit {limit} for {name} must be greater than or equal to what the "
                f"user already uses ({usage[name]})."
            )
    store.set_user_limits(conn, project_id, user_id, limits)


def delete_user_limits(conn: Connection, project_id: str, user_id: str) -> None:
    """The user takes the project's limits again."""
    store.delete_user_limits(conn, project_id, user_id)
