"""QoS policies and their rules in the network database."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common.timeutils import utcnow
from berth.network.store import rbac
from berth.network.store.remembered import remembered
from berth.network.store.schema import networks, ports, qos_policies, qos_rules


def get_policy(conn: Connection, policy_id: str) -> RowMapping | None:
    query = sa.select(qos_policies).where(qos_policies.c.id == policy_id)
    return conn.execute(query).mappings().first()


def insert_policy(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(qos_policies.insert().values(revision_number=0, created_at=utcnow(), **values))


def list_policies(conn: Connection, visible_to: str | None) -> list[RowMapping]:
    """Policies a project owns or is granted through RBAC (every policy when ``visible_to`` is
    None)."""
    query = sa.select(qos_policies)
    if visible_to is not None:
        granted = rbac.granted_to("qos_policy", "access_as_shared", visible_to)
        query = query.where(
            sa.or_(qos_policies.c.project_id == visible_to, qos_policies.c.id.in_(granted))
        )
    return list(conn.execute(query.order_by(qos_policies.c.id)).mappings())


def update_policy(conn: Connection, policy_id: str, values: Mapping[str, Any]) -> None:
    """Change a policy (or, with no values, only mark it changed: a rule of it changed)."""
    conn.execute(
        qos_policies.update()
        .where(qos_policies.c.id == policy_id)
        .values(updated_at=utcnow(), revision_number=qos_policies.c.revision_number + 1, **values)
    )


def delete_policy(conn: Connection, policy_id: str) -> None:
    conn.execute(qos_rules.delete().where(qos_rules.c.policy_id == policy_id))
    conn.execute(qos_policies.delete().where(qos_policies.c.id == policy_id))


def default_policy_of(conn: Connection, project_id: str) -> str | None:
    """The id of the project's default policy, if it has one."""
    query = sa.select(qos_policies.c.id).where(
        qos_policies.c.project_id == project_id, qos_policies.c.is_default
    )
    return conn.scalars(query.limit(1)).first()


def users_of(conn: Connection, policy_id: str) -> list[tuple[str, str, str]]:
    """(kind, id, project) of every network and port that names the policy itself."""
    query = sa.union_all(
        sa.select(sa.literal("network"), networks.c.id, networks.c.project_id).where(
            networks.c.qos_policy_id == policy_id
        ),
        sa.select(sa.literal("port"), ports.c.id, ports.c.project_id).where(
            ports.c.qos_policy_id == policy_id
        ),
    )
    return sorted((str(kind), str(id_), str(project)) for kind, id_, project in conn.execute(query))


def ports_using_policy(conn: Connection, policy_id: str) -> list[str]:
    """Ports the policy applies to: those naming it, and those naming no policy on a network that
    names it (a port's own policy wins over its network's). Sorted ids."""
    inherited = (
        sa.select(ports.c.id)
        .join(networks, networks.c.id == ports.c.network_id)
        .where(ports.c.qos_policy_id.is_(None), networks.c.qos_policy_id == policy_id)
    )
    direct = sa.select(ports.c.id).where(ports.c.qos_policy_id == policy_id)
    return sorted(str(port_id) for port_id in conn.scalars(sa.union(direct, inherited)))


def insert_rule(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(qos_rules.insert().values(**values))


def get_rule(conn: Connection, rule_id: str) -> RowMapping | None:
    return conn.execute(sa.select(qos_rules).where(qos_rules.c.id == rule_id)).mappings().first()


# Built once: every port request with a policy in effect reads it (see ``store.ports``).
_RULES_OF = (
    sa.select(qos_rules)
    .where(qos_rules.c.policy_id.in_(sa.bindparam("policy_ids", expanding=True)))
    .order_by(qos_rules.c.rule_type, qos_rules.c.direction, qos_rules.c.id)
)


@remembered
def rules_of_policies(
    conn: Connection, policy_ids: Iterable[str], rule_type: str | None = None
) -> dict[str, list[RowMapping]]:
    """Each policy's rules, by type then direction (only those of ``rule_type`` when given)."""
    wanted = list(policy_ids)
    if not wanted:
        # A port without a policy in effect, its own or its network's.
        return {}
    query = _RULES_OF if rule_type is None else _RULES_OF.where(qos_rules.c.rule_type == rule_type)
    found: dict[str, list[RowMapping]] = {}
    for row in conn.execute(query, {"policy_ids": wanted}).mappings():
        found.setdefault(row["policy_id"], []).append(row)
    return found


def update_rule(conn: Connection, rule_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(qos_rules.update().where(qos_rules.c.id == rule_id).values(**values))


def delete_rule(conn: Connection, rule_id: str) -> None:
    conn.execute(qos_rules.delete().where(qos_rules.c.id == rule_id))
