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
from typing import Protocol

from berth.common.db import Database
from berth.compute import audit_periods, usage_audit
from berth.compute.db import instances, task_log


class Audited(Protocol):
    """What the audit needs of a host agent."""

    host: str
    db: Database
    audited_period: audit_periods.Period | None


def audit(agent: Audited, spec: str, now: dt.datetime) -> bool:
    """Audit the last period of ``spec`` completed before ``now`` unless this host did; whether
    it ran now. The agent remembers the period it audited, so a check costs nothing until the
    next period ends."""
    period = audit_periods.last_completed(spec, now)
    if agent.audited_period == period:
        return False
    started = time.monotonic()
    with agent.db.write() as conn:
        ran = len(instances.up_between(conn, period.beginning, period.ending, host=agent.host))
        seconds = time.monotonic() - started
        recorded = task_log.record(
            conn,
            usage_audit.TASK,
            agent.host,
            (period.beginning, period.ending),
            {
                "state": usage_audit.DONE,
                "task_items": ran,
                "errors": 0,
                "message": f"Instance usage audit ran for host {agent.host}, {ran} instances "
                f"in {seconds:.3f} seconds.",
            },
        )
    agent.audited_period = period
    return recorded
