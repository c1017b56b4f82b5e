"""Deferred delete, diagnostics and external events against the compute API alone: what each
hands to the host (typed), and what each refuses before that."""

from __future__ import annotations

from typing import Any

import pytest

from berth.common.timeutils import utcnow
from berth.compute.db import build_requests, instances
from berth.compute.db import cells as mappings
from berth.compute.service import ComputeService
from berth.config import ComputeSettings
from tests.functional.compute.conftest import client_for
from tests.functional.compute.test_conductors import Sent
from tests.functional.compute.test_server_actions import ACTION, OWNER, SERVER, _cell, _row, _server

EVENTS = "/v2.1/os-server-external-events"
SERVICE = {"x-auth-token": "neutron:service", "x-roles": "service"}
ADMIN = {"x-auth-token": "admin"}


@pytest.fixture
def sent(compute_service: ComputeService) -> Sent:
    found = Sent()
    compute_service.cell_rpc = found  # type: ignore[assignment]
    return found


def _deferred(service: ComputeService) -> None:
    service.settings = ComputeSettings(reclaim_instance_interval=60)


def _launched(service: ComputeService, **values: Any) -> None:
    with service.cells.database(_cell(service)).write() as conn:
        instances.update(conn, SERVER, {"launched_at": utcnow(), **values})


def test_a_delete_with_a_reclaim_interval_soft_deletes(
    compute_service: ComputeService, sent: Sent
) -> None:
    _deferred(compute_service)
    _server(compute_service)
    _launched(compute_service)
    with client_for(compute_service, OWNER) as owner:
        assert owner.delete(f"/v2.1/servers/{SERVER}").status_code == 204
        assert _row(compute_service)["task_state"] == "soft-deleting"
        # A delete under way: another is a 409.
        assert owner.delete(f"/v2.1/servers/{SERVER}").status_code == 409
    assert sent.messages == [("h1", "soft_delete_instance", (SERVER,))]


def test_a_server_that_never_ran_is_deleted_at_once(
    compute_service: ComputeService, sent: Sent
) -> None:
    _deferred(compute_service)
    _server(compute_service)  # never launched
    with client_for(compute_service, OWNER) as owner:
        assert owner.delete(f"/v2.1/servers/{SERVER}").status_code == 204
    assert sent.messages == [("h1", "terminate_instance", (SERVER,))]


def test_restore_is_admitted_against_the_quotas_again(
    compute_service: ComputeService, sent: Sent
) -> None:
    _server(compute_service)
    _launched(compute_service, vm_state="soft-delete", power_state=4)
    with client_for(compute_service, ADMIN) as admin:
        detail = admin.get("/v2.1/os-quota-sets/p/detail").json()["quota_set"]
        assert detail["instances"]["in_use"] == 0  # a soft-deleted server counts for nothing
        quota = {"quota_set": {"instances": 0}}
        assert admin.put("/v2.1/os-quota-sets/p", json=quota).status_code == 200
    with client_for(compute_service, OWNER) as owner:
        refused = owner.post(ACTION, json={"restore": None})
        assert refused.status_code == 403, refused.text
        with client_for(compute_service, ADMIN) as admin:
            admin.put("/v2.1/os-quota-sets/p", json={"quota_set": {"instances": 1}})
        assert owner.post(ACTION, json={"restore": None}).status_code == 202
    assert _row(compute_service)["task_state"] == "restoring"
    assert sent.messages == [("h1", "restore_instance", (SERVER,))]


def test_force_delete_of_a_soft_deleted_server(compute_service: ComputeService, sent: Sent) -> None:
    _deferred(compute_service)
    _server(compute_service)
    _launched(compute_service, vm_state="soft-delete")
    with client_for(compute_service, OWNER) as owner:
        assert owner.post(ACTION, json={"forceDelete": None}).status_code == 202
    assert sent.messages == [("h1", "terminate_instance", (SERVER,))]


def test_diagnostics_need_an_admin_and_a_host(compute_service: ComputeService, sent: Sent) -> None:
    _server(compute_service, vm_state="error", host=None)
    path = f"/v2.1/servers/{SERVER}/diagnostics"
    with client_for(compute_service, OWNER) as owner:
        assert owner.get(path).status_code == 403
    with client_for(compute_service, ADMIN) as admin:
        assert admin.get(path).status_code == 409
        assert (
            admin.get("/v2.1/servers/5e2b9f5e-0000-4000-8000-00000000dead/diagnostics").status_code
            == 404
        )


def test_each_event_gets_its_own_code(compute_service: ComputeService, sent: Sent) -> None:
    _server(compute_service)
    building = "5e2b9f5e-0000-4000-8000-000000000003"
    with compute_service.api_db.write() as conn:
        mappings.create_instance_mapping(conn, building, "p", "u")
        build_requests.create(conn, building, "p", "u", {"flavor": {}})
    events = [
        {"name": "network-changed", "server_uuid": SERVER, "tag": "port-1"},
        {"name": "network-vif-plugged", "server_uuid": building, "status": "completed"},
        {"name": "network-vif-deleted", "server_uuid": "5e2b9f5e-0000-4000-8000-00000000dead"},
    ]
    with client_for(compute_service, SERVICE) as network:
        answer = network.post(EVENTS, json={"events": events})
        assert answer.status_code == 207, answer.text
        assert [(e["code"], e["status"]) for e in answer.json()["events"]] == [
            (200, "completed"), (422, "failed"), (404, "failed"),
        ]  # fmt: skip
        assert network.post(EVENTS, json={"events": events[1:]}).status_code == 404
        bad = {"events": [{"name": "volume-extended", "server_uuid": SERVER}]}
        assert network.post(EVENTS, json=bad).status_code == 400  # a 2.51 name
        assert network.post(EVENTS, json={"events": []}).status_code == 400
    with client_for(compute_service, ADMIN) as admin:
        assert admin.post(EVENTS, json={"events": events[:1]}).status_code == 403
    assert sent.messages == [
        ("h1", "external_instance_event", (SERVER, "network-changed", "port-1"))
    ]
