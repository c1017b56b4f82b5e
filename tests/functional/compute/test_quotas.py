"""Compute quotas: os-quota-sets, os-quota-class-sets and /limits per microversion, who may read
and change them, and their enforcement on server, server group and key pair creates, with
concurrent creates that must never pass a limit together (on every database the suite has).

The super-conductor is a recorder: a created server stays a BuildRequest, which counts as much
as an Instance in a cell (``_place`` puts one there directly).
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterator, Sequence
from typing import Any

import httpx
import pytest

from berth.compute.db import build_requests, flavors, images, instances, server_groups
from berth.compute.service import ComputeService
from tests.functional.compute.conftest import client_for, version

IMAGE = "70a599e0-31e7-49b7-b260-868f441e862b"
ED25519 = (
    "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIMf62eVG9mAKYT+r+Y2M30TMDehI671ZWnnbRjDBZPtv alice@laptop"
)
ADMIN = {"x-auth-token": "admin"}
# Roles given explicitly, so the rules mean the same with or without the new defaults.
MEMBER = {"x-auth-token": "alice:p1", "x-roles": "member,reader"}
READER = {"x-auth-token": "carol:p1", "x-roles": "reader"}
OTHER = {"x-auth-token": "bob:p2", "x-roles": "member,reader"}
TINY = {"vcpus": 1, "memory_mb": 512}

NOVA_2_1 = {
    "cores": 20, "fixed_ips": -1, "floating_ips": -1, "injected_file_content_bytes": 10240,
    "injected_file_path_bytes": 255, "injected_files": 5, "instances": 10, "key_pairs": 100,
    "metadata_items": 128, "ram": 51200, "security_group_rules": -1, "security_groups": -1,
    "server_group_members": 10, "server_groups": 10,
}  # fmt: skip
NETWORK = ("fixed_ips", "floating_ips", "security_group_rules", "security_groups")
INJECTED = ("injected_file_content_bytes", "injected_file_path_bytes", "injected_files")


class Builds:
    """The super-conductor, as far as the API sees it: it takes every build."""

    def __init__(self) -> None:
        self.uuids: list[str] = []
        self._lock = threading.Lock()

    def build_instances(self, instance_uuids: Sequence[str], request_id: str) -> None:
        with self._lock:
            self.uuids.extend(instance_uuids)


@pytest.fixture
def service(compute_service: ComputeService) -> ComputeService:
    with compute_service.api_db.write() as conn:
        flavors.create(conn, "1", "m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
        flavors.create(conn, "4", "m1.large", vcpus=4, memory_mb=8192, root_gb=40, ephemeral_gb=10)
        images.create(conn, IMAGE, {"name": "cirros"})
    compute_service.conductor = Builds()
    return compute_service


@pytest.fixture
def admin(service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(service, ADMIN) as client:
        yield client


@pytest.fixture
def member(service: ComputeService) -> Iterator[httpx.Client]:
    with client_for(service, MEMBER) as client:
        yield client


def _boot(client: httpx.Client, flavor: str = "1", **server: Any) -> httpx.Response:
    body = {"server": {"name": "vm", "flavorRef": flavor, "imageRef": IMAGE, **server}}
    return client.post("/v2.1/servers", json=body)


def _set(admin: httpx.Client, project: str, **limits: Any) -> Any:
    answer = admin.put(f"/v2.1/os-quota-sets/{project}", json={"quota_set": limits})
    assert answer.status_code == 200, answer.text
    return answer.json()["quota_set"]


def _place(service: ComputeService, project: str, flavor: dict[str, Any], **values: Any) -> str:
    """An Instance of the project in cell1 (a server the conductor placed)."""
    cell = service.cells.cells(include_cell0=False)[0]
    server = str(uuid.uuid4())
    with service.cells.database(cell).write() as conn:
        instances.create(
            conn,
            {
                "uuid": server,
                "project_id": project,
                "user_id": "alice",
                "display_name": values.pop("name", "placed"),
                "vm_state": "active",
                "flavor": {"name": "m1", "root_gb": 1, "ephemeral_gb": 0, **flavor},
                **values,
            },
        )
    return server


def _building(service: ComputeService, project: str) -> int:
    with service.api_db.read() as conn:
        return len(build_requests.list_build_requests(conn, project))


# -- os-quota-sets -------------------------------------------------------------------------


def test_show_per_microversion(member: httpx.Client) -> None:
    legacy = member.get("/v2.1/os-quota-sets/p1").json()["quota_set"]
    assert legacy == {"id": "p1", **NOVA_2_1}
    at_2_36 = member.get("/v2.1/os-quota-sets/p1", headers=version(36)).json()["quota_set"]
    assert set(at_2_36) == set(legacy) - set(NETWORK)
    at_2_57 = member.get("/v2.1/os-quota-sets/p1", headers=version(57)).json()["quota_set"]
    assert set(at_2_57) == set(at_2_36) - set(INJECTED)
    defaults = member.get("/v2.1/os-quota-sets/p1/defaults", headers=version(57))
    assert defaults.json()["quota_set"] == at_2_57


def test_update_delete_and_who_may(service: ComputeService, admin: httpx.Client) -> None:
    shown = _set(admin, "p1", instances=3, cores="-1", force=True)
    # No id in an update's answer (as upstream); -1 given as a string is read.
    assert "id" not in shown and shown["instances"] == 3 and shown["cores"] == -1
    with client_for(service, READER) as reader, client_for(service, OTHER) as other:
        assert reader.get("/v2.1/os-quota-sets/p1").json()["quota_set"]["instances"] == 3
        assert other.get("/v2.1/os-quota-sets/p1").status_code == 403
        assert other.get("/v2.1/os-quota-sets/p1/detail").status_code == 403
        # The defaults are anyone's to read; changing anything is an admin's.
        assert other.get("/v2.1/os-quota-sets/p1/defaults").status_code == 200
        refused = reader.put("/v2.1/os-quota-sets/p1", json={"quota_set": {"instances": 50}})
        assert refused.status_code == 403
        assert reader.delete("/v2.1/os-quota-sets/p1").status_code == 403
    assert admin.get("/v2.1/os-quota-sets/p2").json()["quota_set"]["instances"] == 10
    deleted = admin.delete("/v2.1/os-quota-sets/p1")
    assert deleted.status_code == 202 and not deleted.content
    assert admin.get("/v2.1/os-quota-sets/p1").json()["quota_set"]["instances"] == 10


@pytest.mark.parametrize(
    ("body", "headers"),
    [
        ({"instances": -2}, {}),
        ({"instances": 2**31}, {}),
        ({"instances": "ten"}, {}),
        ({"instances": True}, {}),
        ({"instances": None}, {}),
        ({"nonsense": 1}, {}),
        ({"instances": 1, "force": "maybe"}, {}),
        # Gone from the API at 2.36 and 2.57.
        ({"floating_ips": 1}, version(36)),
        ({"injected_files": 1}, version(57)),
    ],
)
def test_update_refuses(admin: httpx.Client, body: dict[str, Any], headers: Any) -> None:
    answer = admin.put("/v2.1/os-quota-sets/p1", json={"quota_set": body}, headers=headers)
    assert answer.status_code == 400, answer.text
    assert admin.get("/v2.1/os-quota-sets/p1").json()["quota_set"]["instances"] == 10


def test_network_resources_before_2_36_are_kept_and_never_counted(admin: httpx.Client) -> None:
    shown = _set(admin, "p1", floating_ips=5, instances=4, networks=3)
    assert shown["floating_ips"] == 5 and shown["instances"] == 4
    assert "networks" not in shown
    detail = admin.get("/v2.1/os-quota-sets/p1/detail").json()["quota_set"]
    assert detail["floating_ips"] == {"in_use": 0, "limit": 5, "reserved": 0}
    assert (
        admin.get("/v2.1/limits?tenant_id=p1").json()["limits"]["absolute"]["maxTotalFloatingIps"]
        == 5
    )
    # From 2.36 they are neither shown nor taken.
    refused = admin.put(
        "/v2.1/os-quota-sets/p1", json={"quota_set": {"floating_ips": 1}}, headers=version(36)
    )
    assert refused.status_code == 400


# -- per-user quotas -----------------------------------------------------------------------

ALICE_Q = "/v2.1/os-quota-sets/p1?user_id=alice"


def test_a_user_takes_the_project_s_limits_until_given_their_own(
    service: ComputeService, admin: httpx.Client
) -> None:
    _set(admin, "p1", ram=5120, cores=8)
    assert admin.get(ALICE_Q).json()["quota_set"]["ram"] == 5120
    answer = admin.put(ALICE_Q, json={"quota_set": {"ram": "2048"}}, headers=version(57))
    assert answer.status_code == 200, answer.text
    assert answer.json()["quota_set"]["ram"] == 2048 and "id" not in answer.json()["quota_set"]
    mine = admin.get(ALICE_Q).json()["quota_set"]
    assert (mine["id"], mine["ram"], mine["cores"]) == ("p1", 2048, 8)
    # The project's own limits are unchanged; another user still has them.
    assert admin.get("/v2.1/os-quota-sets/p1").json()["quota_set"]["ram"] == 5120
    assert admin.get("/v2.1/os-quota-sets/p1?user_id=bob").json()["quota_set"]["ram"] == 5120
    # Deleting the user's limits gives them the project's again.
    assert admin.delete(ALICE_Q).status_code == 202
    assert admin.get(ALICE_Q).json()["quota_set"]["ram"] == 5120


def test_users_limits_stay_within_the_project_s(admin: httpx.Client) -> None:
    _set(admin, "p1", instances=5)
    assert admin.put(ALICE_Q, json={"quota_set": {"instances": 3}}).status_code == 200
    bob = "/v2.1/os-quota-sets/p1?user_id=bob"
    over = admin.put(bob, json={"quota_set": {"instances": 3}})
    assert over.status_code == 400 and "less than or equal to 2" in over.text
    unlimited = admin.put(bob, json={"quota_set": {"instances": -1}, "force": True})
    assert unlimited.status_code == 400
    assert admin.put(bob, json={"quota_set": {"instances": 2}}).status_code == 200
    # The project's limit may not go below what its users' limits add up to...
    lower = admin.put("/v2.1/os-quota-sets/p1", json={"quota_set": {"instances": 4}})
    assert lower.status_code == 400 and "add up to (5)" in lower.text
    # ...and deleting the project's limits deletes its users' too.
    assert admin.delete("/v2.1/os-quota-sets/p1").status_code == 202
    assert admin.get(bob).json()["quota_set"]["instances"] == 10


def test_a_user_s_own_limit_counts_their_servers_only(
    service: ComputeService, admin: httpx.Client, member: httpx.Client
) -> None:
    _place(service, "p1", TINY, user_id="someone-else")
    _place(service, "p1", TINY, user_id="alice")
    detail = admin.get("/v2.1/os-quota-sets/p1/detail?user_id=alice").json()["quota_set"]
    assert detail["instances"] == {"in_use": 1, "limit": 10, "reserved": 0}
    low = admin.put(ALICE_Q, json={"quota_set": {"instances": 0}})
    assert low.status_code == 400 and "already uses (1)" in low.text
    assert admin.put(ALICE_Q, json={"quota_set": {"instances": 2}}).status_code == 200
    assert _boot(member).status_code == 202
    refused = _boot(member)
    assert refused.status_code == 403, refused.text
    assert "2 of 2 instances" in refused.json()["forbidden"]["message"]
    # Another user of the project still has the project's room.
    with client_for(service, {"x-auth-token": "dave:p1", "x-roles": "member,reader"}) as dave:
        assert _boot(dave).status_code == 202


def test_a_user_s_own_key_pair_limit(service: ComputeService, admin: httpx.Client) -> None:
    assert admin.put(ALICE_Q, json={"quota_set": {"key_pairs": 1}}).status_code == 200
    with client_for(service, MEMBER) as alice:
        first = alice.post(
            "/v2.1/os-keypairs", json={"keypair": {"name": "a", "public_key": ED25519}}
        )
        assert first.status_code == 200, first.text
        second = alice.post(
            "/v2.1/os-keypairs", json={"keypair": {"name": "b", "public_key": ED25519}}
        )
        assert second.status_code == 403


def test_only_admins_set_users_limits(member: httpx.Client) -> None:
    assert member.put(ALICE_Q, json={"quota_set": {"cores": 1}}).status_code == 403
    assert member.get(ALICE_Q).status_code == 200
    assert member.get("/v2.1/os-quota-sets/p1?user_id=").status_code == 400


def test_detail_counts_build_requests_cells_and_groups(
    service: ComputeService, admin: httpx.Client, member: httpx.Client
) -> None:
    assert _boot(member, flavor="4").status_code == 202
    _place(service, "p1", {"vcpus": 2, "memory_mb": 1024})
    _place(service, "p1", {"vcpus": 8, "memory_mb": 1024}, vm_state="error")
    gone = _place(service, "p1", {"vcpus": 16, "memory_mb": 1024})
    with service.cells.database(service.cells.cells(include_cell0=False)[0]).write() as conn:
        instances.mark_deleted(conn, gone)
    _place(service, "p2", {"vcpus": 32, "memory_mb": 1024})
    group = {"server_group": {"name": "g", "policies": ["affinity"]}}
    assert member.post("/v2.1/os-server-groups", json=group).status_code == 200
    detail = member.get("/v2.1/os-quota-sets/p1/detail", headers=version(57)).json()
    quota_set = detail["quota_set"]
    assert quota_set["id"] == "p1"
    assert quota_set["instances"] == {"in_use": 3, "limit": 10, "reserved": 0}
    assert quota_set["cores"] == {"in_use": 4 + 2 + 8, "limit": 20, "reserved": 0}
    assert quota_set["ram"] == {"in_use": 8192 + 1024 + 1024, "limit": 51200, "reserved": 0}
    assert quota_set["server_groups"] == {"in_use": 1, "limit": 10, "reserved": 0}
    assert set(quota_set) == {"id"} | set(NOVA_2_1) - set(NETWORK) - set(INJECTED)
    legacy = admin.get("/v2.1/os-quota-sets/p1/detail").json()["quota_set"]
    assert legacy["floating_ips"] == {"in_use": 0, "limit": -1, "reserved": 0}
    # A limit below what is used is refused, unless forced.
    lower = admin.put("/v2.1/os-quota-sets/p1", json={"quota_set": {"cores": 13}})
    assert lower.status_code == 400 and "already used (14)" in lower.text
    assert _set(admin, "p1", cores=13, force="true")["cores"] == 13


# -- os-quota-class-sets -------------------------------------------------------------------


def test_the_default_class_sets_every_projects_defaults(
    admin: httpx.Client, member: httpx.Client
) -> None:
    _set(admin, "p1", instances=7)
    answer = admin.put("/v2.1/os-quota-class-sets/default", json={"quota_class_set": {"instances": 20, "cores": 40}})  # fmt: skip
    assert answer.status_code == 200, answer.text
    assert "id" not in answer.json()["quota_class_set"]
    assert answer.json()["quota_class_set"]["cores"] == 40
    assert member.get("/v2.1/os-quota-sets/p1/defaults").json()["quota_set"]["instances"] == 20
    # A project's own limit stays; the others follow the class.
    assert member.get("/v2.1/os-quota-sets/p1").json()["quota_set"]["instances"] == 7
    assert admin.get("/v2.1/os-quota-sets/p2").json()["quota_set"]["cores"] == 40
    assert member.get("/v2.1/os-quota-class-sets/default").status_code == 403


def test_class_resources_per_microversion(admin: httpx.Client) -> None:
    legacy = admin.get("/v2.1/os-quota-class-sets/default").json()["quota_class_set"]
    assert legacy["id"] == "default" and "server_groups" not in legacy
    assert legacy["floating_ips"] == -1
    # Before 2.50 the network resources are kept (tempest sets each one to 99).
    kept = admin.put(
        "/v2.1/os-quota-class-sets/default",
        json={"quota_class_set": {"floating_ips": 99, "security_groups": 99, "networks": 99}},
    )
    assert kept.status_code == 200, kept.text
    shown = admin.get("/v2.1/os-quota-class-sets/default").json()["quota_class_set"]
    assert (shown["floating_ips"], shown["security_groups"]) == (99, 99)
    assert "networks" not in shown
    at_2_50 = admin.get("/v2.1/os-quota-class-sets/default", headers=version(50)).json()
    assert at_2_50["quota_class_set"]["server_group_members"] == 10
    assert not set(NETWORK) & set(at_2_50["quota_class_set"])
    refused = admin.put(
        "/v2.1/os-quota-class-sets/default",
        json={"quota_class_set": {"server_groups": 1}},
    )
    assert refused.status_code == 400
    # Another class is kept and shown, and changes nobody's defaults.
    other = admin.put("/v2.1/os-quota-class-sets/gold", json={"quota_class_set": {"instances": 99}})
    assert other.json()["quota_class_set"]["instances"] == 99
    assert admin.get("/v2.1/os-quota-sets/p1/defaults").json()["quota_set"]["instances"] == 10


# -- /limits ---------------------------------------------------------------------------------


def test_limits_per_microversion(
    service: ComputeService, admin: httpx.Client, member: httpx.Client
) -> None:
    _place(service, "p1", {"vcpus": 2, "memory_mb": 2048})
    _set(admin, "p1", ram=4096)
    legacy = member.get("/v2.1/limits").json()["limits"]
    assert legacy["rate"] == []
    assert legacy["absolute"] == {
        "maxTotalInstances": 10, "maxTotalCores": 20, "maxTotalRAMSize": 4096,
        "maxTotalKeypairs": 100, "maxServerMeta": 128, "maxImageMeta": 128,
        "maxPersonality": 5, "maxPersonalitySize": 10240, "maxServerGroups": 10,
        "maxServerGroupMembers": 10, "maxTotalFloatingIps": -1, "maxSecurityGroups": -1,
        "maxSecurityGroupRules": -1, "totalInstancesUsed": 1, "totalCoresUsed": 2,
        "totalRAMUsed": 2048, "totalServerGroupsUsed": 0, "totalFloatingIpsUsed": 0,
        "totalSecurityGroupsUsed": 0,
    }  # fmt: skip
    at_2_36 = member.get("/v2.1/limits", headers=version(36)).json()["limits"]["absolute"]
    assert "maxTotalFloatingIps" not in at_2_36 and "maxImageMeta" in at_2_36
    at_2_39 = member.get("/v2.1/limits", headers=version(39)).json()["limits"]["absolute"]
    assert "maxImageMeta" not in at_2_39 and "maxPersonality" in at_2_39
    at_2_57 = member.get("/v2.1/limits", headers=version(57)).json()["limits"]["absolute"]
    assert "maxPersonality" not in at_2_57 and "maxPersonalitySize" not in at_2_57
    # Another project's: an admin's question only.
    theirs = admin.get("/v2.1/limits?tenant_id=p1").json()["limits"]["absolute"]
    assert theirs["totalRAMUsed"] == 2048
    assert member.get("/v2.1/limits?tenant_id=p2").status_code == 403


# -- enforcement -----------------------------------------------------------------------------


def test_servers_over_quota_are_refused(
    service: ComputeService, admin: httpx.Client, member: httpx.Client
) -> None:
    _set(admin, "p1", instances=2)
    _place(service, "p1", TINY)
    assert _boot(member).status_code == 202
    refused = _boot(member)
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for instances: requested 1, but 2 of 2 instances are already used."
    )
    # Another project has room of its own.
    with client_for(service, OTHER) as other:
        assert _boot(other).status_code == 202


def test_cores_ram_and_metadata(admin: httpx.Client, member: httpx.Client) -> None:
    _set(admin, "p1", cores=6, ram=20000, metadata_items=2)
    assert _boot(member, flavor="4").status_code == 202
    refused = _boot(member, flavor="4")
    assert refused.status_code == 403
    assert refused.json()["forbidden"]["message"] == (
        "Quota exceeded for cores: requested 4, but 4 of 6 cores are already used."
    )
    _set(admin, "p1", cores=5, ram=10000, force=True)
    both = _boot(member, flavor="4")
    assert "Quota exceeded for cores, ram: requested 4, but 4 of 5 cores" in both.text
    _set(admin, "p1", cores=-1)
    ram = _boot(member, flavor="4")
    assert "Quota exceeded for ram: requested 8192, but 8192 of 10000 ram" in ram.text
    many = _boot(member, metadata={"a": "1", "b": "2", "c": "3"})
    assert many.status_code == 403
    assert "metadata_items: requested 3, but the limit is 2" in many.text
    assert _boot(member, metadata={"a": "1", "b": "2"}).status_code == 202


def test_min_and_max_count_take_what_fits(service: ComputeService, admin: httpx.Client) -> None:
    _set(admin, "p1", instances=4)
    with client_for(service, MEMBER) as member:
        made = _boot(member, min_count=1, max_count=3)
        assert made.status_code == 202 and _building(service, "p1") == 3
        # One fits of two to five: the minimum is not met, and nothing is made.
        refused = _boot(member, min_count=2, max_count=5)
        assert refused.status_code == 403
        assert "requested 2, but 3 of 4 instances" in refused.text
        assert _building(service, "p1") == 3
        # Five asked, at least one: the one that fits is made, named as one of several.
        assert _boot(member, min_count=1, max_count=5).status_code == 202
    with service.api_db.read() as conn:
        names = sorted(row["instance"]["name"] for row in build_requests.list_build_requests(conn, "p1"))  # fmt: skip
    assert names == ["vm", "vm-1", "vm-2", "vm-3"]


def test_unlimited_servers(service: ComputeService, admin: httpx.Client) -> None:
    """No server limit: the cells are not even read, and group members are still counted."""
    _set(admin, "p1", instances=-1, cores=-1, ram=-1, server_group_members=3)
    with client_for(service, MEMBER) as member:
        assert _boot(member, flavor="4", max_count=12).status_code == 202
        group = member.post(
            "/v2.1/os-server-groups", json={"server_group": {"name": "g", "policies": ["affinity"]}}
        ).json()["server_group"]["id"]
        body = {"server": {"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "min_count": 4}}
        into = member.post("/v2.1/servers", json={**body, "os:scheduler_hints": {"group": group}})
    assert into.status_code == 403 and "server_group_members: requested 4, but 0 of 3" in into.text
    assert _building(service, "p1") == 12


def test_server_groups_and_their_members(
    service: ComputeService, admin: httpx.Client, member: httpx.Client
) -> None:
    _set(admin, "p1", server_groups=1, server_group_members=2)
    group = {"server_group": {"name": "g", "policies": ["anti-affinity"]}}
    made = member.post("/v2.1/os-server-groups", json=group)
    assert made.status_code == 200
    refused = member.post("/v2.1/os-server-groups", json=group)
    assert refused.status_code == 403
    assert "server_groups: requested 1, but 1 of 1 server_groups" in refused.text
    hint = {"os:scheduler_hints": {"group": made.json()["server_group"]["id"]}}
    body = {"server": {"name": "vm", "flavorRef": "1", "imageRef": IMAGE, "max_count": 3}}
    # Three asked, two fit in the group.
    assert member.post("/v2.1/servers", json={**body, **hint}).status_code == 202
    with service.api_db.read() as conn:
        assert len(server_groups.members(conn, made.json()["server_group"]["id"])) == 2
    full = member.post("/v2.1/servers", json={"server": body["server"] | {"max_count": 1}, **hint})
    assert full.status_code == 403
    assert "server_group_members: requested 1, but 2 of 2" in full.text


def test_key_pairs_count_per_user(service: ComputeService, admin: httpx.Client) -> None:
    _set(admin, "p1", key_pairs=1)
    with client_for(service, MEMBER) as alice, client_for(service, READER | {"x-roles": "member,reader"}) as carol:  # fmt: skip
        first = alice.post("/v2.1/os-keypairs", json={"keypair": {"name": "a", "public_key": ED25519}})  # fmt: skip
        assert first.status_code == 200, first.text
        second = alice.post("/v2.1/os-keypairs", json={"keypair": {"name": "b", "public_key": ED25519}})  # fmt: skip
        assert second.status_code == 403
        assert "key_pairs: requested 1, but 1 of 1 key_pairs" in second.text
        # Another user of the project has a key pair of their own to make.
        theirs = carol.post("/v2.1/os-keypairs", json={"keypair": {"name": "a", "public_key": ED25519}})  # fmt: skip
        assert theirs.status_code == 200


# -- concurrent creates ------------------------------------------------------------------------


def _race(service: ComputeService, headers: dict[str, str], attempts: int, send: Any) -> list[int]:
    """``attempts`` threads, each with its own client, sending at the same moment."""
    start = threading.Barrier(attempts)
    statuses: list[int] = []

    def one() -> None:
        with client_for(service, headers) as client:
            start.wait()
            statuses.append(send(client).status_code)

    threads = [threading.Thread(target=one) for _ in range(attempts)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=120)
    return sorted(statuses)


def test_concurrent_boots_never_pass_the_quota_together(
    service: ComputeService, admin: httpx.Client
) -> None:
    # A project never seen before: its lock row is made by the racers themselves.
    _set(admin, "p1", instances=7, cores=-1)
    statuses = _race(service, MEMBER, 10, lambda client: _boot(client, min_count=1, max_count=2))
    assert _building(service, "p1") == 7
    # Three boots of two, one of the one left, six refused.
    assert statuses == [202] * 4 + [403] * 6
    assert len(service.conductor.uuids) == 7  # type: ignore[attr-defined]


def test_concurrent_group_creates_never_pass_the_quota_together(
    service: ComputeService, admin: httpx.Client
) -> None:
    _set(admin, "p1", server_groups=3)
    group = {"server_group": {"name": "g", "policies": ["affinity"]}}
    statuses = _race(
        service, MEMBER, 8, lambda client: client.post("/v2.1/os-server-groups", json=group)
    )
    assert statuses == [200] * 3 + [403] * 5
    with service.api_db.read() as conn:
        assert len(server_groups.list_groups(conn, "p1")) == 3


def test_a_project_first_seen_by_racing_creates(service: ComputeService) -> None:
    """No limit set, no lock row: the first creates of a project make its row while racing."""
    statuses = _race(service, OTHER, 12, lambda client: _boot(client))
    assert statuses == [202] * 10 + [403] * 2
    assert _building(service, "p2") == 10
