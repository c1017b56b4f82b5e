"""Who may do what in the Networking API under the default settings, which behave as upstream's
defaults: secure-RBAC roles (reader reads, member changes, only an admin changes QoS policies) and every rule
project-scoped, so a system-scoped token is refused whatever its roles. The two settings that
relax this, and role names compared case-insensitively."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import httpx
import pytest

from berth.common.db import Database
from berth.config import NetworkSettings
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for

SYSTEM_SCOPE = {"openstack-system-scope": "all"}


def _client(service: NetworkService, token: str, roles: str | None = None) -> httpx.Client:
    return network_client_for(service, token, roles=roles)


def _post(client: httpx.Client, kind: str, **body: Any) -> dict[str, Any]:
    answer = client.post(f"/v2.0/{kind}s", json={kind: body})
    assert answer.status_code == 201, answer.text
    return answer.json()[kind]  # type: ignore[no-any-return]


def _refused(answer: httpx.Response, status: int = 403) -> None:
    assert answer.status_code == status, answer.text
    kind = "NotAuthorized" if status == 403 else "NetworkNotFound"
    assert answer.json()["NeutronError"]["type"] == kind


def _names(client: httpx.Client, **headers: str) -> list[str]:
    answer = client.get("/v2.0/networks", headers=headers)
    assert answer.status_code == 200, answer.text
    return sorted(n["name"] for n in answer.json()["networks"])


@pytest.fixture
def networks(network_client: httpx.Client) -> dict[str, dict[str, Any]]:
    """Alice's network, a shared one and Bob's, made by the admin."""
    return {
        "alice": _post(network_client, "network", name="alice's", project_id="alice"),
        "shared": _post(network_client, "network", name="shared", shared=True),
        "bob": _post(network_client, "network", name="bob's", project_id="bob"),
    }


@pytest.fixture
def unscoped(network_db: Database) -> Iterator[httpx.Client]:
    """A client of a network service with enforce_scope = false, as a system-scoped admin."""
    service = NetworkService(settings=NetworkSettings(enforce_scope=False), db=network_db)
    with _client(service, "root", "admin,member,reader") as client:
        client.headers.update(SYSTEM_SCOPE)
        yield client


def test_defaults_are_upstreams() -> None:
    settings = NetworkSettings()
    assert settings.enforce_new_defaults and settings.enforce_scope


def test_a_system_scoped_admin_sees_and_changes_nothing(
    network_service: NetworkService, networks: dict[str, dict[str, Any]]
) -> None:
    with _client(network_service, "root", "admin,member,reader") as root:
        root.headers.update(SYSTEM_SCOPE)
        # Upstream filters a listing through the show rule, which refuses the scope: an empty
        # list (not even shared networks), a 404 for one, a 403 for any change.
        assert _names(root) == []
        for kind in ("subnets", "ports", "qos/policies", "agents"):
            listed = root.get(f"/v2.0/{kind}")
            assert listed.status_code == 200 and list(listed.json().values()) == [[]], kind
        _refused(root.get(f"/v2.0/networks/{networks['shared']['id']}"), 404)
        _refused(root.post("/v2.0/networks", json={"network": {"name": "x"}}))
        _refused(root.delete(f"/v2.0/networks/{networks['alice']['id']}"), 404)
        _refused(root.get("/v2.0/segments"))


def test_a_project_admin_sees_and_changes_everything(
    network_service: NetworkService, networks: dict[str, dict[str, Any]]
) -> None:
    with _client(network_service, "root:ops", "admin,member,reader") as admin:
        assert _names(admin) == ["alice's", "bob's", "shared"]
        shown = admin.get(f"/v2.0/networks/{networks['bob']['id']}").json()["network"]
        assert shown["provider:network_type"] == "vxlan"
        assert admin.delete(f"/v2.0/networks/{networks['bob']['id']}").status_code == 204
        assert admin.get("/v2.0/agents").status_code == 200


def test_enforce_scope_off_lets_a_system_scoped_admin_act_as_any_admin(
    networks: dict[str, dict[str, Any]], unscoped: httpx.Client
) -> None:
    assert _names(unscoped) == ["alice's", "bob's", "shared"]
    assert unscoped.get("/v2.0/agents").status_code == 200
    assert unscoped.delete(f"/v2.0/networks/{networks['bob']['id']}").status_code == 204


def test_a_reader_reads_its_project_a_member_also_changes_it(
    network_service: NetworkService, networks: dict[str, dict[str, Any]]
) -> None:
    mine, shared = networks["alice"]["id"], networks["shared"]["id"]
    with _client(network_service, "carol:alice", "reader") as reader:
        assert _names(reader) == ["alice's", "shared"]
        assert reader.get(f"/v2.0/networks/{mine}").status_code == 200
        _refused(reader.post("/v2.0/networks", json={"network": {"name": "x"}}))
        _refused(reader.put(f"/v2.0/networks/{mine}", json={"network": {"name": "y"}}))
        _refused(reader.delete(f"/v2.0/networks/{mine}"))
        subnet = {"subnet": {"network_id": mine, "ip_version": 4, "cidr": "10.0.0.0/24"}}
        _refused(reader.post("/v2.0/subnets", json=subnet))
        _refused(reader.post("/v2.0/ports", json={"port": {"network_id": mine}}))
        # Anyone who sees a shared network may make ports on it.
        assert _post(reader, "port", network_id=shared)["project_id"] == "alice"
    with _client(network_service, "alice", MEMBER_ROLES) as member:
        assert _post(member, "network", name="new")["project_id"] == "alice"
        renamed = member.put(f"/v2.0/networks/{mine}", json={"network": {"name": "y"}})
        assert renamed.status_code == 200, renamed.text
        assert _post(member, "port", network_id=mine)["project_id"] == "alice"
        _refused(member.get(f"/v2.0/networks/{networks['bob']['id']}"), 404)


def test_a_token_without_roles_sees_only_shared_networks(
    network_service: NetworkService, networks: dict[str, dict[str, Any]]
) -> None:
    with _client(network_service, "alice") as roleless:
        assert _names(roleless) == ["shared"]
        _refused(roleless.get(f"/v2.0/networks/{networks['alice']['id']}"), 404)
        _refused(roleless.post("/v2.0/networks", json={"network": {"name": "x"}}))


def test_qos_policies_take_an_admin(network_service: NetworkService) -> None:
    for roles in (MEMBER_ROLES, "manager,member,reader"):
        with _client(network_service, "alice", roles) as member:
            refused = member.post("/v2.0/qos/policies", json={"policy": {"name": "gold"}})
            _refused(refused)
    with _client(network_service, "admin") as admin:
        made = _post_policy(admin, "gold", project_id="alice")
        assert made["project_id"] == "alice"
        rule = admin.post(
            f"/v2.0/qos/policies/{made['id']}/bandwidth_limit_rules",
            json={"bandwidth_limit_rule": {"max_kbps": 1000}},
        )
        assert rule.status_code == 201, rule.text
    path = f"/v2.0/qos/policies/{made['id']}"
    with _client(network_service, "alice", "manager,member,reader") as member:
        assert member.get(path).status_code == 200
        _refused(member.put(path, json={"policy": {"name": "silver"}}))
        _refused(member.delete(path))
        rules = f"{path}/bandwidth_limit_rules"
        assert [r["max_kbps"] for r in member.get(rules).json()["bandwidth_limit_rules"]] == [1000]
        _refused(member.post(rules, json={"bandwidth_limit_rule": {"max_kbps": 1}}))
        rule_path = f"{rules}/{rule.json()['bandwidth_limit_rule']['id']}"
        _refused(member.put(rule_path, json={"bandwidth_limit_rule": {"max_kbps": 1}}))
        _refused(member.delete(rule_path))


def _post_policy(client: httpx.Client, name: str, **more: Any) -> dict[str, Any]:
    answer = client.post("/v2.0/qos/policies", json={"policy": {"name": name, **more}})
    assert answer.status_code == 201, answer.text
    return answer.json()["policy"]  # type: ignore[no-any-return]


def test_legacy_defaults_let_any_token_of_a_project_change_it(
    network_db: Database, networks: dict[str, dict[str, Any]]
) -> None:
    legacy = NetworkService(settings=NetworkSettings(enforce_new_defaults=False), db=network_db)
    mine = networks["alice"]["id"]
    with _client(legacy, "alice") as roleless:
        assert _names(roleless) == ["alice's", "shared"]
        renamed = roleless.put(f"/v2.0/networks/{mine}", json={"network": {"name": "y"}})
        assert renamed.status_code == 200, renamed.text
        _refused(roleless.post("/v2.0/qos/policies", json={"policy": {"name": "gold"}}))
        _refused(roleless.get(f"/v2.0/networks/{networks['bob']['id']}"), 404)


def test_role_names_compare_case_insensitively(
    network_service: NetworkService, networks: dict[str, dict[str, Any]]
) -> None:
    with _client(network_service, "root:ops", "Admin") as admin:
        assert _names(admin) == ["alice's", "bob's", "shared"]
        assert admin.get("/v2.0/agents").status_code == 200
    with _client(network_service, "nova:service", "SERVICE") as service:
        port = _post(service, "port", network_id=networks["bob"]["id"], project_id="bob")
        assert "binding:vif_type" in port
    with _client(network_service, "alice", "Member,Reader") as member:
        assert _names(member) == ["alice's", "shared"]
        assert _post(member, "network", name="new")["project_id"] == "alice"
