"""The task log of a cell's compute hosts: one row per periodic task, host and period
(``cell_schema.task_log``), written by the host that ran the task."""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping

import sqlalchemy as sa
from sqlalchemy.engine import Connection, RowMapping

from berth.compute.db._tables import try_insert
from berth.compute.db.cell_schema import task_log


def record(
    conn: Connection,
    task: str,
    host: str,
    period: tuple[dt.datetime, dt.datetime],
    outcome: Mapping[str, object],
) -> bool:
    """Record the host's task for the period (``outcome``: state, task_items, errors, message);
    False when it was recorded before (the task ran already)."""
    beginning, ending = period
    return try_insert(
        conn,
        task_log.insert().values(
            task_name=task, host=host, period_beginning=beginning, period_ending=ending,
            **outcome,
        ),
    )  # fmt: skip


def record_many(
    conn: Connection,
    task: str,
    period: tuple[dt.datetime, dt.datetime],
    outcomes: Mapping[str, Mapping[str, object]],
) -> bool:
    """``record`` for several hosts (``outcomes`` by host), in one statement; False, with
    nothing written, when one of them was recorded meanwhile."""
    if not outcomes:
        return True
    beginning, ending = period
    rows = [
        {"task_name": task, "host": host, "period_beginning": beginning,
         "period_ending": ending, **outcome}
        for host, outcome in outcomes.items()
    ]  # fmt: skip
    return try_insert(conn, task_log.insert(), rows)


def for_period(
    conn: Connection, task: str, period: tuple[dt.datetime, dt.datetime]
) -> list[RowMapping]:
    beginning, ending = period
    query = (
        sa.select(task_log)
        .where(
            task_log.c.task_name == task,
            task_log.c.period_beginning == beginning,
            task_log.c.period_ending == ending,
        )
        .order_by(task_log.c.host)
    )
    return list(conn.execute(query).mappings())
