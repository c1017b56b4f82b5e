"""Instance usage audits: each compute host counts, once per audit period
(:mod:`berth.compute.audit_periods`), the servers it ran in the period before (upstream's
``instance_usage_audit`` task), and the API (``os-instance_usage_audit_log``) sums up what every
host recorded for a period.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Final

from berth.compute import hosts
from berth.compute.audit_periods import Period
from berth.compute.cells import CellRegistry
from berth.compute.db import task_log

TASK: Final = "instance_usage_audit"
RUNNING: Final = "RUNNING"
DONE: Final = "DONE"


def summary(
    period: Period, computes: Iterable[str], logs: Iterable[Mapping[str, Any]]
) -> dict[str, Any]:
    """What the API shows of one period: every compute host (disabled ones too: they may have
    servers), what each recorded, and the totals. ``logs`` are the period's task log rows."""
    known = set(computes)
    rows = list(logs)
    seen = {row["host"] for row in rows}
    done = {row["host"] for row in rows if row["state"] == DONE}
    running = {row["host"] for row in rows if row["state"] == RUNNING}
    errors = sum(int(row["errors"]) for row in rows)
    not_run = sorted(known - seen)
    how_many = "ALL" if len(done) == len(known) else f"{len(done)} of {len(known)}"
    return {
        "period_beginning": str(period.beginning),
        "period_ending": str(period.ending),
        "num_hosts": len(known),
        "num_hosts_done": len(done),
        "num_hosts_running": len(running),
        "num_hosts_not_run": len(not_run),
        "hosts_not_run": not_run,
        "total_instances": sum(int(row["task_items"]) for row in rows),
        "total_errors": errors,
        "overall_status": f"{how_many} hosts done. {errors} errors.",
        "log": {
            row["host"]: {
                "state": row["state"],
                "instances": int(row["task_items"]),
                "errors": int(row["errors"]),
                "message": row["message"],
            }
            for row in rows
        },
    }


def period_log(cells: CellRegistry, period: Period) -> dict[str, Any]:
    """:func:`summary` of the period, read from every cell with hosts."""
    computes = hosts.all_services(cells, binary=hosts.COMPUTE_BINARY)
    logs = []
    for cell in cells.cells(include_cell0=False):
        with cells.database(cell).read() as conn:
            logs += task_log.for_period(conn, TASK, (period.beginning, period.ending))
    return summary(period, (service.row["host"] for service in computes), logs)
