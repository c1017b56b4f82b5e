"""Security groups, their rules, each project's default group and each port's groups in the
network database."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping
from sqlalchemy.exc import IntegrityError

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.network.store.schema import (
    default_security_groups,
    port_security_groups,
    security_group_rules,
    security_groups,
)


def get(conn: Connection, group_id: str) -> RowMapping | None:
    query = sa.select(security_groups).where(security_groups.c.id == group_id)
    return conn.execute(query).mappings().first()


def list_groups(
    conn: Connection,
    owner: str | None,
    ids: Collection[str] | None = None,
    projects: Collection[str] | None = None,
) -> list[RowMapping]:
    """Groups of a project (every project's when ``owner`` is None), narrowed to ``ids`` and
    to ``projects`` when given."""
    query = sa.select(security_groups).order_by(security_groups.c.id)
    if owner is not None:
        query = query.where(security_groups.c.project_id == owner)
    if ids is not None:
        query = query.where(security_groups.c.id.in_(list(ids)))
    if projects is not None:
        query = query.where(security_groups.c.project_id.in_(list(projects)))
    return list(conn.execute(query).mappings())


def insert(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(security_groups.insert().values(revision_number=0, created_at=utcnow(), **values))


def update(conn: Connection, group_id: str, values: Mapping[str, Any]) -> None:
    """Change a group (with no values, only mark it changed: one of its rules changed)."""
    conn.execute(
        security_groups.update()
        .where(security_groups.c.id == group_id)
        .values(
            updated_at=utcnow(), revision_number=security_groups.c.revision_number + 1, **values
        )
    )


def delete(conn: Connection, group_id: str) -> None:
    """The group, its rules and the rules of other groups naming it (the database cascades)."""
    conn.execute(
        security_group_rules.delete().where(
            sa.or_(
                security_group_rules.c.security_group_id == group_id,
                security_group_rules.c.remote_group_id == group_id,
            )
        )
    )
    conn.execute(
        default_security_groups.delete().where(
            default_security_groups.c.security_group_id == group_id
        )
    )
    conn.execute(security_groups.delete().where(security_groups.c.id == group_id))


# Built once: every port create reads it (see ``store.ports``).
_DEFAULT_OF = sa.select(default_security_groups.c.security_group_id).where(
    default_security_groups.c.project_id == sa.bindparam("project_id")
)


def default_of(conn: Connection, project_id: str) -> str | None:
    """The id of the project's default group, if it has one yet."""
    return conn.scalars(_DEFAULT_OF, {"project_id": project_id}).first()


def default_ids(conn: Connection, group_ids: Collection[str]) -> set[str]:
    """Which of the groups are their projects' default groups."""
    query = sa.select(default_security_groups.c.security_group_id).where(
        default_security_groups.c.security_group_id.in_(list(group_ids))
    )
    return set(conn.scalars(query))


def claim_default(conn: Connection, project_id: str, group_id: str) -> bool:
    """Record the group as the project's default; False when another was recorded first."""
    try:
        with conn.begin_nested():
            conn.execute(
                default_security_groups.insert().values(
                    project_id=project_id, security_group_id=group_id
                )
            )
    except IntegrityError:
        return False
    return True


# -- rules ---------------------------------------------------------------------------------------


def get_rule(conn: Connection, rule_id: str) -> RowMapping | None:
    query = sa.select(security_group_rules).where(security_group_rules.c.id == rule_id)
    return conn.execute(query).mappings().first()


def insert_rule(conn: Connection, values: Mapping[str, Any]) -> str | None:
    """Add a rule; when the group has one matching the same traffic, the id of that one."""
    try:
        with conn.begin_nested():
            conn.execute(
                security_group_rules.insert().values(
                    revision_number=0, created_at=utcnow(), **values
                )
            )
    except IntegrityError:
        r = security_group_rules.c
        query = sa.select(r.id).where(
            r.security_group_id == values["security_group_id"],
            r.fingerprint == values["fingerprint"],
        )
        return conn.scalars(query).first() or ""
    return None


def rules_of(conn: Connection, group_ids: Iterable[str]) -> dict[str, list[RowMapping]]:
    """Each group's rules, in creation order."""
    r = security_group_rules.c
    query = (
        sa.select(security_group_rules)
        .where(r.security_group_id.in_(list(group_ids)))
        .order_by(r.created_at, r.id)
    )
    found: dict[str, list[RowMapping]] = {}
    for row in conn.execute(query).mappings():
        found.setdefault(row["security_group_id"], []).append(row)
    return found


def list_rules(conn: Connection, owners: str | None) -> list[RowMapping]:
    """Rules of a project's groups and the project's own rules (every rule when ``owners`` is
    None)."""
    r = security_group_rules.c
    query = sa.select(security_group_rules).order_by(r.id)
    if owners is not None:
        theirs = sa.select(security_groups.c.id).where(security_groups.c.project_id == owners)
        query = query.where(sa.or_(r.project_id == owners, r.security_group_id.in_(theirs)))
    return list(conn.execute(query).mappings())


def delete_rule(conn: Connection, rule_id: str) -> None:
    conn.execute(security_group_rules.delete().where(security_group_rules.c.id == rule_id))


# -- ports ---------------------------------------------------------------------------------------


# Built once: every port request's answer reads it (see ``store.ports``).
_GROUPS_OF_PORTS = (
    sa.select(port_security_groups.c.port_id, port_security_groups.c.security_group_id)
    .where(port_security_groups.c.port_id.in_(sa.bindparam("port_ids", expanding=True)))
    .order_by(port_security_groups.c.port_id, port_security_groups.c.security_group_id)
)


# One port's (a binding's, a port's answer), without an expanding IN, on the driver's cursor.
_GROUPS_OF_PORT = (
    sa.select(port_security_groups.c.port_id, port_security_groups.c.security_group_id)
    .where(port_security_groups.c.port_id == sa.bindparam("port_id"))
    .order_by(port_security_groups.c.security_group_id)
)


def groups_of_ports(conn: Connection, port_ids: Collection[str]) -> dict[str, list[str]]:
    """Each port's group ids, sorted."""
    if len(port_ids) == 1:
        (one,) = port_ids
        rows: Any = direct.execute(conn, _GROUPS_OF_PORT, {"port_id": one}).rows
    else:
        rows = conn.execute(_GROUPS_OF_PORTS, {"port_ids": list(port_ids)})
    found: dict[str, list[str]] = {}
    for port_id, group_id in rows:
        found.setdefault(port_id, []).append(group_id)
    return found


def set_groups_of_port(conn: Connection, port_id: str, group_ids: Collection[str]) -> None:
    p = port_security_groups.c
    conn.execute(port_security_groups.delete().where(p.port_id == port_id))
    add_groups_of_port(conn, port_id, group_ids)


def add_groups_of_port(conn: Connection, port_id: str, group_ids: Collection[str]) -> None:
    """Put the port in groups it is not in (a new port is in none: nothing to delete first)."""
    if group_ids:
        conn.execute(
            port_security_groups.insert(),
            [{"port_id": port_id, "security_group_id": g} for g in sorted(set(group_ids))],
        )


_JOIN_DEFAULT = port_security_groups.insert().from_select(
    ["port_id", "security_group_id"],
    sa.select(
        sa.bindparam("new_port", type_=sa.String), default_security_groups.c.security_group_id
    ).where(default_security_groups.c.project_id == sa.bindparam("project_id")),
)
# Where the database returns what an INSERT wrote (SQLite, PostgreSQL, MariaDB): the group
# joined, which the port's answer says. Else SQLAlchemy keeps the row count only when asked to.
_JOIN_DEFAULT_RETURNING = _JOIN_DEFAULT.returning(port_security_groups.c.security_group_id)
_JOIN_DEFAULT_COUNTED = _JOIN_DEFAULT.execution_options(preserve_rowcount=True)


def join_default_group(conn: Connection, port_id: str, project_id: str) -> list[str] | None:
    """Put a new port in its project's default group: the group joined ([] when the project
    has none yet), or None when it joined it on a database that does not say which."""
    values = {"new_port": port_id, "project_id": project_id}
    if conn.dialect.insert_returning:
        return [group for (group,) in direct.execute(conn, _JOIN_DEFAULT_RETURNING, values).rows]
    return [] if not conn.execute(_JOIN_DEFAULT_COUNTED, values).rowcount else None


def ports_in(conn: Connection, group_id: str) -> list[str]:
    """The ports that are in the group, sorted."""
    p = port_security_groups.c
    query = sa.select(p.port_id).where(p.security_group_id == group_id).order_by(p.port_id)
    return list(conn.scalars(query))
