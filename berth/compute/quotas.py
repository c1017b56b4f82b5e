"""Compute quotas: which resources have limits, where a project's limits come from, what it
uses, and the admissions that refuse a create going over.

A project's limit for a resource is, first found: its own (``os-quota-sets``), the ``default``
quota class's (``os-quota-class-sets/default``), Berth's default below (upstream's defaults).
-1 is unlimited. A user of the project may have limits of its own below the project's
(:mod:`berth.compute.user_quotas`); a create counts against both.

Usage is counted from the databases, upstream's default way (not from Placement): a project's
servers are its BuildRequests plus its live Instances in every cell, each counting one instance
and its flavor's VCPUs and memory; server groups count per project, their members per group, key
pairs per user. A server that is being deleted counts until its cell says it is deleted.

Every admission runs in the write transaction that then adds what it admitted, after locking the
owner's row (``berth.compute.db.quotas.hold_project``): two creates of one project are counted
one after the other, so they never pass a limit together.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.compute import exceptions
from berth.compute.cells import CellRegistry
from berth.compute.db import quotas as store
from berth.compute.db.quotas import ServerSize

INSTANCES: Final = "instances"
CORES: Final = "cores"
RAM: Final = "ram"
METADATA_ITEMS: Final = "metadata_items"
INJECTED_FILES: Final = "injected_files"
INJECTED_FILE_CONTENT_BYTES: Final = "injected_file_content_bytes"
INJECTED_FILE_PATH_BYTES: Final = "injected_file_path_bytes"
KEY_PAIRS: Final = "key_pairs"
SERVER_GROUPS: Final = "server_groups"
SERVER_GROUP_MEMBERS: Final = "server_group_members"

# Every resource with a limit, and its default (upstream's).
DEFAULTS: Final[Mapping[str, int]] = {
    INSTANCES: 10,
    CORES: 20,
    RAM: 51200,
    METADATA_ITEMS: 128,
    INJECTED_FILES: 5,
    INJECTED_FILE_CONTENT_BYTES: 10240,
    INJECTED_FILE_PATH_BYTES: 255,
    KEY_PAIRS: 100,
    SERVER_GROUPS: 10,
    SERVER_GROUP_MEMBERS: 10,
}
INJECTED: Final = (INJECTED_FILES, INJECTED_FILE_CONTENT_BYTES, INJECTED_FILE_PATH_BYTES)
# The network service's resources, which the API still shows before 2.36 (quota classes before
# 2.50): their limits are kept and shown (unlimited unless set), never counted, since Berth's
# network service keeps the quotas that apply.
LEGACY_NETWORK: Final = ("fixed_ips", "floating_ips", "security_group_rules", "security_groups")
# Taken by an update before those versions and dropped: upstream shows it nowhere any more.
LEGACY_NETWORKS: Final = "networks"
UNLIMITED: Final = -1
# The largest limit the databases' integer column holds.
MAX_LIMIT: Final = 2**31 - 1
DEFAULT_CLASS: Final = "default"


class QuotaExceeded(exceptions.Forbidden):
    """A create would take a project over a limit (403, as upstream)."""


@dataclass(frozen=True)
class Quota:
    """One resource of a project: its limit and what is used of it."""

    limit: int
    in_use: int

    def fits(self, amount: int) -> bool:
        return self.limit < 0 or self.in_use + amount <= self.limit

    def room(self, each: int) -> int | None:
        """How many more of ``each`` fit; None when unlimited (or ``each`` is nothing)."""
        if self.limit < 0 or each <= 0:
            return None
        return max(self.limit - self.in_use, 0) // each


def prepare_project(db: Database, project_id: str) -> None:
    """Before the write transaction of an admission for the project (or of a change of its
    limits): make its lock row, so that first writers do not race to make it inside."""
    store.prepare_project(db, project_id)


def prepare_user(db: Database, user_id: str) -> None:
    """:func:`prepare_project` for a key pair admission's user."""
    store.prepare_user(db, user_id)


# -- limits ----------------------------------------------------------------------------------


def class_limits(conn: Connection, class_name: str) -> dict[str, int]:
    """A quota class's limits: Berth's defaults, under the default class's, under its own."""
    return _layered(
        *(store.class_limits(conn, name) for name in dict.fromkeys((DEFAULT_CLASS, class_name)))
    )


def _layered(*layers: Mapping[str, int]) -> dict[str, int]:
    """Berth's defaults with each layer's limits over the last (of resources Berth has)."""
    found = {**DEFAULTS, **dict.fromkeys(LEGACY_NETWORK, UNLIMITED)}
    for layer in layers:
        found.update(known(layer))
    return found


def default_limits(conn: Connection) -> dict[str, int]:
    """What a project without limits of its own gets."""
    return class_limits(conn, DEFAULT_CLASS)


def project_limits(conn: Connection, project_id: str) -> dict[str, int]:
    return {**default_limits(conn), **known(store.project_limits(conn, project_id))}


def known(limits: Mapping[str, int]) -> dict[str, int]:
    """The limits of resources Berth has (a stored row of another is left out)."""
    return {
        name: limit for name, limit in limits.items() if name in DEFAULTS or name in LEGACY_NETWORK
    }


# -- usage -----------------------------------------------------------------------------------


def servers_of(
    conn: Connection, cells: CellRegistry, project_id: str, user_id: str | None = None
) -> dict[str, ServerSize]:
    """The project's servers (its user's, given one), by uuid: BuildRequests read first, then
    each cell's Instances.

    A conductor creates a server's Instance before it deletes its BuildRequest, so a server
    moving to its cell meanwhile is read in one place or both (it is counted once, by uuid),
    never in neither."""
    found = store.building_servers(conn, project_id, user_id)
    for cell in cells.cells():
        with cells.database(cell).read() as cell_conn:
            found.update(store.cell_servers(cell_conn, project_id, user_id))
    return found


def project_usage(conn: Connection, cells: CellRegistry, project_id: str) -> dict[str, int]:
    """What the project uses of each resource. Key pairs (counted per user) and server group
    members (per group) show 0 here, as in upstream's project view."""
    servers = servers_of(conn, cells, project_id).values()
    return {
        **dict.fromkeys(DEFAULTS, 0),
        INSTANCES: len(servers),
        CORES: sum(server.vcpus for server in servers),
        RAM: sum(server.memory_mb for server in servers),
        SERVER_GROUPS: store.count_server_groups(conn, project_id),
    }


def project_quotas(conn: Connection, cells: CellRegistry, project_id: str) -> dict[str, Quota]:
    limits = project_limits(conn, project_id)
    usage = project_usage(conn, cells, project_id)
    return {name: Quota(limits[name], usage.get(name, 0)) for name in limits}


# -- setting limits --------------------------------------------------------------------------


def set_project_limits(
    conn: Connection,
    cells: CellRegistry,
    project_id: str,
    limits: Mapping[str, int],
    force: bool,
) -> None:
    """Set some of the project's limits. Unless ``force``, a limit below what the project uses
    is a 400 and nothing is set. Taken under the project's lock, so no create slips in between
    the check and the change."""
    store.hold_project(conn, project_id)
    if not force:
        usage = project_usage(conn, cells, project_id)
        given = store.users_limits(conn, project_id)
        for name, limit in limits.items():
            if 0 <= limit < usage.get(name, 0):
                raise exceptions.BadRequest(
                    f"Quota limit {limit} for {name} must be greater than or equal to what is "
                    f"already used ({usage[name]})."
                )
            if 0 <= limit < given.get(name, 0):
                raise exceptions.BadRequest(
                    f"Quota limit {limit} for {name} must be greater than or equal to what its "
                    f"users' own limits add up to ({given[name]})."
                )
    store.set_project_limits(conn, project_id, limits)


def delete_project_limits(conn: Connection, project_id: str) -> None:
    """The project takes the defaults again, and its users the project's."""
    store.delete_project_limits(conn, project_id)
    store.delete_user_limits(conn, project_id)


def set_class_limits(conn: Connection, class_name: str, limits: Mapping[str, int]) -> None:
    """Set some of a quota class's limits; the ``default`` class's are every project's
    defaults (other classes are kept and shown, and change nothing)."""
    store.set_class_limits(conn, class_name, limits)


# -- admissions ------------------------------------------------------------------------------


@dataclass(frozen=True)
class HeldLimits:
    """A project's limits (:func:`project_limits`) and one of its users' own, read after
    taking the project's lock (:func:`hold_limits`)."""

    project: dict[str, int]
    user: dict[str, int]


def hold_limits(conn: Connection, owner: tuple[str, str]) -> HeldLimits:
    """Lock the project's row of ``owner`` (project, user), then read its limits and the
    user's, in one statement: what :func:`admit_servers` decides with."""
    project_id, user_id = owner
    store.hold_project(conn, project_id)
    found = store.scoped_limits(conn, DEFAULT_CLASS, project_id, user_id)
    return HeldLimits(_layered(found.of_class, found.of_project), found.of_user)


def admit_servers(
    conn: Connection,
    cells: CellRegistry,
    owner: tuple[str, str],
    held: HeldLimits,
    size: ServerSize,
    counts: tuple[int, int],
    metadata_items: int,
    group_uuid: str | None,
) -> int:
    """How many servers of ``size`` the project and user ``owner`` may have now, between
    ``counts`` (min_count, max_count): as many as fit under the project's limits and the
    user's own (``held``, read by :func:`hold_limits` in this transaction), or QuotaExceeded
    when fewer than the minimum do.

    It locks the group's row when there is one (the project's is held already); the caller adds
    the servers (and the group's new members) in the same transaction."""
    project_id, user_id = owner
    minimum, maximum = counts
    limits = held.project
    check_metadata_items(limits, metadata_items)
    # Each resource: its name, its quota, and how much of it one more server takes.
    wanted: list[tuple[str, Quota, int]] = []
    # Reading every cell is the costly part: skipped when the project has no server limit.
    if any(limits[name] >= 0 for name in (INSTANCES, CORES, RAM)):
        wanted += _server_quotas(limits, servers_of(conn, cells, project_id).values(), size)
    own = held.user
    if any(own.get(name, UNLIMITED) >= 0 for name in (INSTANCES, CORES, RAM)):
        mine = servers_of(conn, cells, project_id, user_id).values()
        wanted += _server_quotas({**limits, **own}, mine, size)
    if group_uuid is not None:
        members = store.hold_group_and_count_members(conn, group_uuid)
        if members is not None:
            wanted.append((SERVER_GROUP_MEMBERS, Quota(limits[SERVER_GROUP_MEMBERS], members), 1))
    rooms = [quota.room(each) for _, quota, each in wanted]
    allowed = min([maximum, *(room for room in rooms if room is not None)])
    if allowed < minimum:
        over = {
            name: (quota, each * minimum)
            for name, quota, each in wanted
            if not quota.fits(each * minimum)
        }
        raise _exceeded(over)
    return allowed


def _server_quotas(
    limits: Mapping[str, int], servers: Iterable[ServerSize], size: ServerSize
) -> list[tuple[str, Quota, int]]:
    counted = list(servers)
    return [
        (INSTANCES, Quota(limits[INSTANCES], len(counted)), 1),
        (CORES, Quota(limits[CORES], sum(s.vcpus for s in counted)), size.vcpus),
        (RAM, Quota(limits[RAM], sum(s.memory_mb for s in counted)), size.memory_mb),
    ]


def check_metadata_items(limits: Mapping[str, int], items: int) -> None:
    """A server of a project with ``limits`` may hold ``items`` metadata items, or
    QuotaExceeded (a limit per server, so nothing is counted or locked)."""
    if 0 <= limits[METADATA_ITEMS] < items:
        raise QuotaExceeded(
            f"Quota exceeded for {METADATA_ITEMS}: requested {items}, but the limit is "
            f"{limits[METADATA_ITEMS]}."
        )


def admit_resize(
    conn: Connection, cells: CellRegistry, owner: tuple[str, str], old: ServerSize, new: ServerSize
) -> None:
    """Room for a server of the project and user ``owner`` to grow from ``old`` to ``new`` (a
    resize), under the project's limits and the user's own, or QuotaExceeded; a smaller flavor
    always fits. The server counts with its old flavor until it runs with the new one, so two
    resizes of one project started together are each checked alone, as upstream's counting
    does."""
    project_id, user_id = owner
    grows = {CORES: new.vcpus - old.vcpus, RAM: new.memory_mb - old.memory_mb}
    if all(delta <= 0 for delta in grows.values()):
        return
    store.hold_project(conn, project_id)
    limits = project_limits(conn, project_id)
    own = store.user_limits(conn, project_id, user_id)
    for scope, scoped in ((None, limits), (user_id, {**limits, **own})):
        if all(scoped[name] < 0 for name in grows) or (scope is not None and not own):
            continue
        servers = list(servers_of(conn, cells, project_id, scope).values())
        usage = {CORES: sum(s.vcpus for s in servers), RAM: sum(s.memory_mb for s in servers)}
        wanted = {name: (Quota(scoped[name], usage[name]), delta) for name, delta in grows.items()}
        over = {name: want for name, want in wanted.items() if not want[0].fits(want[1])}
        if over:
            raise _exceeded(over)


def admit_server_group(conn: Connection, project_id: str, user_id: str) -> None:
    """One more server group for the project and its user (under the project's limit and the
    user's own), or QuotaExceeded; the caller creates it in the same transaction."""
    store.hold_project(conn, project_id)
    limit = project_limits(conn, project_id)[SERVER_GROUPS]
    quota = Quota(limit, store.count_server_groups(conn, project_id))
    if not quota.fits(1):
        raise _exceeded({SERVER_GROUPS: (quota, 1)})
    own = store.user_limits(conn, project_id, user_id).get(SERVER_GROUPS)
    if own is not None:
        quota = Quota(own, store.count_server_groups(conn, project_id, user_id))
        if not quota.fits(1):
            raise _exceeded({SERVER_GROUPS: (quota, 1)})


def admit_key_pair(conn: Connection, user_id: str, project_id: str) -> None:
    """One more key pair for the user, under their own limit in the project they act in (else
    the project's), or QuotaExceeded; the caller creates it in the same transaction."""
    store.hold_user(conn, user_id)
    limits = {**project_limits(conn, project_id), **store.user_limits(conn, project_id, user_id)}
    quota = Quota(limits[KEY_PAIRS], store.count_key_pairs(conn, user_id))
    if not quota.fits(1):
        raise _exceeded({KEY_PAIRS: (quota, 1)})


def _exceeded(over: Mapping[str, tuple[Quota, int]]) -> QuotaExceeded:
    """Upstream's message in spirit: every resource over, the first one's numbers."""
    first = next(iter(over))
    quota, requested = over[first]
    return QuotaExceeded(
        f"Quota exceeded for {', '.join(over)}: requested {requested}, but {quota.in_use} of "
        f"{quota.limit} {first} are already used."
    )
