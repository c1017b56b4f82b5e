"""/v2.0/rbac-policies over HTTP: sharing QoS policies with chosen projects, the ``shared`` flag
as the wildcard entry, who may see and change entries, and entries a project still needs."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error


@pytest.fixture
def alice(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as client:
        yield client


@pytest.fixture
def bob(network_service: NetworkService) -> Iterator[httpx.Client]:
    with network_client_for(network_service, "bob", roles=MEMBER_ROLES) as client:
        yield client


def _policy(admin: httpx.Client, **body: Any) -> dict[str, Any]:
    answer = admin.post("/v2.0/qos/policies", json={"policy": {"name": "gold", **body}})
    assert answer.status_code == 201, answer.text
    return answer.json()["policy"]  # type: ignore[no-any-return]


def _grant(client: httpx.Client, policy_id: str, target: str) -> httpx.Response:
    return client.post(
        "/v2.0/rbac-policies",
        json={
            "rbac_policy": {
                "object_type": "qos_policy",
                "object_id": policy_id,
                "action": "access_as_shared",
                "target_tenant": target,
            }
        },
    )


def _entry(client: httpx.Client, policy_id: str, target: str) -> dict[str, Any]:
    answer = _grant(client, policy_id, target)
    assert answer.status_code == 201, answer.text
    return answer.json()["rbac_policy"]  # type: ignore[no-any-return]


def _network(client: httpx.Client, policy_id: str) -> httpx.Response:
    return client.post("/v2.0/networks", json={"network": {"qos_policy_id": policy_id}})


def test_a_grant_makes_a_policy_visible_and_usable_by_its_target_only(
    network_client: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    policy = _policy(network_client)
    path = f"/v2.0/qos/policies/{policy['id']}"
    neutron_error(alice.get(path), 404, "QosPolicyNotFound")
    neutron_error(_network(alice, policy["id"]), 404, "QosPolicyNotFound")
    entry = _entry(network_client, policy["id"], "alice")
    assert entry == {
        "id": entry["id"], "project_id": "admin", "tenant_id": "admin",
        "object_type": "qos_policy", "object_id": policy["id"], "action": "access_as_shared",
        "target_tenant": "alice",
    }  # fmt: skip
    # Shared with alice: she sees it as shared, lists it, and may put it on her network.
    assert alice.get(path).json()["policy"]["shared"] is True
    assert [p["id"] for p in alice.get("/v2.0/qos/policies").json()["policies"]] == [policy["id"]]
    assert _network(alice, policy["id"]).status_code == 201
    # Not with bob, and not with everyone: the admin's own view says so.
    neutron_error(bob.get(path), 404, "QosPolicyNotFound")
    assert bob.get("/v2.0/qos/policies").json()["policies"] == []
    assert network_client.get(path).json()["policy"]["shared"] is False
    # An entry is its owner's: neither its target nor others see it.
    assert alice.get("/v2.0/rbac-policies").json()["rbac_policies"] == []
    neutron_error(alice.get(f"/v2.0/rbac-policies/{entry['id']}"), 404, "RbacPolicyNotFound")
    shown = network_client.get(f"/v2.0/rbac-policies/{entry['id']}").json()["rbac_policy"]
    assert shown == entry


def test_shared_true_is_the_wildcard_entry(network_client: httpx.Client, bob: httpx.Client) -> None:
    policy = _policy(network_client, shared=True)
    listed = network_client.get("/v2.0/rbac-policies", params={"object_id": policy["id"]}).json()[
        "rbac_policies"
    ]
    assert [(e["target_tenant"], e["project_id"]) for e in listed] == [("*", "admin")]
    path = f"/v2.0/qos/policies/{policy['id']}"
    assert bob.get(path).json()["policy"]["shared"] is True
    unshared = network_client.put(path, json={"policy": {"shared": False}})
    assert unshared.status_code == 200, unshared.text
    assert unshared.json()["policy"]["shared"] is False
    assert network_client.get("/v2.0/rbac-policies").json()["rbac_policies"] == []
    neutron_error(bob.get(path), 404, "QosPolicyNotFound")
    # A specific grant survives the wildcard's coming and going.
    entry = _entry(network_client, policy["id"], "bob")
    network_client.put(path, json={"policy": {"shared": True}})
    network_client.put(path, json={"policy": {"shared": False}})
    assert bob.get(path).status_code == 200
    listed = network_client.get("/v2.0/rbac-policies").json()["rbac_policies"]
    assert [e["id"] for e in listed] == [entry["id"]]
    # Deleting the policy takes its entries with it.
    assert network_client.delete(path).status_code == 204
    neutron_error(
        network_client.get(f"/v2.0/rbac-policies/{entry['id']}"), 404, "RbacPolicyNotFound"
    )


def test_an_entry_a_project_needs_cannot_go(
    network_client: httpx.Client, bob: httpx.Client
) -> None:
    policy = _policy(network_client)
    specific = _entry(network_client, policy["id"], "bob")
    assert _network(bob, policy["id"]).status_code == 201
    removed = network_client.delete(f"/v2.0/rbac-policies/{specific['id']}")
    assert "bob" in neutron_error(removed, 409, "RbacPolicyInUse")
    # A wildcard entry covers bob, so the specific one may go; then the wildcard may not.
    wildcard = _entry(network_client, policy["id"], "*")
    assert network_client.delete(f"/v2.0/rbac-policies/{specific['id']}").status_code == 204
    neutron_error(
        network_client.delete(f"/v2.0/rbac-policies/{wildcard['id']}"), 409, "RbacPolicyInUse"
    )
    retarget = network_client.put(
        f"/v2.0/rbac-policies/{wildcard['id']}", json={"rbac_policy": {"target_tenant": "bob"}}
    )
    neutron_error(retarget, 409, "RbacPolicyInUse")
    unshare = network_client.put(
        f"/v2.0/qos/policies/{policy['id']}", json={"policy": {"shared": False}}
    )
    neutron_error(unshare, 409, "RbacPolicyInUse")


def test_the_owner_s_own_use_holds_the_wildcard_as_upstream(
    network_client: httpx.Client,
) -> None:
    policy = _policy(network_client, shared=True)
    assert _network(network_client, policy["id"]).status_code == 201
    path = f"/v2.0/qos/policies/{policy['id']}"
    neutron_error(
        network_client.put(path, json={"policy": {"shared": False}}), 409, "RbacPolicyInUse"
    )


def test_an_entry_is_retargeted(network_client: httpx.Client, bob: httpx.Client) -> None:
    policy = _policy(network_client)
    entry = _entry(network_client, policy["id"], "alice")
    path = f"/v2.0/rbac-policies/{entry['id']}"
    moved = network_client.put(path, json={"rbac_policy": {"target_tenant": "bob"}})
    assert moved.status_code == 200, moved.text
    assert moved.json()["rbac_policy"] == {**entry, "target_tenant": "bob"}
    assert bob.get(f"/v2.0/qos/policies/{policy['id']}").status_code == 200
    read_only = network_client.put(path, json={"rbac_policy": {"object_id": policy["id"]}})
    neutron_error(read_only, 400, "BadRequest")


def test_members_grant_only_what_their_project_owns_and_never_to_all(
    network_client: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    admins = _policy(network_client)
    _entry(network_client, admins["id"], "alice")
    # Alice sees the admin's policy, but sharing it on is not hers: 400, as upstream.
    neutron_error(_grant(alice, admins["id"], "bob"), 400, "InvalidInput")
    # A policy of alice's project (made by an admin) she may share with bob, not with everyone.
    hers = _policy(network_client, project_id="alice")
    neutron_error(_grant(alice, hers["id"], "*"), 403, "NotAuthorized")
    entry = _entry(alice, hers["id"], "bob")
    assert entry["project_id"] == "alice"
    assert bob.get(f"/v2.0/qos/policies/{hers['id']}").status_code == 200
    widen = alice.put(
        f"/v2.0/rbac-policies/{entry['id']}", json={"rbac_policy": {"target_tenant": "*"}}
    )
    neutron_error(widen, 403, "NotAuthorized")
    assert [e["id"] for e in alice.get("/v2.0/rbac-policies").json()["rbac_policies"]] == [
        entry["id"]
    ]
    # Bob, its target, can neither see nor remove it.
    neutron_error(bob.delete(f"/v2.0/rbac-policies/{entry['id']}"), 404, "RbacPolicyNotFound")
    assert alice.delete(f"/v2.0/rbac-policies/{entry['id']}").status_code == 204
    neutron_error(bob.get(f"/v2.0/qos/policies/{hers['id']}"), 404, "QosPolicyNotFound")


def test_entries_are_checked(network_client: httpx.Client) -> None:
    policy = _policy(network_client)
    _entry(network_client, policy["id"], "alice")
    neutron_error(_grant(network_client, policy["id"], "alice"), 409, "DuplicateRbacPolicy")
    neutron_error(_grant(network_client, policy["id"], "x" * 256), 400, "InvalidInput")
    neutron_error(_grant(network_client, "8c1a1f30-6b7a-4c55-9a39-2f1f0c7d7f11", "bob"), 400,
           "InvalidInput")  # fmt: skip
    body = {"object_type": "qos_policy", "object_id": policy["id"], "action": "access_as_shared"}
    for wrong in (
        {},
        {"target_tenant": None},
        {"target_tenant": "bob", "object_type": "router"},
        {"target_tenant": "bob", "action": "access_as_external"},
        {"target_tenant": "bob", "colour": "red"},
    ):
        answer = network_client.post("/v2.0/rbac-policies", json={"rbac_policy": {**body, **wrong}})
        assert answer.status_code == 400, (wrong, answer.text)
    neutron_error(network_client.get("/v2.0/rbac-policies/nope"), 404, "RbacPolicyNotFound")


def test_lists_filter_and_trim(network_client: httpx.Client) -> None:
    policy = _policy(network_client)
    first = _entry(network_client, policy["id"], "alice")
    _entry(network_client, policy["id"], "bob")
    listed = network_client.get("/v2.0/rbac-policies", params={"id": first["id"]}).json()
    assert [e["id"] for e in listed["rbac_policies"]] == [first["id"]]
    trimmed = network_client.get(
        "/v2.0/rbac-policies", params=[("fields", "project_id"), ("fields", "target_tenant")]
    ).json()["rbac_policies"]
    assert sorted(e["target_tenant"] for e in trimmed) == ["alice", "bob"]
    assert all(set(e) == {"project_id", "target_tenant"} for e in trimmed)
    extensions = network_client.get("/v2.0/extensions").json()["extensions"]
    assert "rbac-policies" in {e["alias"] for e in extensions}


def _grant_network(client: httpx.Client, network_id: str, target: str) -> httpx.Response:
    return client.post(
        "/v2.0/rbac-policies",
        json={
            "rbac_policy": {
                "object_type": "network",
                "object_id": network_id,
                "action": "access_as_shared",
                "target_tenant": target,
            }
        },
    )


def _made(answer: httpx.Response, key: str) -> dict[str, Any]:
    assert answer.status_code == 201, answer.text
    return answer.json()[key]  # type: ignore[no-any-return]


def test_a_network_is_shared_with_one_project_and_its_subnets_with_it(
    network_client: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    network = _made(network_client.post("/v2.0/networks", json={"network": {}}), "network")
    subnet = _made(
        network_client.post(
            "/v2.0/subnets",
            json={"subnet": {"network_id": network["id"], "cidr": "10.0.0.0/24", "ip_version": 4}},
        ),
        "subnet",
    )
    revision = network["revision_number"]
    entry = _made(_grant_network(network_client, network["id"], "alice"), "rbac_policy")
    shown = alice.get(f"/v2.0/networks/{network['id']}")
    assert shown.status_code == 200, shown.text
    assert shown.json()["network"]["shared"] is True
    assert shown.json()["network"]["revision_number"] > revision
    assert alice.get(f"/v2.0/subnets/{subnet['id']}").status_code == 200
    assert [n["id"] for n in alice.get("/v2.0/networks").json()["networks"]] == [network["id"]]
    neutron_error(bob.get(f"/v2.0/networks/{network['id']}"), 404, "NetworkNotFound")
    neutron_error(bob.get(f"/v2.0/subnets/{subnet['id']}"), 404, "SubnetNotFound")
    assert bob.get("/v2.0/subnets").json()["subnets"] == []
    # The admin's own view: not shared with every project.
    admin_view = network_client.get(f"/v2.0/networks/{network['id']}").json()["network"]
    assert admin_view["shared"] is False
    # Alice's port holds the entry; once it is gone, so may the entry be.
    port = _made(alice.post("/v2.0/ports", json={"port": {"network_id": network["id"]}}), "port")
    path = f"/v2.0/rbac-policies/{entry['id']}"
    assert "alice" in neutron_error(network_client.delete(path), 409, "RbacPolicyInUse")
    assert alice.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    assert network_client.delete(path).status_code == 204
    neutron_error(alice.get(f"/v2.0/networks/{network['id']}"), 404, "NetworkNotFound")


def test_shared_true_on_a_network_is_the_wildcard_entry(
    network_client: httpx.Client, alice: httpx.Client
) -> None:
    network = _made(
        network_client.post("/v2.0/networks", json={"network": {"shared": True}}), "network"
    )
    listed = network_client.get("/v2.0/rbac-policies").json()["rbac_policies"]
    assert [(e["object_type"], e["object_id"], e["target_tenant"]) for e in listed] == [
        ("network", network["id"], "*")
    ]
    _made(alice.post("/v2.0/ports", json={"port": {"network_id": network["id"]}}), "port")
    path = f"/v2.0/networks/{network['id']}"
    neutron_error(
        network_client.put(path, json={"network": {"shared": False}}), 409, "RbacPolicyInUse"
    )
    assert network_client.get("/v2.0/networks", params={"shared": "true"}).json()["networks"]
    # Deleting the network (its ports first) takes its entries with it.
    for port in network_client.get("/v2.0/ports").json()["ports"]:
        network_client.delete(f"/v2.0/ports/{port['id']}")
    assert network_client.delete(path).status_code == 204
    assert network_client.get("/v2.0/rbac-policies").json()["rbac_policies"] == []


def test_a_project_shares_its_network_and_its_own_ports_never_hold_the_entry(
    alice: httpx.Client, bob: httpx.Client
) -> None:
    network = _made(alice.post("/v2.0/networks", json={"network": {}}), "network")
    neutron_error(_grant_network(alice, network["id"], "*"), 403, "NotAuthorized")
    self_share = _made(_grant_network(alice, network["id"], "alice"), "rbac_policy")
    _made(alice.post("/v2.0/ports", json={"port": {"network_id": network["id"]}}), "port")
    moved = alice.put(
        f"/v2.0/rbac-policies/{self_share['id']}", json={"rbac_policy": {"target_tenant": "bob"}}
    )
    assert moved.status_code == 200, moved.text
    # Bob may now make a port on alice's network, and alice (the network's owner) delete it.
    port = _made(bob.post("/v2.0/ports", json={"port": {"network_id": network["id"]}}), "port")
    assert alice.delete(f"/v2.0/ports/{port['id']}").status_code == 204
    # Bob sees alice's network, but not the entry, and cannot share the network on.
    assert bob.get("/v2.0/rbac-policies").json()["rbac_policies"] == []
    neutron_error(_grant_network(bob, network["id"], "carol"), 400, "InvalidInput")
    assert alice.delete(f"/v2.0/rbac-policies/{self_share['id']}").status_code == 204


def test_subnets_filter_on_their_network_s_sharing(
    network_client: httpx.Client, alice: httpx.Client
) -> None:
    def subnet_ids(client: httpx.Client, shared: str) -> list[str]:
        listed = client.get("/v2.0/subnets", params={"shared": shared}).json()["subnets"]
        return [s["id"] for s in listed]

    made = {}
    for name, shared in (("shared", True), ("private", False)):
        network = _made(
            network_client.post("/v2.0/networks", json={"network": {"shared": shared}}), "network"
        )
        body = {"network_id": network["id"], "cidr": "10.0.0.0/24", "ip_version": 4}
        made[name] = _made(network_client.post("/v2.0/subnets", json={"subnet": body}), "subnet")
    assert subnet_ids(network_client, "true") == [made["shared"]["id"]]
    assert subnet_ids(network_client, "false") == [made["private"]["id"]]
    assert subnet_ids(alice, "true") == [made["shared"]["id"]]
    assert subnet_ids(alice, "false") == []


def test_an_external_network_is_seen_by_the_projects_it_is_external_for(
    network_client: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    public = _made(
        network_client.post("/v2.0/networks", json={"network": {"router:external": True}}),
        "network",
    )
    body = {"network_id": public["id"], "cidr": "10.0.0.0/24", "ip_version": 4}
    _made(network_client.post("/v2.0/subnets", json={"subnet": body}), "subnet")
    assert public["router:external"] is True and public["shared"] is False
    listed = network_client.get("/v2.0/rbac-policies").json()["rbac_policies"]
    assert [(e["action"], e["target_tenant"]) for e in listed] == [("access_as_external", "*")]
    # Every project sees it as external, but neither its subnets nor the right to make ports.
    external = alice.get("/v2.0/networks", params={"router:external": "true"}).json()
    assert [n["id"] for n in external["networks"]] == [public["id"]]
    assert alice.get("/v2.0/subnets").json()["subnets"] == []
    port = alice.post("/v2.0/ports", json={"port": {"network_id": public["id"]}})
    neutron_error(port, 403, "NotAuthorized")
    # router:external false removes the entry; a targeted one makes it external for one project.
    path = f"/v2.0/networks/{public['id']}"
    internal = network_client.put(path, json={"network": {"router:external": False}})
    assert internal.json()["network"]["router:external"] is False
    neutron_error(alice.get(path), 404, "NetworkNotFound")
    grant = {
        "object_type": "network", "object_id": public["id"], "action": "access_as_external",
        "target_tenant": "alice",
    }  # fmt: skip
    assert (
        network_client.post("/v2.0/rbac-policies", json={"rbac_policy": grant}).status_code == 201
    )
    assert alice.get(path).json()["network"]["router:external"] is True
    neutron_error(bob.get(path), 404, "NetworkNotFound")
