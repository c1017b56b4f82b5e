"""/os-server-groups: the 2.64 form (policy and rules) and the older one (policies), which
projects see which groups, members, and delete."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from berth.compute.db import server_groups
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import BOB, client_for, version

LATEST = version(64)


def _create(client: httpx.Client, headers: dict[str, str], **group: Any) -> Any:
    answer = client.post("/v2.1/os-server-groups", json={"server_group": group}, headers=headers)
    assert answer.status_code == 200, answer.text
    return answer.json()["server_group"]


def test_policy_and_rules_at_2_64(alice: httpx.Client) -> None:
    group = _create(
        alice, LATEST, name="web", policy="anti-affinity", rules={"max_server_per_host": 2}
    )
    assert group == {
        "id": group["id"],
        "name": "web",
        "policy": "anti-affinity",
        "rules": {"max_server_per_host": 2},
        "members": [],
        "project_id": "alice",
        "user_id": "alice",
    }
    plain = _create(alice, LATEST, name="db", policy="soft-affinity")
    assert plain["rules"] == {}
    assert alice.get(f"/v2.1/os-server-groups/{group['id']}", headers=LATEST).json() == {
        "server_group": group
    }
    # A rule given as a string of digits is read as the number it is.
    digits = _create(
        alice, LATEST, name="x", policy="anti-affinity", rules={"max_server_per_host": "3"}
    )
    assert digits["rules"] == {"max_server_per_host": 3}


def test_policies_before_2_64(alice: httpx.Client) -> None:
    group = _create(alice, version(63), name="web", policies=["affinity"])
    assert group["policies"] == ["affinity"] and group["metadata"] == {}
    assert "policy" not in group and "rules" not in group
    assert group["project_id"] == "alice"
    old = alice.get(f"/v2.1/os-server-groups/{group['id']}", headers=version(12)).json()
    assert "project_id" not in old["server_group"]
    # The same group at 2.64 shows its one policy.
    assert (
        alice.get(f"/v2.1/os-server-groups/{group['id']}", headers=LATEST).json()["server_group"][
            "policy"
        ]
        == "affinity"
    )


@pytest.mark.parametrize(
    ("headers", "group"),
    [
        (LATEST, {"name": "g", "policies": ["affinity"]}),
        (LATEST, {"name": "g", "policy": "together"}),
        (LATEST, {"name": "g", "policy": "affinity", "rules": {"max_server_per_host": 2}}),
        (LATEST, {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": 0}}),
        (LATEST, {"name": "g", "policy": "anti-affinity", "rules": {"max_server_per_host": True}}),
        (LATEST, {"name": "g", "policy": "anti-affinity", "rules": {"spread": 2}}),
        (LATEST, {"name": "g", "policy": "anti-affinity", "rules": []}),
        (LATEST, {"name": " g", "policy": "affinity"}),
        (LATEST, {"policy": "affinity"}),
        (version(63), {"name": "g", "policy": "affinity"}),
        (version(63), {"name": "g", "policies": ["affinity", "anti-affinity"]}),
        (version(63), {"name": "g", "policies": []}),
        (version(14), {"name": "g", "policies": ["soft-affinity"]}),
    ],
)
def test_bad_groups_are_refused(
    alice: httpx.Client, headers: dict[str, str], group: dict[str, Any]
) -> None:
    answer = alice.post("/v2.1/os-server-groups", json={"server_group": group}, headers=headers)
    assert answer.status_code == 400, answer.text
    assert "badRequest" in answer.json()


def test_soft_policies_from_2_15(alice: httpx.Client) -> None:
    group = _create(alice, version(15), name="g", policies=["soft-anti-affinity"])
    assert group["policies"] == ["soft-anti-affinity"]


def test_each_project_sees_its_own(
    compute_service: ComputeService, compute: httpx.Client, alice: httpx.Client
) -> None:
    mine = _create(alice, LATEST, name="mine", policy="affinity")
    with client_for(compute_service, BOB) as bob:
        theirs = _create(bob, LATEST, name="theirs", policy="affinity")
        assert [g["id"] for g in bob.get("/v2.1/os-server-groups").json()["server_groups"]] == [
            theirs["id"]
        ]
        assert bob.get(f"/v2.1/os-server-groups/{mine['id']}").status_code == 404
        assert bob.delete(f"/v2.1/os-server-groups/{mine['id']}").status_code == 404
        # all_projects means nothing to a project.
        listed = bob.get("/v2.1/os-server-groups", params={"all_projects": "True"})
        assert len(listed.json()["server_groups"]) == 1
    assert compute.get("/v2.1/os-server-groups").json()["server_groups"] == []
    everyone = compute.get("/v2.1/os-server-groups", params={"all_projects": "True"})
    assert [g["name"] for g in everyone.json()["server_groups"]] == ["mine", "theirs"]
    assert compute.get(f"/v2.1/os-server-groups/{mine['id']}").status_code == 200
    paged = compute.get(
        "/v2.1/os-server-groups", params={"all_projects": "1", "limit": 1, "offset": 1}
    )
    assert [g["name"] for g in paged.json()["server_groups"]] == ["theirs"]
    bad = compute.get("/v2.1/os-server-groups", params={"offset": "-1"})
    assert bad.status_code == 400


def test_members_are_the_servers_in_the_group(
    compute_service: ComputeService, alice: httpx.Client
) -> None:
    group = _create(alice, LATEST, name="g", policy="anti-affinity")
    servers = ["0f6d7a2c-1111-4d2e-9b1a-000000000001", "0f6d7a2c-1111-4d2e-9b1a-000000000002"]
    with compute_service.api_db.write() as conn:
        server_groups.add_members(conn, group["id"], servers)
    shown = alice.get(f"/v2.1/os-server-groups/{group['id']}").json()["server_group"]
    assert shown["members"] == servers


def test_delete(alice: httpx.Client) -> None:
    group = _create(alice, LATEST, name="g", policy="affinity")
    assert alice.delete(f"/v2.1/os-server-groups/{group['id']}").status_code == 204
    missing = alice.get(f"/v2.1/os-server-groups/{group['id']}")
    assert missing.status_code == 404
    assert missing.json()["itemNotFound"]["message"] == (
        f"Instance group {group['id']} could not be found."
    )
    assert alice.delete(f"/v2.1/os-server-groups/{group['id']}").status_code == 404
