"""/os-simple-tenant-usage: hours and flavor hours of servers cut to the period asked, deleted
servers too, never-launched ones not; the list (admin) and one project's; 2.40's pages."""

from __future__ import annotations

import datetime as dt
import uuid
from typing import Any

import httpx
import pytest

from berth.compute.db import instances
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import client_for, version

ADMIN = {"x-auth-token": "admin"}
MEMBER = {"x-auth-token": "alice:p1", "x-roles": "member,reader"}
OTHER = {"x-auth-token": "bob:p2", "x-roles": "member,reader"}
DAY = dt.datetime(2026, 11, 20)
SMALL = {"name": "m1.small", "vcpus": 2, "memory_mb": 2048, "root_gb": 20, "ephemeral_gb": 5}
PERIOD = "start=2026-11-20T00:00:00&end=2026-11-21T00:00:00"


def _server(
    service: ComputeService,
    project: str,
    launched: dt.datetime | None,
    terminated: dt.datetime | None = None,
    name: str = "vm",
) -> str:
    """An Instance in cell1 launched (and deleted) at these times."""
    cell = service.cells.cells(include_cell0=False)[0]
    server = str(uuid.uuid4())
    with service.cells.database(cell).write() as conn:
        instances.create(
            conn,
            {
                "uuid": server,
                "project_id": project,
                "user_id": "alice",
                "display_name": name,
                "vm_state": "active" if launched else "error",
                "flavor": SMALL,
                "launched_at": launched,
                "created_at": launched or DAY,
            },
        )
        if terminated is not None:
            instances.mark_deleted(conn, server, terminated)
    return server


@pytest.fixture
def servers(compute_service: ComputeService) -> dict[str, str]:
    """In p1: one up all day, one deleted at 06:00, one launched the day before and deleted at
    03:00 the day after, one never launched, one deleted before the day; in p2: one up from
    12:00."""
    hours = dt.timedelta(hours=1)
    return {
        "all_day": _server(compute_service, "p1", DAY - 48 * hours, name="all-day"),
        "morning": _server(compute_service, "p1", DAY, DAY + 6 * hours, name="morning"),
        "across": _server(compute_service, "p1", DAY - 2 * hours, DAY + 27 * hours),
        "never": _server(compute_service, "p1", None),
        "before": _server(compute_service, "p1", DAY - 10 * hours, DAY - 5 * hours),
        "p2": _server(compute_service, "p2", DAY + 12 * hours),
    }


def _show(client: httpx.Client, project: str, query: str = PERIOD, **headers: str) -> Any:
    answer = client.get(f"/v2.1/os-simple-tenant-usage/{project}?{query}", headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()


def test_a_projects_usage(compute_service: ComputeService, servers: dict[str, str]) -> None:
    with client_for(compute_service, MEMBER) as member:
        usage = _show(member, "p1")["tenant_usage"]
    assert {key: usage[key] for key in usage if key != "server_usages"} == {
        "tenant_id": "p1",
        "start": "2026-11-20T00:00:00",
        "stop": "2026-11-21T00:00:00",
        "total_hours": 24.0 + 6.0 + 24.0,
        "total_vcpus_usage": 2 * 54.0,
        "total_memory_mb_usage": 2048 * 54.0,
        "total_local_gb_usage": 25 * 54.0,
    }
    by_id = {server["instance_id"]: server for server in usage["server_usages"]}
    assert set(by_id) == {servers["all_day"], servers["morning"], servers["across"]}
    assert by_id[servers["morning"]] == {
        "instance_id": servers["morning"],
        "name": "morning",
        "tenant_id": "p1",
        "flavor": "m1.small",
        "vcpus": 2,
        "memory_mb": 2048,
        "local_gb": 25,
        "hours": 6.0,
        "started_at": "2026-11-20T00:00:00",
        "ended_at": "2026-11-20T06:00:00",
        "state": "terminated",
        "uptime": 6 * 3600,
    }
    running = by_id[servers["all_day"]]
    assert running["state"] == "active" and running["ended_at"] is None
    assert running["uptime"] > 48 * 3600


def test_the_list_is_an_admins_and_detailed_on_request(
    compute_service: ComputeService, servers: dict[str, str]
) -> None:
    with client_for(compute_service, ADMIN) as admin:
        listed = admin.get(f"/v2.1/os-simple-tenant-usage?{PERIOD}").json()["tenant_usages"]
        # "1" as upstream reads it, or "True" as openstacksdk sends it.
        detailed = admin.get(f"/v2.1/os-simple-tenant-usage?{PERIOD}&detailed=True").json()
    assert {usage["tenant_id"]: usage["total_hours"] for usage in listed} == {
        "p1": 54.0,
        "p2": 12.0,
    }
    assert all("server_usages" not in usage for usage in listed)
    assert sum(len(usage["server_usages"]) for usage in detailed["tenant_usages"]) == 4
    # A trailing slash names a project with an empty id: none (as Nova's routes answer).
    with client_for(compute_service, ADMIN) as admin:
        assert admin.get(f"/v2.1/os-simple-tenant-usage/?{PERIOD}").status_code == 404
    with client_for(compute_service, MEMBER) as member:
        assert member.get(f"/v2.1/os-simple-tenant-usage?{PERIOD}").status_code == 403
        assert member.get(f"/v2.1/os-simple-tenant-usage/p2?{PERIOD}").status_code == 403


def test_an_empty_period_and_bad_times(
    compute_service: ComputeService, servers: dict[str, str]
) -> None:
    with client_for(compute_service, OTHER) as other:
        before = "start=2026-11-01T00:00:00&end=2026-11-02T00:00:00"
        assert _show(other, "p2", before) == {"tenant_usage": {}}
        # Times with a zone are read in UTC.
        zoned = "start=2026-11-20T13:00:00%2B01:00&end=2026-11-20T14:00:00Z"
        assert _show(other, "p2", zoned)["tenant_usage"]["total_hours"] == 2.0
        for query in ("start=yesterday", "start=2026-11-21T00:00:00&end=2026-11-20T00:00:00"):
            answer = other.get(f"/v2.1/os-simple-tenant-usage/p2?{query}")
            assert answer.status_code == 400, answer.text


def test_pages_from_2_40(compute_service: ComputeService, servers: dict[str, str]) -> None:
    with client_for(compute_service, MEMBER) as member:
        first = _show(member, "p1", f"{PERIOD}&limit=2", **version(40))
        shown = [server["instance_id"] for server in first["tenant_usage"]["server_usages"]]
        assert len(shown) == 2
        (link,) = first["tenant_usage_links"]
        assert link["rel"] == "next" and f"marker={shown[-1]}" in link["href"]
        rest = _show(member, "p1", f"{PERIOD}&limit=2&marker={shown[-1]}", **version(40))
        assert len(rest["tenant_usage"]["server_usages"]) == 1
        assert "tenant_usage_links" not in rest
        # Before 2.40 limit means nothing.
        whole = _show(member, "p1", f"{PERIOD}&limit=2", **version(39))
        assert len(whole["tenant_usage"]["server_usages"]) == 3
