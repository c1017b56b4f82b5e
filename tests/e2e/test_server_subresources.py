"""A server's sub-resources end to end: metadata, tags, addresses, password, instance actions,
and the hypervisors a server runs on, with the codes and shapes tempest checks."""

from __future__ import annotations

from typing import Any

import httpx

from berth.allinone.stack import Stack
from tests.e2e import workflow as w
from tests.e2e.conftest import StackFactory

OVS_HOST = {
    "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
    "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 10000, "ingress_kbps": 10000}}},
}  # fmt: skip
SERVERS = "/compute/v2.1/servers"
# Another project's member, and a reader of the admin project.
STRANGER = {"x-auth-token": "eve:elsewhere", "x-roles": "member,reader"}
READER = {"x-auth-token": "carol:admin", "x-roles": "reader"}


def version(minor: int) -> dict[str, str]:
    return {"openstack-api-version": f"compute 2.{minor}"}


def _stack(start_stack: StackFactory, hosts: int = 1) -> tuple[Stack, httpx.Client, str, str]:
    stack, client = start_stack(
        {"cells": ["cell1"], "hosts": [{"name": "cn", "count": hosts, **OVS_HOST}]}
    )
    flavor, image = w.flavor_and_image(stack)
    return stack, client, flavor, image


def _booted(client: httpx.Client, flavor: str, image: str, **extra: Any) -> str:
    server_id = w.boot(client, flavor, image, [{"uuid": w.network(client)}], **extra)
    server = w.wait(client, server_id)
    assert server["status"] == "ACTIVE", server.get("fault")
    return server_id


def _status(answer: httpx.Response, status: int) -> httpx.Response:
    assert answer.status_code == status, f"{answer.status_code} {answer.text}"
    return answer


# -- metadata --------------------------------------------------------------------------------


def test_metadata_is_read_replaced_merged_and_changed_by_key(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image, metadata={"given": "at create"})
    url = f"{SERVERS}/{server_id}/metadata"
    assert w.ok(client.get(url)) == {"metadata": {"given": "at create"}}

    replaced = w.ok(client.put(url, json={"metadata": {"key1": "value1", "key2": "value2"}}))
    assert replaced == {"metadata": {"key1": "value1", "key2": "value2"}}
    merged = w.ok(client.post(url, json={"metadata": {"key1": "alt1", "key3": "value3"}}))
    assert merged == {"metadata": {"key1": "alt1", "key2": "value2", "key3": "value3"}}
    assert w.ok(client.post(url, json={"metadata": {}}))["metadata"] == merged["metadata"]

    assert w.ok(client.get(f"{url}/key2")) == {"meta": {"key2": "value2"}}
    assert w.ok(client.put(f"{url}/nova", json={"meta": {"nova": "alt"}})) == {
        "meta": {"nova": "alt"}
    }
    _status(client.delete(f"{url}/key1"), 204)
    expected = {"key2": "value2", "key3": "value3", "nova": "alt"}
    assert w.ok(client.get(url))["metadata"] == expected
    server = w.ok(client.get(f"{SERVERS}/{server_id}"))["server"]
    assert server["metadata"] == expected
    # A reader of the project reads it; only the admin changes it.
    assert w.ok(client.get(url, headers=READER))["metadata"] == expected
    _status(client.delete(f"{url}/key2", headers=READER), 403)


def test_metadata_refusals(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    url = f"{SERVERS}/{server_id}/metadata"
    unknown = f"{SERVERS}/4a3e6f2e-0b0f-4a1c-9a3b-6f6a2b7c8d9e/metadata"

    def refused(answer: httpx.Response, status: int) -> None:
        _status(answer, status)
        (error,) = answer.json().values()
        assert error["code"] == status

    refused(client.get(f"{url}/missing"), 404)
    refused(client.delete(f"{url}/missing"), 404)
    refused(client.get(unknown), 404)
    refused(client.get(f"{unknown}/key"), 404)
    refused(client.put(unknown, json={"metadata": {"a": "b"}}), 404)
    refused(client.post(unknown, json={"metadata": {"a": "b"}}), 404)
    refused(client.delete(f"{unknown}/d"), 404)
    refused(client.get(url, headers=STRANGER), 404)
    # The URL's key and the body's differ, or the body holds two items: 400.
    refused(client.put(f"{url}/key", json={"meta": {"testkey": "testvalue"}}), 400)
    refused(client.put(f"{url}/a", json={"meta": {"a": "1", "b": "2"}}), 400)
    refused(client.put(url, json={"meta1": "data1"}), 400)
    refused(client.put(url, json={"metadata": {"": "data1"}}), 400)
    refused(client.post(url, json={"metadata": {"": "data1"}}), 400)
    refused(client.put(url, json={"metadata": {"k" * 256: "v"}}), 400)
    refused(client.put(url, json={"metadata": {"k": "v" * 256}}), 400)
    refused(client.put(url, json={"metadata": {"k": 1}}), 400)
    for key in ("k" * 256, ""):
        body = {"server": {"name": "bad", "flavorRef": flavor, "imageRef": image,
                           "networks": "none", "metadata": {key: "data1"}}}  # fmt: skip
        refused(client.post(SERVERS, json=body, headers=w.COMPUTE), 400)
    # The project's metadata_items quota caps how many items a server holds: 403.
    quota = {"quota_set": {"metadata_items": 2}}
    w.ok(client.put("/compute/v2.1/os-quota-sets/admin", json=quota))
    three = {"metadata": {"a": "1", "b": "2", "c": "3"}}
    refused(client.put(url, json=three), 403)
    refused(client.post(url, json=three), 403)
    w.ok(client.put(url, json={"metadata": {"a": "1", "b": "2"}}))
    refused(client.put(f"{url}/c", json={"meta": {"c": "3"}}), 403)
    w.ok(client.put(f"{url}/b", json={"meta": {"b": "changed"}}))
    assert w.ok(client.get(url))["metadata"] == {"a": "1", "b": "changed"}


def test_a_server_in_error_keeps_its_metadata_and_tags_as_they_are(
    start_stack: StackFactory,
) -> None:
    stack, client, _, image = _stack(start_stack)
    huge, _ = w.flavor_and_image(stack, vcpus=64)
    server_id = w.boot(client, huge, image, "none", metadata={"kept": "yes"}, tags=["t1"])
    assert w.wait(client, server_id)["status"] == "ERROR"
    url = f"{SERVERS}/{server_id}"
    assert w.ok(client.get(f"{url}/metadata"))["metadata"] == {"kept": "yes"}
    assert w.ok(client.get(f"{url}/tags", headers=version(52)))["tags"] == ["t1"]
    _status(client.put(f"{url}/metadata", json={"metadata": {}}), 409)
    _status(client.delete(f"{url}/metadata/kept"), 409)
    _status(client.put(f"{url}/tags/t2", headers=version(52)), 409)
    _status(client.delete(f"{url}/tags", headers=version(52)), 409)


# -- tags ------------------------------------------------------------------------------------


def test_tags_are_added_checked_replaced_and_deleted(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    v26 = version(26)
    url = f"{SERVERS}/{server_id}/tags"
    assert w.ok(client.get(url, headers=v26)) == {"tags": []}

    added = _status(client.put(f"{url}/tag one", headers=v26), 201)
    assert added.headers["location"].endswith(f"/v2.1/servers/{server_id}/tags/tag%20one")
    _status(client.put(f"{url}/tag one", headers=v26), 204)
    _status(client.get(f"{url}/tag one", headers=v26), 204)
    _status(client.get(f"{url}/tag two", headers=v26), 404)
    assert w.ok(client.get(url, headers=v26)) == {"tags": ["tag one"]}
    server = w.ok(client.get(f"{SERVERS}/{server_id}", headers=v26))["server"]
    assert server["tags"] == ["tag one"]
    assert "tags" not in w.ok(client.get(f"{SERVERS}/{server_id}", headers=version(25)))["server"]

    replaced = w.ok(client.put(url, json={"tags": ["a", "b", "a"]}, headers=v26))
    assert replaced == {"tags": ["a", "b"]}
    assert w.ok(client.get(url, headers=v26)) == {"tags": ["a", "b"]}
    _status(client.delete(f"{url}/a", headers=v26), 204)
    _status(client.delete(f"{url}/a", headers=v26), 404)
    assert w.ok(client.get(url, headers=v26)) == {"tags": ["b"]}
    _status(client.delete(url, headers=v26), 204)
    assert w.ok(client.get(url, headers=v26)) == {"tags": []}


def test_tag_refusals(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    v26 = version(26)
    url = f"{SERVERS}/{server_id}/tags"
    # No tags before 2.26.
    _status(client.get(url, headers=version(25)), 404)
    _status(client.put(f"{url}/a", headers=version(25)), 404)
    _status(client.get(url, headers=STRANGER | v26), 404)
    _status(client.get(f"{SERVERS}/4a3e6f2e-0b0f-4a1c-9a3b-6f6a2b7c8d9e/tags", headers=v26), 404)
    _status(client.put(f"{url}/a,b", headers=v26), 400)
    _status(client.put(f"{url}/{'t' * 61}", headers=v26), 400)
    _status(client.put(url, json={"tags": ["ok", "not/ok"]}, headers=v26), 400)
    _status(client.put(url, json={"tags": [""]}, headers=v26), 400)
    _status(client.put(url, json={"tags": "a"}, headers=v26), 400)
    _status(client.put(url, json={"tags": [f"t{n}" for n in range(51)]}, headers=v26), 400)
    fifty = [f"t{n}" for n in range(50)]
    assert w.ok(client.put(url, json={"tags": fifty}, headers=v26))["tags"] == fifty
    _status(client.put(f"{url}/one-more", headers=v26), 400)
    _status(client.put(f"{url}/t7", headers=v26), 204)
    _status(client.put(url, json={"tags": []}, headers=READER | v26), 403)


def test_tags_at_create_from_2_52_and_list_filters(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    network = [{"uuid": w.network(client)}]
    body: dict[str, Any] = {"server": {"name": "early", "flavorRef": flavor, "imageRef": image,
                                       "networks": network, "tags": ["a"]}}  # fmt: skip
    _status(client.post(SERVERS, json=body, headers=version(51)), 400)
    body["server"]["tags"] = ["a", "b/c"]
    _status(client.post(SERVERS, json=body, headers=version(52)), 400)
    tags_of = {"ab": ["a", "b"], "a": ["a"], "c": ["c"], "none": []}
    for name, tags in tags_of.items():
        body["server"].update(name=name, tags=tags)
        server = w.ok(client.post(SERVERS, json=body, headers=version(52)))["server"]
        assert w.wait(client, server["id"])["status"] == "ACTIVE"

    def listed(query: str, minor: int = 26) -> set[str]:
        found = w.ok(client.get(f"{SERVERS}/detail?{query}", headers=version(minor)))["servers"]
        for server in found:
            assert server.get("tags") == (tags_of[server["name"]] if minor >= 26 else None)
        return {server["name"] for server in found}

    assert listed("tags=a,b") == {"ab"}
    assert listed("tags=a") == {"ab", "a"}
    assert listed("tags-any=b,c") == {"ab", "c"}
    assert listed("not-tags=a,b") == {"a", "c", "none"}
    assert listed("not-tags-any=a") == {"c", "none"}
    assert listed("tags=a&not-tags-any=b") == {"a"}
    # Before 2.26 the tag filters are ignored.
    assert listed("tags=c", minor=25) == {"ab", "a", "c", "none"}


# -- addresses and password ------------------------------------------------------------------


def test_ips_by_network(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    server = w.ok(client.get(f"{SERVERS}/{server_id}"))["server"]
    addresses = w.ok(client.get(f"{SERVERS}/{server_id}/ips"))["addresses"]
    (address,) = server["addresses"]["public"]
    assert addresses == {"public": [{"version": 4, "addr": address["addr"]}]}
    assert w.ok(client.get(f"{SERVERS}/{server_id}/ips/public")) == addresses
    assert w.ok(client.get(f"{SERVERS}/{server_id}/ips", headers=READER)) == {
        "addresses": addresses
    }
    _status(client.get(f"{SERVERS}/{server_id}/ips/invalid"), 404)
    _status(client.get(f"{SERVERS}/999/ips"), 404)
    _status(client.get(f"{SERVERS}/{server_id}/ips", headers=STRANGER), 404)


def test_a_server_without_a_guest_has_no_password(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    server_id = _booted(client, flavor, image)
    url = f"{SERVERS}/{server_id}/os-server-password"
    assert w.ok(client.get(url, headers=READER)) == {"password": ""}
    _status(client.delete(url, headers=READER), 403)
    _status(client.delete(url), 204)
    assert w.ok(client.get(url)) == {"password": ""}
    _status(client.get(url, headers=STRANGER), 404)
    _status(client.get(f"{SERVERS}/4a3e6f2e-0b0f-4a1c-9a3b-6f6a2b7c8d9e/os-server-password"), 404)


# -- hypervisors -----------------------------------------------------------------------------


def test_hypervisors_found_by_name_before_2_53(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack, hosts=2)
    server_id = _booted(client, flavor, image)
    node = w.ok(client.get(f"{SERVERS}/{server_id}"))["server"][
        "OS-EXT-SRV-ATTR:hypervisor_hostname"
    ]
    hypervisors = "/compute/v2.1/os-hypervisors"
    found = w.ok(client.get(f"{hypervisors}/cn/search"))["hypervisors"]
    assert len(found) == 2
    assert set(found[0]) == {"id", "hypervisor_hostname", "state", "status"}
    (exact,) = w.ok(client.get(f"{hypervisors}/{node}/search"))["hypervisors"]
    assert exact["hypervisor_hostname"] == node and isinstance(exact["id"], int)
    with_servers = w.ok(client.get(f"{hypervisors}/cn/servers"))["hypervisors"]
    assert [h.get("servers") for h in with_servers if h["hypervisor_hostname"] == node] == [
        [{"name": "vm", "uuid": server_id}]
    ]
    assert [h.get("servers") for h in with_servers if h["hypervisor_hostname"] != node] == [None]
    _status(client.get(f"{hypervisors}/nonexistent_hypervisor_name/search"), 404)
    _status(client.get(f"{hypervisors}/nonexistent_hypervisor_name/servers"), 404)
    member = {"x-auth-token": "demo:admin", "x-roles": "member,reader"}
    _status(client.get(f"{hypervisors}/cn/search", headers=member), 403)
    _status(client.get(f"{hypervisors}/cn/servers", headers=member), 403)
    # From 2.53 the query parameters replace them.
    _status(client.get(f"{hypervisors}/cn/search", headers=version(53)), 404)
    _status(client.get(f"{hypervisors}/cn/servers", headers=version(53)), 404)
    query = f"hypervisor_hostname_pattern={node}&with_servers=true"
    (listed,) = w.ok(client.get(f"{hypervisors}?{query}", headers=version(53)))["hypervisors"]
    assert listed["servers"] == [{"name": "vm", "uuid": server_id}]


# -- instance actions ------------------------------------------------------------------------


def test_instance_actions_of_a_live_and_a_deleted_server(start_stack: StackFactory) -> None:
    _, client, flavor, image = _stack(start_stack)
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": image,
                       "networks": [{"uuid": w.network(client)}]}}  # fmt: skip
    created = _status(client.post(SERVERS, json=body, headers=w.COMPUTE), 202)
    server_id = created.json()["server"]["id"]
    request_id = created.headers["x-compute-request-id"]
    assert w.wait(client, server_id)["status"] == "ACTIVE"
    url = f"{SERVERS}/{server_id}/os-instance-actions"

    (action,) = w.ok(client.get(url, headers=READER))["instanceActions"]
    assert (action["action"], action["request_id"]) == ("create", request_id)
    shown = w.ok(client.get(f"{url}/{request_id}", headers=READER))["instanceAction"]
    assert (shown["instance_uuid"], shown["action"]) == (server_id, "create")
    # Events show to admins, and to everyone who may see the action from 2.51.
    assert "events" not in shown
    assert w.ok(client.get(f"{url}/{request_id}"))["instanceAction"]["events"]
    for_all = w.ok(client.get(f"{url}/{request_id}", headers=READER | version(51)))
    assert all("traceback" not in event for event in for_all["instanceAction"]["events"])
    _status(client.get(f"{url}/999"), 404)
    _status(client.get(f"{SERVERS}/4a3e6f2e-0b0f-4a1c-9a3b-6f6a2b7c8d9e/os-instance-actions"), 404)
    _status(client.get(url, headers=STRANGER), 404)

    _status(client.delete(f"{SERVERS}/{server_id}"), 204)
    w.wait_gone(client, server_id)
    _status(client.get(url, headers=version(20)), 404)
    found = w.ok(client.get(url, headers=version(21)))["instanceActions"]
    assert sorted(a["action"] for a in found) == ["create", "delete"]
