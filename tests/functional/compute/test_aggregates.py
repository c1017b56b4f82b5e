"""/os-aggregates: the aggregate's hosts mirrored into Placement as the aggregate's uuid on each
host's compute node provider; availability zones; metadata; who may do what."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from berth.compute.clients.placement import PlacementClient
from berth.compute.db import aggregates
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import Hosts, version

OTHER_AGGREGATE = "5a0c4f1e-9b0d-4d7e-8f61-0c2b7d1a9e33"


def _aggregate(client: httpx.Client, name: str, zone: str | None = None) -> Any:
    body: dict[str, Any] = {"name": name}
    if zone is not None:
        body["availability_zone"] = zone
    answer = client.post("/v2.1/os-aggregates", json={"aggregate": body}, headers=version(41))
    assert answer.status_code == 200, answer.text
    return answer.json()["aggregate"]


def _act(client: httpx.Client, aggregate_id: int, **action: Any) -> httpx.Response:
    return client.post(f"/v2.1/os-aggregates/{aggregate_id}/action", json=action)


def _placement_aggregates(placement: httpx.Client, provider: str) -> list[str]:
    answer = placement.get(f"/resource_providers/{provider}/aggregates")
    assert answer.status_code == 200, answer.text
    return sorted(answer.json()["aggregates"])


def test_create_show_list(compute: httpx.Client) -> None:
    made = _aggregate(compute, "rack1", "az1")
    assert set(made) == {
        "id", "name", "availability_zone", "uuid", "created_at", "updated_at", "deleted",
        "deleted_at",
    }  # fmt: skip
    assert (made["name"], made["availability_zone"], made["deleted"]) == ("rack1", "az1", False)
    shown = compute.get(f"/v2.1/os-aggregates/{made['id']}", headers=version(41)).json()
    assert shown["aggregate"]["hosts"] == []
    assert shown["aggregate"]["metadata"] == {"availability_zone": "az1"}
    assert shown["aggregate"]["uuid"] == made["uuid"]
    old = compute.get(f"/v2.1/os-aggregates/{made['id']}", headers=version(40)).json()
    assert "uuid" not in old["aggregate"]
    listed = compute.get("/v2.1/os-aggregates").json()["aggregates"]
    assert [a["name"] for a in listed] == ["rack1"]
    assert compute.get("/v2.1/os-aggregates/999").status_code == 404
    assert compute.get("/v2.1/os-aggregates/rack1").status_code == 404
    assert compute.get("/v2.1/os-aggregates/99999999999999999999").status_code == 404


def test_names_and_zones_are_checked(compute: httpx.Client) -> None:
    _aggregate(compute, "rack1")
    duplicate = compute.post("/v2.1/os-aggregates", json={"aggregate": {"name": "rack1"}})
    assert duplicate.status_code == 409
    for bad in ({"name": ""}, {"name": "x", "availability_zone": "a:b"}, {"name": "x", "y": 1}):
        answer = compute.post("/v2.1/os-aggregates", json={"aggregate": bad})
        assert answer.status_code == 400, bad


def test_only_admins(compute: httpx.Client, alice: httpx.Client) -> None:
    made = _aggregate(compute, "rack1")
    assert alice.get("/v2.1/os-aggregates").status_code == 403
    assert alice.post("/v2.1/os-aggregates", json={"aggregate": {"name": "x"}}).status_code == 403
    refused = _act(alice, made["id"], add_host={"host": "h1"})
    assert refused.status_code == 403 and "forbidden" in refused.json()


def test_hosts_are_mirrored_into_placement(
    compute: httpx.Client, hosts: Hosts, placement: httpx.Client
) -> None:
    node = hosts.add("h1")
    assert node is not None
    # An aggregate someone else put on the provider (a routed segment's) stays.
    generation = placement.get(f"/resource_providers/{node}").json()["generation"]
    placement.put(
        f"/resource_providers/{node}/aggregates",
        json={"aggregates": [OTHER_AGGREGATE], "resource_provider_generation": generation},
    )
    made = _aggregate(compute, "rack1")
    added = _act(compute, made["id"], add_host={"host": "h1"})
    assert added.status_code == 200, added.text
    assert added.json()["aggregate"]["hosts"] == ["h1"]
    assert _placement_aggregates(placement, node) == sorted([made["uuid"], OTHER_AGGREGATE])
    again = _act(compute, made["id"], add_host={"host": "h1"})
    assert again.status_code == 409
    # An aggregate with hosts is not deleted.
    assert compute.delete(f"/v2.1/os-aggregates/{made['id']}").status_code == 409
    removed = _act(compute, made["id"], remove_host={"host": "h1"})
    assert removed.status_code == 200 and removed.json()["aggregate"]["hosts"] == []
    assert _placement_aggregates(placement, node) == [OTHER_AGGREGATE]
    missing = _act(compute, made["id"], remove_host={"host": "h1"})
    assert missing.status_code == 404
    assert compute.delete(f"/v2.1/os-aggregates/{made['id']}").status_code == 200
    assert compute.get(f"/v2.1/os-aggregates/{made['id']}").status_code == 404


def test_unknown_hosts_are_refused(compute: httpx.Client, hosts: Hosts) -> None:
    made = _aggregate(compute, "rack1")
    unknown = _act(compute, made["id"], add_host={"host": "nowhere"})
    assert unknown.status_code == 404
    assert unknown.json()["itemNotFound"]["message"] == "Compute host nowhere could not be found."
    # A host with a service but no compute node yet is not one either.
    hosts.add("h2", node=False)
    assert _act(compute, made["id"], add_host={"host": "h2"}).status_code == 404
    assert _act(compute, 999, add_host={"host": "h2"}).status_code == 404
    for bad in ({"add_host": {}}, {"add_host": {"host": "h2", "x": 1}}, {"reboot": {}}, []):
        answer = compute.post(f"/v2.1/os-aggregates/{made['id']}/action", json=bad)
        assert answer.status_code == 400, bad


def test_without_placement_the_api_still_keeps_hosts(compute: httpx.Client, hosts: Hosts) -> None:
    hosts.add("h1")
    made = _aggregate(compute, "rack1")
    assert _act(compute, made["id"], add_host={"host": "h1"}).status_code == 200


def test_a_placement_failure_changes_nothing(
    compute_service: ComputeService, compute: httpx.Client, hosts: Hosts
) -> None:
    hosts.add("h1")
    broken = httpx.Client(
        transport=httpx.MockTransport(lambda request: httpx.Response(500, text="down")),
        base_url="http://placement",
    )
    compute_service.placement = PlacementClient(broken)
    made = _aggregate(compute, "rack1")
    failed = _act(compute, made["id"], add_host={"host": "h1"})
    assert failed.status_code == 503
    assert failed.json()["serviceUnavailable"]["code"] == 503
    with compute_service.api_db.read() as conn:
        assert aggregates.hosts_of(conn, made["id"]) == []


def test_a_host_is_in_one_zone(compute: httpx.Client, hosts: Hosts) -> None:
    hosts.add("h1")
    hosts.add("h2")
    az1 = _aggregate(compute, "one", "az1")
    az2 = _aggregate(compute, "two", "az2")
    plain = _aggregate(compute, "plain")
    assert _act(compute, az1["id"], add_host={"host": "h1"}).status_code == 200
    conflict = _act(compute, az2["id"], add_host={"host": "h1"})
    assert conflict.status_code == 409 and "az1" in conflict.text
    assert _act(compute, plain["id"], add_host={"host": "h1"}).status_code == 200
    # The zone-less aggregate may not take another zone now, through metadata or update.
    to_az2 = _act(compute, plain["id"], set_metadata={"metadata": {"availability_zone": "az2"}})
    assert to_az2.status_code == 409
    update = {"aggregate": {"availability_zone": "az2"}}
    assert compute.put(f"/v2.1/os-aggregates/{plain['id']}", json=update).status_code == 409
    to_az1 = _act(compute, plain["id"], set_metadata={"metadata": {"availability_zone": "az1"}})
    assert to_az1.status_code == 200
    assert to_az1.json()["aggregate"]["availability_zone"] == "az1"
    assert _act(compute, az2["id"], add_host={"host": "h2"}).status_code == 200


def test_metadata_and_update(compute: httpx.Client) -> None:
    made = _aggregate(compute, "rack1", "az1")
    path = f"/v2.1/os-aggregates/{made['id']}"
    answer = _act(compute, made["id"], set_metadata={"metadata": {"ssd": "true", "gpu": "a100"}})
    assert answer.json()["aggregate"]["metadata"] == {
        "availability_zone": "az1",
        "gpu": "a100",
        "ssd": "true",
    }
    unset = _act(compute, made["id"], set_metadata={"metadata": {"gpu": None}})
    assert unset.json()["aggregate"]["metadata"] == {"availability_zone": "az1", "ssd": "true"}
    no_zone = _act(compute, made["id"], set_metadata={"metadata": {"availability_zone": None}})
    assert no_zone.json()["aggregate"]["availability_zone"] is None
    bad = _act(compute, made["id"], set_metadata={"metadata": {"ssd": 1}})
    assert bad.status_code == 400
    assert _act(compute, made["id"], set_metadata={"metadata": []}).status_code == 400
    renamed = compute.put(path, json={"aggregate": {"name": "rack9", "availability_zone": "z"}})
    assert renamed.status_code == 200, renamed.text
    assert (renamed.json()["aggregate"]["name"], renamed.json()["aggregate"]["availability_zone"]) == ("rack9", "z")  # fmt: skip
    _aggregate(compute, "taken")
    assert compute.put(path, json={"aggregate": {"name": "taken"}}).status_code == 409
    assert compute.put(path, json={"aggregate": {}}).status_code == 400
    assert compute.put(path, json={"aggregate": {"hosts": []}}).status_code == 400


@pytest.mark.parametrize("method", ["PATCH", "POST"])
def test_other_methods_are_not_allowed(compute: httpx.Client, method: str) -> None:
    answer = compute.request(method, "/v2.1/os-aggregates/1")
    assert answer.status_code == 405
