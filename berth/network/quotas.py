"""Network quotas: how many networks, subnets, ports, RBAC policies, security groups, security
group rules, routers and floating IPs a project may own, and the check every create of one goes
through.

A project's limit for a resource is its own (``PUT /v2.0/quotas/{project}``), else the
default from the settings (``quota_network``, ``quota_subnet``, ``quota_port``,
``quota_rbac_policy``, ``quota_security_group``, ``quota_security_group_rule``,
``quota_router``, ``quota_floatingip``: upstream's 100, 100, 500, 10, 10, 100, 10 and 50); -1
is unlimited. Usage is counted, never stored: the resources whose
``project_id`` is the project's (a port the compute service makes for a server counts against
the server's project).

:func:`enforce` runs in the create's own write transaction, after the insert: it locks the
project's row, then counts, so of two creates the second counts the first's row (committed by
then) and its own; they never pass a limit together.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.config import NetworkSettings
from berth.network import exceptions
from berth.network.store import quotas as store

NETWORK: Final = "network"
SUBNET: Final = "subnet"
PORT: Final = "port"
RBAC_POLICY: Final = "rbac_policy"
SECURITY_GROUP: Final = "security_group"
SECURITY_GROUP_RULE: Final = "security_group_rule"
ROUTER: Final = "router"
FLOATINGIP: Final = "floatingip"
RESOURCES: Final = (
    NETWORK, SUBNET, PORT, RBAC_POLICY, SECURITY_GROUP, SECURITY_GROUP_RULE, ROUTER, FLOATINGIP,
)  # fmt: skip
UNLIMITED: Final = -1
# The largest limit the database's integer column holds.
MAX_LIMIT: Final = 2**31 - 1


@dataclass(frozen=True)
class Quota:
    limit: int
    used: int


def defaults(settings: NetworkSettings) -> dict[str, int]:
    return {
        NETWORK: settings.quota_network,
        SUBNET: settings.quota_subnet,
        PORT: settings.quota_port,
        RBAC_POLICY: settings.quota_rbac_policy,
        SECURITY_GROUP: settings.quota_security_group,
        SECURITY_GROUP_RULE: settings.quota_security_group_rule,
        ROUTER: settings.quota_router,
        FLOATINGIP: settings.quota_floatingip,
    }


def limits(conn: Connection, settings: NetworkSettings, project_id: str) -> dict[str, int]:
    return {**defaults(settings), **store.limits_of(conn, project_id)}


def quotas(conn: Connection, settings: NetworkSettings, project_id: str) -> dict[str, Quota]:
    """Each resource's limit and what the project uses of it."""
    found = limits(conn, settings, project_id)
    return {name: Quota(found[name], store.count(conn, project_id, name)) for name in RESOURCES}


def projects_with_limits(conn: Connection, settings: NetworkSettings) -> dict[str, dict[str, int]]:
    """The limits of every project that has some of its own, by project."""
    return {
        project_id: {**defaults(settings), **own}
        for project_id, own in store.all_limits(conn).items()
    }


def prepare(db: Database, project_id: str) -> None:
    """Before the write transaction of a create for the project (or a change of its limits):
    make its lock row, so that first creates do not race to make it inside theirs."""
    store.prepare(db, project_id)


def enforce(
    conn: Connection, settings: NetworkSettings, project_id: str, resource: str, adding: int = 1
) -> None:
    """Refuse (OverQuota, 409) a create of ``adding`` resources that took the project over its
    limit of ``resource``; call it after the inserts, in the same transaction, which the
    refusal rolls back."""
    store.hold(conn, project_id)
    own, used = store.limit_and_count(conn, project_id, resource)
    limit = defaults(settings)[resource] if own is None else own
    if 0 <= limit < used:
        raise exceptions.OverQuota(
            f"Quota exceeded for resources: ['{resource}']: the project's limit is {limit} and "
            f"it has {used - adding}."
        )


def set_limits(
    conn: Connection,
    settings: NetworkSettings,
    project_id: str,
    new: Mapping[str, int],
    check_limit: bool,
) -> None:
    """Set some of the project's limits; with ``check_limit``, a limit below what the project
    uses is a 400 and nothing is set. Under the project's lock, so no create slips in between."""
    store.hold(conn, project_id)
    if check_limit:
        for name, limit in new.items():
            used = store.count(conn, project_id, name)
            if 0 <= limit < used:
                raise exceptions.BadRequest(
                    f"Quota limit {limit} for {name} must be greater than or equal to what is "
                    f"already used ({used})."
                )
    store.set_limits(conn, project_id, new)


def delete_limits(conn: Connection, project_id: str) -> None:
    """The project takes the defaults again."""
    store.delete_limits(conn, project_id)
