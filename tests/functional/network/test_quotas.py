"""/v2.0/quotas (quotas and quota_details): who reads and changes them, the defaults from the
settings, and their enforcement on network, subnet and port creates, with concurrent creates
that must never pass a limit together (on every database the suite has)."""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.config import NetworkSettings
from berth.network.service import NetworkService
from tests.conftest import network_client_for
from tests.functional.network.calls import neutron_error

DEFAULTS = {
    "network": 100,
    "subnet": 100,
    "port": 500,
    "rbac_policy": 10,
    "security_group": 10,
    "security_group_rule": 100,
    "router": 10,
    "floatingip": 50,
}


def _client(service: NetworkService, token: str, roles: str = "member,reader") -> httpx.Client:
    client = network_client_for(service, token)
    # Roles given explicitly, so the rules mean the same with or without the new defaults.
    client.headers["x-roles"] = roles
    return client


@pytest.fixture
def admin(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service) as client:
        yield client


@pytest.fixture
def alice(network_service: NetworkService) -> Iterator[httpx.Client]:
    with _client(network_service, "alice:p1") as client:
        yield client


def _set(admin: httpx.Client, project: str, **limits: Any) -> Any:
    answer = admin.put(f"/v2.0/quotas/{project}", json={"quota": limits})
    assert answer.status_code == 200, answer.text
    return answer.json()["quota"]


def _network(client: httpx.Client, **body: Any) -> httpx.Response:
    return client.post("/v2.0/networks", json={"network": {"name": "n", **body}})


def test_a_project_reads_its_own_quotas(
    network_service: NetworkService, alice: httpx.Client
) -> None:
    assert alice.get("/v2.0/quotas/p1").json() == {"quota": DEFAULTS}
    assert alice.get("/v2.0/quotas/p1/default").json() == {"quota": DEFAULTS}
    details = alice.get("/v2.0/quotas/p1/details").json()["quota"]
    assert details["port"] == {"limit": 500, "used": 0, "reserved": 0}
    for path in ("/v2.0/quotas/p2", "/v2.0/quotas/p2/details", "/v2.0/quotas/p2/default"):
        neutron_error(alice.get(path), 403, "NotAuthorized")
    neutron_error(alice.get("/v2.0/quotas"), 403, "NotAuthorized")
    neutron_error(
        alice.put("/v2.0/quotas/p1", json={"quota": {"port": 1000}}), 403, "NotAuthorized"
    )
    neutron_error(alice.delete("/v2.0/quotas/p1"), 403, "NotAuthorized")
    extensions = {e["alias"] for e in alice.get("/v2.0/extensions").json()["extensions"]}
    assert {"quotas", "quota_details"} <= extensions


def test_an_admin_sets_lists_and_deletes(admin: httpx.Client, alice: httpx.Client) -> None:
    assert _set(admin, "p1", network=5, port="-1") == {**DEFAULTS, "network": 5, "port": -1}
    _set(admin, "p2", subnet=7)
    assert alice.get("/v2.0/quotas/p1").json()["quota"]["network"] == 5
    listed = admin.get("/v2.0/quotas").json()["quotas"]
    assert sorted(listed, key=lambda q: q["project_id"]) == [
        {"project_id": "p1", "tenant_id": "p1", **DEFAULTS, "network": 5, "port": -1},
        {"project_id": "p2", "tenant_id": "p2", **DEFAULTS, "subnet": 7},
    ]
    assert admin.delete("/v2.0/quotas/p1").status_code == 204
    assert alice.get("/v2.0/quotas/p1").json() == {"quota": DEFAULTS}
    assert [q["project_id"] for q in admin.get("/v2.0/quotas").json()["quotas"]] == ["p2"]


@pytest.mark.parametrize(
    "body",
    [
        {"subnetpool": 5},
        {"port": -2},
        {"port": 2**31},
        {"port": "many"},
        {"port": None},
        {"port": True},
    ],
)
def test_an_update_refuses(admin: httpx.Client, body: dict[str, Any]) -> None:
    answer = admin.put("/v2.0/quotas/p1", json={"quota": body})
    assert answer.status_code == 400, answer.text
    assert admin.get("/v2.0/quotas/p1").json() == {"quota": DEFAULTS}


def test_check_limit_refuses_a_limit_below_what_is_used(
    admin: httpx.Client, alice: httpx.Client
) -> None:
    for _ in range(3):
        assert _network(alice).status_code == 201
    below = admin.put("/v2.0/quotas/p1", json={"quota": {"network": 2, "check_limit": True}})
    assert "already used (3)" in neutron_error(below, 400, "BadRequest")
    # What the CLI sends with --force, and without either flag: set as asked.
    assert _set(admin, "p1", network=2, force=True)["network"] == 2
    assert _set(admin, "p1", network=1)["network"] == 1
    assert admin.get("/v2.0/quotas/p1/details").json()["quota"]["network"]["used"] == 3


def test_creates_over_quota_are_refused(admin: httpx.Client, alice: httpx.Client) -> None:
    _set(admin, "p1", network=1, subnet=1, port=2, rbac_policy=1)
    network = _network(alice).json()["network"]["id"]
    message = neutron_error(_network(alice), 409, "OverQuota")
    assert (
        message
        == "Quota exceeded for resources: ['network']: the project's limit is 1 and it has 1."
    )
    subnet = {"network_id": network, "ip_version": 4, "cidr": "10.0.0.0/24"}
    assert alice.post("/v2.0/subnets", json={"subnet": subnet}).status_code == 201
    again = {**subnet, "cidr": "10.0.1.0/24"}
    neutron_error(alice.post("/v2.0/subnets", json={"subnet": again}), 409, "OverQuota")
    for _ in range(2):
        assert alice.post("/v2.0/ports", json={"port": {"network_id": network}}).status_code == 201
    neutron_error(
        alice.post("/v2.0/ports", json={"port": {"network_id": network}}), 409, "OverQuota"
    )
    # A refused create leaves nothing behind, and an admin's for the project counts against it.
    assert len(alice.get("/v2.0/ports").json()["ports"]) == 2
    made_for = {"network_id": network, "project_id": "p1"}
    neutron_error(admin.post("/v2.0/ports", json={"port": made_for}), 409, "OverQuota")
    assert admin.post("/v2.0/ports", json={"port": {"network_id": network}}).status_code == 201
    grant = {"object_type": "network", "object_id": network, "action": "access_as_shared"}
    shared = alice.post(
        "/v2.0/rbac-policies", json={"rbac_policy": {**grant, "target_tenant": "p2"}}
    )
    assert shared.status_code == 201, shared.text
    again = alice.post(
        "/v2.0/rbac-policies", json={"rbac_policy": {**grant, "target_tenant": "p3"}}
    )
    assert "['rbac_policy']" in neutron_error(again, 409, "OverQuota")
    details = alice.get("/v2.0/quotas/p1/details").json()["quota"]
    assert {name: used["used"] for name, used in details.items()} == {
        "network": 1,
        "subnet": 1,
        "port": 2,
        "rbac_policy": 1,
        # The project's default security group, made with its first port, and its rules.
        "security_group": 1,
        "security_group_rule": 4,
        "router": 0,
        "floatingip": 0,
    }


def test_defaults_come_from_the_settings(network_db: Database) -> None:
    service = NetworkService(
        settings=NetworkSettings(quota_network=1, quota_port=-1), db=network_db
    )
    with _client(service, "alice:p1") as alice:
        assert alice.get("/v2.0/quotas/p1").json()["quota"] == {
            **DEFAULTS,
            "network": 1,
            "port": -1,
        }
        assert _network(alice).status_code == 201
        neutron_error(_network(alice), 409, "OverQuota")


def _race(
    service: NetworkService,
    token: str,
    attempts: int,
    send: Callable[[httpx.Client], httpx.Response],
) -> list[int]:
    """``attempts`` threads, each with its own client, sending at the same moment."""
    start = threading.Barrier(attempts)
    statuses: list[int] = []

    def one() -> None:
        with _client(service, token) as client:
            start.wait()
            statuses.append(send(client).status_code)

    threads = [threading.Thread(target=one) for _ in range(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return sorted(statuses)


def test_concurrent_creates_never_pass_the_quota_together(
    network_service: NetworkService, admin: httpx.Client
) -> None:
    network = _network(admin, shared=True).json()["network"]["id"]

    def port(client: httpx.Client) -> httpx.Response:
        return client.post("/v2.0/ports", json={"port": {"network_id": network}})

    _set(admin, "p3", port=4)
    assert _race(network_service, "carol:p3", 10, port) == [201] * 4 + [409] * 6
    assert admin.get("/v2.0/quotas/p3/details").json()["quota"]["port"]["used"] == 4
    # A project never seen before, under a default of 3: the racers make its lock row.
    three = NetworkService(settings=NetworkSettings(quota_port=3), db=network_service.db)
    assert _race(three, "dave:p4", 8, port) == [201] * 3 + [409] * 5
