"""Networks and their segments in the network database."""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common import direct
from berth.common.timeutils import utcnow
from berth.network.store import rbac
from berth.network.store.remembered import remembered
from berth.network.store.schema import networks, ports, qos_policies, segments, subnets

# A row by column name (SQLAlchemy's, or a dict where it was read on the driver's cursor).
Row = Mapping[str, Any]
# (kind, id, revision number) of rows whose every change bumps their revision.
Revisions = frozenset[tuple[str, str, int]]

# Built once, as a port request runs them (see ``store.ports``).
_BY_ID = sa.select(networks).where(networks.c.id == sa.bindparam("network_id"))
_BY_IDS = (
    sa.select(networks)
    .where(networks.c.id.in_(sa.bindparam("network_ids", expanding=True)))
    .order_by(networks.c.id)
)
_SEGMENTS = sa.select(segments).order_by(segments.c.network_id, segments.c.segment_index)
_SEGMENTS_OF = _SEGMENTS.where(
    segments.c.network_id.in_(sa.bindparam("network_ids", expanding=True))
)


def insert_network(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(networks.insert().values(revision_number=0, created_at=utcnow(), **values))


def get_network(conn: Connection, network_id: str) -> Row | None:
    # Remembered as ``list_networks`` of its one id, which a port's view asks again.
    found = list_networks(conn, None, [network_id])
    return found[0] if found else None


@remembered
def list_networks(
    conn: Connection, visible_to: str | None, ids: Collection[str] | None = None
) -> list[Row]:
    """Networks a project owns or that are shared with it, or external for it, through RBAC
    (every network when ``visible_to`` is None)."""
    if visible_to is None and ids is not None and len(ids) == 1:
        (network_id,) = ids
        return direct.mappings(conn, _BY_ID, {"network_id": network_id})  # type: ignore[return-value]
    if visible_to is None and ids is not None:
        # Ports' networks, read so by every port request.
        return list(conn.execute(_BY_IDS, {"network_ids": list(ids)}).mappings())
    query = sa.select(networks)
    if visible_to is not None:
        shared = rbac.granted_to("network", "access_as_shared", visible_to)
        external = rbac.granted_to("network", "access_as_external", visible_to)
        query = query.where(
            sa.or_(
                networks.c.project_id == visible_to,
                networks.c.id.in_(shared),
                networks.c.id.in_(external),
            )
        )
    if ids is not None:
        query = query.where(networks.c.id.in_(list(ids)))
    return list(conn.execute(query.order_by(networks.c.id)).mappings())


def update_network(conn: Connection, network_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(
        networks.update()
        .where(networks.c.id == network_id)
        .values(updated_at=utcnow(), revision_number=networks.c.revision_number + 1, **values)
    )


def delete_network(conn: Connection, network_id: str) -> None:
    conn.execute(networks.delete().where(networks.c.id == network_id))


def count_ports(conn: Connection, network_id: str) -> int:
    return int(conn.scalar(sa.select(sa.func.count()).where(ports.c.network_id == network_id)) or 0)


def port_projects(conn: Connection, network_id: str) -> set[str]:
    """The projects that have ports on the network."""
    query = sa.select(ports.c.project_id).where(ports.c.network_id == network_id).distinct()
    return {str(project) for project in conn.scalars(query)}


def insert_segment(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(segments.insert().values(revision_number=0, created_at=utcnow(), **values))


def get_segment(conn: Connection, segment_id: str) -> Row | None:
    return conn.execute(sa.select(segments).where(segments.c.id == segment_id)).mappings().first()


@remembered
def segments_of(conn: Connection, network_ids: Iterable[str] | None) -> dict[str, list[Row]]:
    """Each network's segments in creation order (every network's when ``network_ids`` is None)."""
    if network_ids is None:
        result = conn.execute(_SEGMENTS)
    else:
        result = conn.execute(_SEGMENTS_OF, {"network_ids": list(network_ids)})
    found: dict[str, list[Row]] = {}
    for row in result.mappings():
        found.setdefault(row["network_id"], []).append(row)
    return found


def update_segment(conn: Connection, segment_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(
        segments.update()
        .where(segments.c.id == segment_id)
        .values(updated_at=utcnow(), revision_number=segments.c.revision_number + 1, **values)
    )


def delete_segment(conn: Connection, segment_id: str) -> None:
    conn.execute(segments.delete().where(segments.c.id == segment_id))


def taken_keys(conn: Connection, prefix: str) -> set[str]:
    """Allocation keys in use that start with ``prefix`` (e.g. every VXLAN VNI)."""
    query = sa.select(segments.c.allocation_key).where(segments.c.allocation_key.startswith(prefix))
    return set(conn.scalars(query))


@dataclass(slots=True)
class SubnetSummary:
    """What a network's view says of its subnets: their ids, and whether any is on a segment
    (the network is routed, not one L2 domain)."""

    ids: list[str] = field(default_factory=list)
    routed: bool = False


@remembered
def subnet_summaries(conn: Connection, network_ids: Iterable[str]) -> dict[str, SubnetSummary]:
    """Each network's subnets in creation order (networks without one are absent), in one
    statement."""
    found: dict[str, SubnetSummary] = {}
    for network_id, subnet_id, segment_id in conn.execute(
        _SUBNETS_OF, {"network_ids": list(network_ids)}
    ):
        summary = found.setdefault(network_id, SubnetSummary())
        summary.ids.append(subnet_id)
        summary.routed = summary.routed or segment_id is not None
    return found


_SUBNETS_OF = (
    sa.select(subnets.c.network_id, subnets.c.id, subnets.c.segment_id)
    .where(subnets.c.network_id.in_(sa.bindparam("network_ids", expanding=True)))
    .order_by(subnets.c.created_at, subnets.c.id)
)


def subnets_on_segment(conn: Connection, segment_id: str) -> int:
    query = sa.select(sa.func.count()).where(subnets.c.segment_id == segment_id)
    return int(conn.scalar(query) or 0)


def _revisions(one: bool) -> sa.CompoundSelect:
    """``one``: of one network and no named policy (a port's create or binding, mostly) with
    plain parameters; else with expanding ones, which SQLAlchemy renders again at each run."""

    def of_networks(column: sa.ColumnElement[str]) -> sa.ColumnElement[bool]:
        if one:
            return column == sa.bindparam("network_id")
        return column.in_(sa.bindparam("network_ids", expanding=True))

    own_policies = sa.select(networks.c.qos_policy_id).where(of_networks(networks.c.id))
    policies = qos_policies.c.id.in_(own_policies)
    if not one:
        policies = sa.or_(
            qos_policies.c.id.in_(sa.bindparam("policy_ids", expanding=True)), policies
        )
    return sa.union_all(
        sa.select(sa.literal("network"), networks.c.id, networks.c.revision_number).where(
            of_networks(networks.c.id)
        ),
        sa.select(sa.literal("segment"), segments.c.id, segments.c.revision_number).where(
            of_networks(segments.c.network_id)
        ),
        sa.select(sa.literal("subnet"), subnets.c.id, subnets.c.revision_number).where(
            of_networks(subnets.c.network_id)
        ),
        sa.select(
            sa.literal("qos_policy"), qos_policies.c.id, qos_policies.c.revision_number
        ).where(policies),
    )


# Built once: a port write checks it under the write lock (``berth.network.read_ahead``), and
# building it is most of its cost. One network's runs on the driver's cursor (every port
# request and network show runs it).
_REVISIONS_OF_ONE = _revisions(one=True)
_REVISIONS = _revisions(one=False)


def revisions(
    conn: Connection, network_ids: Collection[str], policy_ids: Collection[str]
) -> Revisions:
    """In one statement, the revisions of the networks, of their segments and subnets, and of
    the QoS policies: those named and the networks' own. Any change to one of them, to a
    network's RBAC entries (they mark the network changed) or to a policy's rules (they mark
    the policy changed) changes the answer: a revision grows, a row comes or goes."""
    if len(network_ids) == 1 and not policy_ids:
        (network_id,) = network_ids
        found: Any = direct.execute(conn, _REVISIONS_OF_ONE, {"network_id": network_id}).rows
    else:
        params = {"network_ids": list(network_ids), "policy_ids": list(policy_ids)}
        found = conn.execute(_REVISIONS, params).all()
    return frozenset((str(kind), str(id_), int(rev)) for kind, id_, rev in found)
