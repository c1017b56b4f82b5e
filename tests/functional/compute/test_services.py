"""/os-services: the services of every cell, their zones and states, and an operator disabling
and enabling a compute service, which puts COMPUTE_STATUS_DISABLED on its compute node's
provider in Placement and takes it off again (leaving the provider's other traits)."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from berth.compute.db import services
from tests.functional.compute.conftest import Hosts, version

LATEST = version(64)
DISABLED = "COMPUTE_STATUS_DISABLED"


def _traits(placement: httpx.Client, provider: str) -> set[str]:
    answer = placement.get(f"/resource_providers/{provider}/traits")
    assert answer.status_code == 200, answer.text
    return set(answer.json()["traits"])


def _by_host(client: httpx.Client, headers: dict[str, str] = LATEST) -> dict[str, Any]:
    answer = client.get("/v2.1/os-services", headers=headers)
    assert answer.status_code == 200, answer.text
    return {(s["host"], s["binary"]): s for s in answer.json()["services"]}


@pytest.fixture
def node(hosts: Hosts, placement: httpx.Client) -> str:
    """h1's compute node, whose provider has a trait of its own; a conductor beside it."""
    made = hosts.add("h1")
    assert made is not None
    generation = placement.get(f"/resource_providers/{made}").json()["generation"]
    placement.put(
        f"/resource_providers/{made}/traits",
        json={"traits": ["COMPUTE_NODE"], "resource_provider_generation": generation},
    )
    hosts.add("ctl", binary="nova-conductor", topic="conductor", node=False)
    return made


@pytest.mark.usefixtures("node")
def test_list(compute: httpx.Client, hosts: Hosts) -> None:
    hosts.add("h2", reported=False)
    found = _by_host(compute)
    compute_service = found[("h1", "nova-compute")]
    assert set(compute_service) == {
        "id", "binary", "host", "zone", "status", "state", "updated_at", "disabled_reason",
        "forced_down",
    }  # fmt: skip
    assert len(compute_service["id"]) == 36
    assert (compute_service["zone"], compute_service["status"], compute_service["state"]) == (
        "nova",
        "enabled",
        "up",
    )
    assert found[("ctl", "nova-conductor")]["zone"] == "internal"
    assert found[("h2", "nova-compute")]["state"] == "down"
    old = _by_host(compute, version(10))[("h1", "nova-compute")]
    assert isinstance(old["id"], int) and "forced_down" not in old
    narrowed = compute.get("/v2.1/os-services", params={"binary": "nova-conductor"})
    assert [s["host"] for s in narrowed.json()["services"]] == ["ctl"]
    on_h2 = compute.get("/v2.1/os-services", params={"host": "h2"})
    assert [s["binary"] for s in on_h2.json()["services"]] == ["nova-compute"]


@pytest.mark.usefixtures("node")
def test_zone_comes_from_the_aggregates(compute: httpx.Client) -> None:
    made = compute.post(
        "/v2.1/os-aggregates", json={"aggregate": {"name": "r", "availability_zone": "az1"}}
    ).json()["aggregate"]
    compute.post(f"/v2.1/os-aggregates/{made['id']}/action", json={"add_host": {"host": "h1"}})
    assert _by_host(compute)[("h1", "nova-compute")]["zone"] == "az1"


def test_disable_and_enable_mirror_the_trait(
    compute: httpx.Client, placement: httpx.Client, node: str
) -> None:
    service_id = _by_host(compute)[("h1", "nova-compute")]["id"]
    path = f"/v2.1/os-services/{service_id}"
    disabled = compute.put(
        path, json={"status": "disabled", "disabled_reason": "maintenance"}, headers=LATEST
    )
    assert disabled.status_code == 200, disabled.text
    view = disabled.json()["service"]
    assert (view["status"], view["disabled_reason"], view["id"]) == (
        "disabled",
        "maintenance",
        service_id,
    )
    assert _traits(placement, node) == {"COMPUTE_NODE", DISABLED}
    enabled = compute.put(path, json={"status": "enabled"}, headers=LATEST)
    assert enabled.json()["service"]["status"] == "enabled"
    assert enabled.json()["service"]["disabled_reason"] is None
    assert _traits(placement, node) == {"COMPUTE_NODE"}


def test_forced_down(compute: httpx.Client, node: str, placement: httpx.Client) -> None:
    service_id = _by_host(compute)[("h1", "nova-compute")]["id"]
    path = f"/v2.1/os-services/{service_id}"
    down = compute.put(path, json={"forced_down": True}, headers=LATEST)
    assert down.json()["service"]["state"] == "down"
    assert down.json()["service"]["forced_down"] is True
    # Forcing down is not disabling.
    assert DISABLED not in _traits(placement, node)


@pytest.mark.usefixtures("node")
@pytest.mark.parametrize(
    "body",
    [
        {},
        {"status": "paused"},
        {"status": "enabled", "disabled_reason": "why"},
        {"disabled_reason": "why"},
        {"status": "disabled", "disabled_reason": ""},
        {"forced_down": "yes"},
        {"status": "disabled", "colour": "red"},
    ],
)
def test_bad_updates_are_refused(compute: httpx.Client, body: dict[str, Any]) -> None:
    service_id = _by_host(compute)[("h1", "nova-compute")]["id"]
    answer = compute.put(f"/v2.1/os-services/{service_id}", json=body, headers=LATEST)
    assert answer.status_code == 400, answer.text


@pytest.mark.usefixtures("node")
def test_unknown_services(compute: httpx.Client) -> None:
    not_uuid = compute.put("/v2.1/os-services/disable", json={}, headers=LATEST)
    assert not_uuid.status_code == 400
    missing = compute.put(
        "/v2.1/os-services/6a3f8d7e-0000-4000-8000-000000000000",
        json={"status": "disabled"},
        headers=LATEST,
    )
    assert missing.status_code == 404


def test_legacy_actions_before_2_53(
    compute: httpx.Client, placement: httpx.Client, node: str, hosts: Hosts
) -> None:
    h1 = {"host": "h1", "binary": "nova-compute"}
    disabled = compute.put("/v2.1/os-services/disable", json=h1)
    assert disabled.status_code == 200, disabled.text
    assert disabled.json() == {"service": {**h1, "status": "disabled"}}
    assert DISABLED in _traits(placement, node)
    enabled = compute.put("/v2.1/os-services/enable", json=h1)
    assert enabled.json() == {"service": {**h1, "status": "enabled"}}
    assert DISABLED not in _traits(placement, node)
    reasoned = compute.put(
        "/v2.1/os-services/disable-log-reason", json={**h1, "disabled_reason": "disk"}
    )
    assert reasoned.json() == {"service": {**h1, "status": "disabled", "disabled_reason": "disk"}}
    assert compute.put("/v2.1/os-services/disable-log-reason", json=h1).status_code == 400
    forced = compute.put(
        "/v2.1/os-services/force-down", json={**h1, "forced_down": True}, headers=version(11)
    )
    assert forced.json() == {"service": {**h1, "forced_down": True}}
    too_old = compute.put(
        "/v2.1/os-services/force-down", json={**h1, "forced_down": True}, headers=version(10)
    )
    assert too_old.status_code == 404
    unknown = compute.put(
        "/v2.1/os-services/disable", json={"host": "hx", "binary": "nova-compute"}
    )
    assert unknown.status_code == 404
    assert compute.put("/v2.1/os-services/disable", json={"host": "h1"}).status_code == 400
    assert compute.put("/v2.1/os-services/reboot", json=h1).status_code == 404
    with hosts.cell_db.read() as conn:
        row = services.find(conn, "h1", "nova-compute")
    assert row is not None and row["disabled"] and row["forced_down"]


@pytest.mark.usefixtures("node")
def test_only_admins(alice: httpx.Client) -> None:
    assert alice.get("/v2.1/os-services").status_code == 403
    refused = alice.put("/v2.1/os-services/disable", json={"host": "h1", "binary": "nova-compute"})
    assert refused.status_code == 403
