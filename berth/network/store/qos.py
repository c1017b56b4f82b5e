"""QoS policies and their rules in the network database."""

from __future__ import annotations

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.network.store.schema import qos_policies


def get_policy(conn: Connection, policy_id: str) -> RowMapping | None:
    query = sa.select(qos_policies).where(qos_policies.c.id == policy_id)
    return conn.execute(query).mappings().first()
