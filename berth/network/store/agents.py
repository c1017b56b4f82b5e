"""The agents that report each host's networking, in the network database."""

from __future__ import annotations

import datetime as dt
from collections.abc import Collection, Mapping, Sequence
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.common import direct
from berth.network.model import Agent, AgentConfiguration, is_alive
from berth.network.store.schema import agents


def get_agent(conn: Connection, agent_id: str) -> RowMapping | None:
    return conn.execute(sa.select(agents).where(agents.c.id == agent_id)).mappings().first()


def find_agent(conn: Connection, agent_type: str, host: str) -> RowMapping | None:
    """The one agent of a type on a host (the store's unique key), if it has reported."""
    query = sa.select(agents).where(agents.c.agent_type == agent_type, agents.c.host == host)
    return conn.execute(query).mappings().first()


def list_agents(conn: Connection) -> list[RowMapping]:
    return list(conn.execute(sa.select(agents).order_by(agents.c.id)).mappings())


def insert_agent(conn: Connection, values: Mapping[str, Any]) -> None:
    conn.execute(agents.insert().values(**values))


def insert_agents(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Many agents in one statement."""
    if rows:
        conn.execute(agents.insert(), list(rows))


def update_agent(conn: Connection, agent_id: str, values: Mapping[str, Any]) -> None:
    conn.execute(agents.update().where(agents.c.id == agent_id).values(**values))


def delete_agent(conn: Connection, agent_id: str) -> None:
    conn.execute(agents.delete().where(agents.c.id == agent_id))


_ORDERED = sa.select(agents).order_by(agents.c.host, agents.c.agent_type)
# Built once: every binding reads its host's agents (see ``store.ports``); one host's without
# an expanding IN, which SQLAlchemy renders again at each run, and on the driver's cursor.
_OF_HOSTS = _ORDERED.where(agents.c.host.in_(sa.bindparam("hosts", expanding=True)))
_OF_HOST = _ORDERED.where(agents.c.host == sa.bindparam("host"))


def agent_models(
    conn: Connection, now: dt.datetime, down_time: int, hosts: Collection[str] | None = None
) -> list[Agent]:
    """The agents (of ``hosts``, or all) as the domain sees them: alive by their heartbeat."""
    rows: Any
    if hosts is None:
        rows = conn.execute(_ORDERED)
    elif len(hosts) == 1:
        (host,) = hosts
        rows = direct.execute(conn, _OF_HOST, {"host": host}).rows
    else:
        rows = conn.execute(_OF_HOSTS, {"hosts": list(hosts)})
    return [
        Agent(
            host=row[_HOST],
            agent_type=row[_TYPE],
            alive=is_alive(row[_HEARTBEAT], now, down_time),
            admin_state_up=row[_ADMIN_STATE_UP],
            configuration=AgentConfiguration.from_reported(row[_CONFIGURATIONS] or {}),
        )
        for row in rows
    ]


# Where each column an agent's model takes is in a row of ``_ORDERED`` and its narrowings.
_HOST, _TYPE, _HEARTBEAT, _ADMIN_STATE_UP, _CONFIGURATIONS = (
    list(_ORDERED.selected_columns).index(agents.c[name])
    for name in ("host", "agent_type", "heartbeat_at", "admin_state_up", "configurations")
)


def heartbeat(conn: Connection, agent_ids: Collection[str], now: dt.datetime) -> None:
    """Record that these agents are alive, in one statement (their state did not change)."""
    if agent_ids:
        conn.execute(
            agents.update().where(agents.c.id.in_(list(agent_ids))).values(heartbeat_at=now)
        )
