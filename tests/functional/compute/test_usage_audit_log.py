"""os-instance_usage_audit_log: compute hosts' usage audits, recorded by the hosts' periodic
task in their cell, summed up by the API for a period; admins only."""

from __future__ import annotations

import datetime as dt
import uuid
from dataclasses import dataclass

import httpx
import pytest

from berth.common.db import Database
from berth.compute.audit_periods import Period
from berth.compute.db import instances
from berth.compute.host import usage_audit
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import ALICE, Hosts, client_for

NOW = dt.datetime(2026, 11, 26, 17, 6, 15)
FLAVOR = {"id": "1", "name": "tiny", "vcpus": 1, "memory_mb": 512, "root_gb": 1}


@dataclass
class Agent:
    host: str
    db: Database
    audited_period: Period | None = None


def _ran(cell_db: Database, host: str, launched: dt.datetime, ended: dt.datetime | None) -> None:
    with cell_db.write() as conn:
        instances.create(conn, {
            "uuid": str(uuid.uuid4()), "project_id": "p", "user_id": "u", "host": host,
            "vm_state": "active", "flavor": FLAVOR, "launched_at": launched,
            "terminated_at": ended, "deleted": ended is not None,
        })  # fmt: skip


@pytest.fixture
def admin(compute_service: ComputeService) -> httpx.Client:
    return client_for(compute_service)


def test_hosts_audit_once_a_period_and_the_api_sums_them_up(
    compute_service: ComputeService, cell_db: Database, hosts: Hosts, admin: httpx.Client
) -> None:
    for host in ("h1", "h2", "h3"):
        hosts.add(host)
    # In October on h1: one all month, one deleted in it; one launched in November does not count.
    _ran(cell_db, "h1", dt.datetime(2026, 9, 1), None)
    _ran(cell_db, "h1", dt.datetime(2026, 9, 1), dt.datetime(2026, 10, 3))
    _ran(cell_db, "h1", dt.datetime(2026, 11, 2), None)
    _ran(cell_db, "h1", dt.datetime(2026, 9, 1), dt.datetime(2026, 9, 30))
    h1, h2 = Agent("h1", cell_db), Agent("h2", cell_db)
    assert usage_audit.audit([h1], "month", NOW) == ["h1"]
    assert usage_audit.audit([h1], "month", NOW) == []  # once a period
    # A restarted agent too, in the same pass as one that has not audited yet.
    assert usage_audit.audit([Agent("h1", cell_db), h2], "month", NOW) == ["h2"]
    assert h2.audited_period is not None

    log = admin.get("/v2.1/os-instance_usage_audit_log/2026-11-26 17:06:15").json()
    shown = log["instance_usage_audit_log"]
    assert shown["period_beginning"] == "2026-10-01 00:00:00"
    assert shown["period_ending"] == "2026-11-01 00:00:00"
    assert (shown["num_hosts"], shown["num_hosts_done"], shown["num_hosts_running"]) == (3, 2, 0)
    assert (shown["num_hosts_not_run"], shown["hosts_not_run"]) == (1, ["h3"])
    assert (shown["total_instances"], shown["total_errors"]) == (2, 0)
    assert shown["overall_status"] == "2 of 3 hosts done. 0 errors."
    assert shown["log"]["h1"]["instances"] == 2 and shown["log"]["h1"]["state"] == "DONE"
    assert "ran for host h1, 2 instances" in shown["log"]["h1"]["message"]
    assert set(shown["log"]) == {"h1", "h2"}
    # With microseconds; an earlier time shows the period before, where nothing ran yet.
    before = admin.get("/v2.1/os-instance_usage_audit_log/2026-10-15 00:00:00.5").json()
    earlier = before["instance_usage_audit_log"]
    assert earlier["period_beginning"] == "2026-09-01 00:00:00" and earlier["log"] == {}
    assert earlier["overall_status"] == "0 of 3 hosts done. 0 errors."


def test_the_index_shows_the_last_completed_period(
    compute_service: ComputeService, hosts: Hosts, admin: httpx.Client
) -> None:
    hosts.add("h1")
    shown = admin.get("/v2.1/os-instance_usage_audit_log").json()["instance_usage_audit_logs"]
    today = dt.datetime.now(dt.UTC)
    assert shown["period_ending"] == f"{today.year}-{today.month:02d}-01 00:00:00"
    assert shown["hosts_not_run"] == ["h1"]


def test_admins_only_and_a_bad_time_is_a_400(
    compute_service: ComputeService, admin: httpx.Client
) -> None:
    with client_for(compute_service, ALICE) as alice:
        assert alice.get("/v2.1/os-instance_usage_audit_log").status_code == 403
        assert alice.get("/v2.1/os-instance_usage_audit_log/2026-11-26 17:06:15").status_code == 403
    answer = admin.get("/v2.1/os-instance_usage_audit_log/invalid_time")
    assert answer.status_code == 400
    assert "Invalid timestamp for date invalid_time" in answer.json()["badRequest"]["message"]
