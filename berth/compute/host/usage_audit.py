"""A compute host's usage audit (upstream's ``_instance_usage_audit`` periodic task): once per
audit period, count the servers this host ran in the last completed period and record it in
the cell's task log, where ``os-instance_usage_audit_log`` reads it.

Upstream also sends a usage notification per server, which can fail and count as an error, and
so writes its row RUNNING first and DONE after; Berth sends none, so an audit is one count,
recorded DONE with no errors in the transaction that counts.
"""

from __future__ import annotations

import datetime as dt
import time
from collections import Counter
from collections.abc import Sequence
from typing import Protocol

from berth.common.db import Database
from berth.compute import audit_periods, usage_audit
from berth.compute.db import instances, task_log


class Audited(Protocol):
    """What the audit needs of a host agent."""

    host: str
    db: Database
    audited_period: audit_periods.Period | None


def audit(agents: Sequence[Audited], spec: str, now: dt.datetime) -> list[str]:
    """Audit the last period of ``spec`` completed before ``now`` on each host that did not;
    the hosts that audited now. An agent remembers the period it audited, so a check costs
    nothing until the next period ends; agents that do not remember (after a restart) are
    checked in one read per cell database, and the hosts due are counted and recorded in one
    transaction per cell, however many hosts it has."""
    period = audit_periods.last_completed(spec, now)
    span = (period.beginning, period.ending)
    audited: list[str] = []
    by_db: dict[int, tuple[Database, list[Audited]]] = {}
    for agent in agents:
        if agent.audited_period != period:
            by_db.setdefault(id(agent.db), (agent.db, []))[1].append(agent)
    for db, due in by_db.values():
        started = time.monotonic()
        with db.write() as conn:
            done = {row["host"] for row in task_log.for_period(conn, usage_audit.TASK, span)}
            hosts = {agent.host for agent in due} - done
            ran = Counter(
                row["host"]
                for row in instances.up_between(conn, period.beginning, period.ending)
                if row["host"] in hosts
            )
            seconds = time.monotonic() - started
            outcomes = {
                host: {
                    "state": usage_audit.DONE,
                    "task_items": ran[host],
                    "errors": 0,
                    "message": f"Instance usage audit ran for host {host}, {ran[host]} instances "
                    f"in {seconds:.3f} seconds.",
                }
                for host in sorted(hosts)
            }
            if task_log.record_many(conn, usage_audit.TASK, span, outcomes):
                audited += outcomes
            else:  # another process recorded some of them meanwhile: the rest one by one
                audited += [
                    host
                    for host, outcome in outcomes.items()
                    if task_log.record(conn, usage_audit.TASK, host, span, outcome)
                ]
        for agent in due:
            agent.audited_period = period
    return audited
