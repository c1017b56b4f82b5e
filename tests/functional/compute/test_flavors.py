"""/flavors: create, list (filters, sorting, pages), show, description (2.55), delete; extra
specs and their checks; private flavors and the projects given access."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.compute.conftest import version

TINY = {"name": "m1.tiny", "id": "1", "ram": 512, "vcpus": 1, "disk": 1}


def _create(client: httpx.Client, headers: dict[str, str] | None = None, **flavor: Any) -> Any:
    answer = client.post("/v2.1/flavors", json={"flavor": flavor}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["flavor"]


def _ids(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [flavor["id"] for flavor in answer.json()["flavors"]]


def test_create_answers_the_detailed_view(compute: httpx.Client) -> None:
    flavor = _create(compute, **TINY, swap=0, rxtx_factor=2.0)
    assert flavor == {
        "id": "1",
        "name": "m1.tiny",
        "ram": 512,
        "vcpus": 1,
        "disk": 1,
        "OS-FLV-EXT-DATA:ephemeral": 0,
        "OS-FLV-DISABLED:disabled": False,
        "swap": "",
        "rxtx_factor": 2.0,
        "os-flavor-access:is_public": True,
        "links": [
            {"rel": "self", "href": "http://compute/v2.1/flavors/1"},
            {"rel": "bookmark", "href": "http://compute/flavors/1"},
        ],
    }
    assert compute.get("/v2.1/flavors/1").json()["flavor"] == flavor


def test_amounts_may_be_strings_and_the_id_is_made_when_absent(compute: httpx.Client) -> None:
    flavor = _create(compute, name="s", ram="1024", vcpus="2", disk="0", swap="512", id=None)
    assert (flavor["ram"], flavor["vcpus"], flavor["disk"], flavor["swap"]) == (1024, 2, 0, 512)
    assert len(flavor["id"]) == 36
    numeric = _create(compute, name="n", ram=1, vcpus=1, disk=0, id=42)
    assert numeric["id"] == "42"


@pytest.mark.parametrize(
    "change",
    [
        {"ram": 0},
        {"vcpus": "two"},
        {"vcpus": True},
        {"disk": -1},
        {"swap": -5},
        {"name": " padded"},
        {"name": ""},
        {"id": "bad/id"},
        {"rxtx_factor": 0},
        {"os-flavor-access:is_public": "maybe"},
        {"ram": 2**31},
        {"description": "only from 2.55"},
        {"unknown": 1},
    ],
)
def test_bad_flavors_are_refused(compute: httpx.Client, change: dict[str, Any]) -> None:
    answer = compute.post("/v2.1/flavors", json={"flavor": {**TINY, **change}})
    assert answer.status_code == 400, answer.text
    assert answer.json()["badRequest"]["code"] == 400


def test_missing_fields_and_bodies_are_refused(compute: httpx.Client) -> None:
    assert compute.post("/v2.1/flavors", json={"flavor": {"name": "x"}}).status_code == 400
    assert compute.post("/v2.1/flavors", json={"other": {}}).status_code == 400
    assert compute.post("/v2.1/flavors", content=b"{not json").status_code == 400


def test_only_admins_manage_flavors(compute: httpx.Client, alice: httpx.Client) -> None:
    refused = alice.post("/v2.1/flavors", json={"flavor": TINY})
    assert refused.status_code == 403 and "forbidden" in refused.json()
    _create(compute, **TINY)
    assert alice.delete("/v2.1/flavors/1").status_code == 403
    specs = {"extra_specs": {"hw:cpu_policy": "dedicated"}}
    assert alice.post("/v2.1/flavors/1/os-extra_specs", json=specs).status_code == 403


def test_duplicate_ids_and_names_conflict(compute: httpx.Client) -> None:
    _create(compute, **TINY)
    same_id = compute.post("/v2.1/flavors", json={"flavor": {**TINY, "name": "other"}})
    assert same_id.status_code == 409 and "ID 1" in same_id.json()["conflictingRequest"]["message"]
    same_name = compute.post("/v2.1/flavors", json={"flavor": {**TINY, "id": "2"}})
    assert same_name.status_code == 409 and "name" in same_name.text


def test_delete(compute: httpx.Client) -> None:
    _create(compute, **TINY)
    assert compute.delete("/v2.1/flavors/1").status_code == 202
    missing = compute.get("/v2.1/flavors/1")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == "Flavor 1 could not be found."
    assert compute.delete("/v2.1/flavors/1").status_code == 404


@pytest.fixture
def three(compute: httpx.Client) -> None:
    _create(compute, name="small", id="a", ram=2048, vcpus=1, disk=20)
    _create(compute, name="large", id="b", ram=8192, vcpus=4, disk=80)
    _create(compute, name="medium", id="c", ram=4096, vcpus=2, disk=40)


@pytest.mark.usefixtures("three")
def test_lists_brief_and_detailed(compute: httpx.Client) -> None:
    brief = compute.get("/v2.1/flavors").json()["flavors"]
    assert [set(f) for f in brief] == [{"id", "name", "links"}] * 3
    assert [f["id"] for f in brief] == ["a", "b", "c"]
    detail = compute.get("/v2.1/flavors/detail").json()["flavors"]
    assert [f["ram"] for f in detail] == [2048, 8192, 4096]


@pytest.mark.usefixtures("three")
def test_filters_and_sorting(compute: httpx.Client) -> None:
    assert _ids(compute.get("/v2.1/flavors", params={"minRam": 4096})) == ["b", "c"]
    assert _ids(compute.get("/v2.1/flavors", params={"minDisk": 50})) == ["b"]
    by_ram = compute.get("/v2.1/flavors", params={"sort_key": "memory_mb", "sort_dir": "desc"})
    assert _ids(by_ram) == ["b", "c", "a"]
    assert _ids(compute.get("/v2.1/flavors", params={"sort_key": "name"})) == ["b", "c", "a"]
    for bad in ({"minRam": "lots"}, {"sort_key": "colour"}, {"sort_dir": "up"}, {"limit": -1}):
        assert compute.get("/v2.1/flavors", params=bad).status_code == 400


@pytest.mark.usefixtures("three")
def test_pages_follow_the_marker(compute: httpx.Client) -> None:
    first = compute.get("/v2.1/flavors/detail", params={"limit": 2})
    assert _ids(first) == ["a", "b"]
    (link,) = first.json()["flavors_links"]
    assert link["rel"] == "next"
    assert link["href"] == "http://compute/v2.1/flavors/detail?limit=2&marker=b"
    last = compute.get(link["href"])
    assert _ids(last) == ["c"] and "flavors_links" not in last.json()
    unknown = compute.get("/v2.1/flavors", params={"marker": "zz"})
    assert unknown.status_code == 400 and "marker" in unknown.text


def test_private_flavors_and_access(compute: httpx.Client, alice: httpx.Client) -> None:
    _create(compute, **TINY)
    private = _create(compute, name="p", id="p", ram=1, vcpus=1, disk=0, **{
        "os-flavor-access:is_public": False
    })  # fmt: skip
    assert private["os-flavor-access:is_public"] is False
    # Admins list public ones by default, private ones with is_public=false, all with none.
    assert _ids(compute.get("/v2.1/flavors")) == ["1"]
    assert _ids(compute.get("/v2.1/flavors", params={"is_public": "false"})) == ["p"]
    assert _ids(compute.get("/v2.1/flavors", params={"is_public": "none"})) == ["1", "p"]
    assert compute.get("/v2.1/flavors", params={"is_public": "sometimes"}).status_code == 400
    assert compute.get("/v2.1/flavors/p").status_code == 200
    # Alice sees it only once her project is given access.
    assert _ids(alice.get("/v2.1/flavors")) == ["1"]
    assert alice.get("/v2.1/flavors/p").status_code == 404
    assert alice.get("/v2.1/flavors/p/os-extra_specs").status_code == 404
    add = compute.post("/v2.1/flavors/p/action", json={"addTenantAccess": {"tenant": "alice"}})
    assert add.status_code == 200
    assert add.json() == {"flavor_access": [{"flavor_id": "p", "tenant_id": "alice"}]}
    assert _ids(alice.get("/v2.1/flavors")) == ["1", "p"]
    assert alice.get("/v2.1/flavors/p").status_code == 200
    again = compute.post("/v2.1/flavors/p/action", json={"addTenantAccess": {"tenant": "alice"}})
    assert again.status_code == 409
    listed = compute.get("/v2.1/flavors/p/os-flavor-access").json()["flavor_access"]
    assert listed == [{"flavor_id": "p", "tenant_id": "alice"}]
    remove = {"removeTenantAccess": {"tenant": "alice"}}
    assert compute.post("/v2.1/flavors/p/action", json=remove).json() == {"flavor_access": []}
    assert compute.post("/v2.1/flavors/p/action", json=remove).status_code == 404
    assert alice.get("/v2.1/flavors/p").status_code == 404
    # Only admins manage access; public flavors have no access list.
    assert alice.post("/v2.1/flavors/p/action", json=remove).status_code == 403
    assert compute.get("/v2.1/flavors/1/os-flavor-access").status_code == 404
    assert compute.post("/v2.1/flavors/p/action", json={"resize": {}}).status_code == 400
    bad_tenant = {"addTenantAccess": {"tenant": ""}}
    assert compute.post("/v2.1/flavors/p/action", json=bad_tenant).status_code == 400


def test_access_to_a_public_flavor_is_refused_from_2_7(compute: httpx.Client) -> None:
    _create(compute, **TINY)
    grant = {"addTenantAccess": {"tenant": "alice"}}
    refused = compute.post("/v2.1/flavors/1/action", json=grant, headers=version(7))
    assert refused.status_code == 409
    assert compute.post("/v2.1/flavors/1/action", json=grant, headers=version(6)).status_code == 200


def test_description_from_2_55(compute: httpx.Client) -> None:
    flavor = _create(compute, **TINY, description="tiny one", headers=version(55))
    assert flavor["description"] == "tiny one"
    assert "description" not in compute.get("/v2.1/flavors/1", headers=version(54)).json()["flavor"]
    brief = compute.get("/v2.1/flavors", headers=version(55)).json()["flavors"]
    assert brief[0]["description"] == "tiny one"
    changed = compute.put(
        "/v2.1/flavors/1", json={"flavor": {"description": None}}, headers=version(55)
    )
    assert changed.status_code == 200 and changed.json()["flavor"]["description"] is None
    old = compute.put("/v2.1/flavors/1", json={"flavor": {"description": "x"}}, headers=version(54))
    assert old.status_code == 404
    renamed = compute.put("/v2.1/flavors/1", json={"flavor": {"name": "x"}}, headers=version(55))
    assert renamed.status_code == 400
    missing = compute.put(
        "/v2.1/flavors/nope", json={"flavor": {"description": "x"}}, headers=version(55)
    )
    assert missing.status_code == 404


def test_extra_specs(compute: httpx.Client, alice: httpx.Client) -> None:
    _create(compute, **TINY)
    specs = {"resources:VCPU": "2", "trait:HW_CPU_X86_AVX2": "required", "hw:numa_nodes": 1}
    added = compute.post("/v2.1/flavors/1/os-extra_specs", json={"extra_specs": specs})
    assert added.status_code == 200
    assert added.json()["extra_specs"]["hw:numa_nodes"] == "1"
    more = {"extra_specs": {"aggregate_instance_extra_specs:ssd": "true", "resources:VCPU": "4"}}
    compute.post("/v2.1/flavors/1/os-extra_specs", json=more)
    expected = {
        "aggregate_instance_extra_specs:ssd": "true",
        "hw:numa_nodes": "1",
        "resources:VCPU": "4",
        "trait:HW_CPU_X86_AVX2": "required",
    }
    assert alice.get("/v2.1/flavors/1/os-extra_specs").json() == {"extra_specs": expected}
    one = compute.get("/v2.1/flavors/1/os-extra_specs/resources:VCPU")
    assert one.json() == {"resources:VCPU": "4"}
    put = compute.put("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes", json={"hw:numa_nodes": "2"})
    assert put.json() == {"hw:numa_nodes": "2"}
    mismatch = compute.put("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes", json={"hw:x": "2"})
    assert mismatch.status_code == 400
    two = compute.put("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes", json={"hw:numa_nodes": "2", "b": "1"})  # fmt: skip
    assert two.status_code == 400
    assert compute.delete("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes").status_code == 200
    gone = compute.get("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes")
    assert gone.status_code == 404
    assert (
        gone.json()["itemNotFound"]["message"]
        == "Flavor 1 has no extra specs with key hw:numa_nodes."
    )
    assert compute.delete("/v2.1/flavors/1/os-extra_specs/hw:numa_nodes").status_code == 404
    assert compute.get("/v2.1/flavors/9/os-extra_specs").status_code == 404
    assert compute.post("/v2.1/flavors/9/os-extra_specs", json=more).status_code == 404
    # 2.61 shows them in the flavor's detailed views.
    shown = compute.get("/v2.1/flavors/1", headers=version(61)).json()["flavor"]
    assert shown["extra_specs"]["resources:VCPU"] == "4"
    assert "extra_specs" not in compute.get("/v2.1/flavors/1", headers=version(60)).json()["flavor"]
    listed = compute.get("/v2.1/flavors/detail", headers=version(61)).json()["flavors"]
    assert listed[0]["extra_specs"]["trait:HW_CPU_X86_AVX2"] == "required"


@pytest.mark.parametrize(
    ("key", "value", "ok"),
    [
        ("resources:CUSTOM_MAGIC", "0", True),
        ("resources1:VCPU", "2", True),
        ("resources_net:NET_BW_EGR_KILOBIT_PER_SEC", "1000", True),
        ("resources:VCPU", "-1", False),
        ("resources:VCPU", "two", False),
        ("resources:vcpu", "1", False),
        ("resources!:VCPU", "1", False),
        ("trait:CUSTOM_FAST", "forbidden", True),
        ("trait2:CUSTOM_FAST", "required", True),
        ("trait:CUSTOM_FAST", "preferred", False),
        ("trait:custom", "required", False),
        ("group_policy", "isolate", True),
        ("group_policy", "sometimes", False),
        ("aggregate_instance_extra_specs:colour", "any string at all", True),
        ("hw:cpu_policy", "dedicated", True),
        ("bad key!", "x", False),
        ("hw:long", "x" * 256, False),
    ],
)
def test_extra_specs_are_checked(compute: httpx.Client, key: str, value: str, ok: bool) -> None:
    _create(compute, **TINY)
    answer = compute.post("/v2.1/flavors/1/os-extra_specs", json={"extra_specs": {key: value}})
    assert answer.status_code == (200 if ok else 400), answer.text
    if not ok:
        assert compute.get("/v2.1/flavors/1/os-extra_specs").json() == {"extra_specs": {}}
