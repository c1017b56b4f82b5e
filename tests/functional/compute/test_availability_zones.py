"""/os-availability-zone: the zones of the aggregates and the default zone, their state, and
(admins) their hosts and services."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.compute.conftest import Hosts, version


def _zones(answer: httpx.Response) -> dict[str, Any]:
    assert answer.status_code == 200, answer.text
    return {zone["zoneName"]: zone for zone in answer.json()["availabilityZoneInfo"]}


@pytest.fixture
def az1(compute: httpx.Client, hosts: Hosts) -> int:
    """h1 in the default zone, h2 in az1, a conductor on ctl."""
    hosts.add("h1")
    hosts.add("h2")
    hosts.add("ctl", binary="nova-conductor", topic="conductor", node=False)
    made = compute.post(
        "/v2.1/os-aggregates", json={"aggregate": {"name": "r", "availability_zone": "az1"}}
    ).json()["aggregate"]
    compute.post(f"/v2.1/os-aggregates/{made['id']}/action", json={"add_host": {"host": "h2"}})
    return int(made["id"])


@pytest.mark.usefixtures("az1")
def test_everyone_lists_the_zones(alice: httpx.Client) -> None:
    zones = _zones(alice.get("/v2.1/os-availability-zone"))
    assert zones == {
        "nova": {"zoneName": "nova", "zoneState": {"available": True}, "hosts": None},
        "az1": {"zoneName": "az1", "zoneState": {"available": True}, "hosts": None},
    }


def test_a_zone_without_hosts_is_listed(compute: httpx.Client) -> None:
    compute.post("/v2.1/os-aggregates", json={"aggregate": {"name": "e", "availability_zone": "z"}})
    assert set(_zones(compute.get("/v2.1/os-availability-zone"))) == {"nova", "z"}


@pytest.mark.usefixtures("az1")
def test_detail_gives_hosts_and_services(compute: httpx.Client, alice: httpx.Client) -> None:
    zones = _zones(compute.get("/v2.1/os-availability-zone/detail"))
    assert set(zones) == {"nova", "az1", "internal"}
    h1 = zones["nova"]["hosts"]["h1"]["nova-compute"]
    assert (h1["available"], h1["active"]) == (True, True) and h1["updated_at"]
    assert set(zones["az1"]["hosts"]) == {"h2"}
    assert set(zones["internal"]["hosts"]["ctl"]) == {"nova-conductor"}
    assert alice.get("/v2.1/os-availability-zone/detail").status_code == 403


@pytest.mark.usefixtures("az1")
def test_a_zone_of_disabled_services_is_unavailable(compute: httpx.Client) -> None:
    services = compute.get("/v2.1/os-services", headers=version(53)).json()["services"]
    h2 = next(s for s in services if s["host"] == "h2")
    compute.put(f"/v2.1/os-services/{h2['id']}", json={"status": "disabled"}, headers=version(53))
    zones = _zones(compute.get("/v2.1/os-availability-zone"))
    assert zones["az1"]["zoneState"] == {"available": False}
    assert zones["nova"]["zoneState"] == {"available": True}
    detail = _zones(compute.get("/v2.1/os-availability-zone/detail"))
    assert detail["az1"]["hosts"]["h2"]["nova-compute"]["active"] is False
