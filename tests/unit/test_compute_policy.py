"""Compute's policy: upstream Nova's rule names and defaults, and a policy file overriding them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2wsgi import ASGIMiddleware
from oslo_policy import policy as oslo_policy

from berth.common.context import RequestContext
from berth.common.db import Database
from berth.compute.api.app import build_app
from berth.compute.db import api_schema, migrate
from berth.compute.exceptions import Forbidden
from berth.compute.policy import ComputePolicyEnforcer, default_rules, sample_policy_yaml
from berth.compute.service import ComputeService
from berth.config import ComputeSettings
from tests import dbs
from tests.rpc_fakes import NoMessages

ADMIN = RequestContext(user_id="admin", project_id="admin", roles=("admin",))
MEMBER = RequestContext(user_id="alice", project_id="p1", roles=("member", "reader"))
READER = RequestContext(user_id="carol", project_id="p1", roles=("reader",))
OTHER = RequestContext(user_id="bob", project_id="p2", roles=("member", "reader"))
SYSTEM_ADMIN = RequestContext(
    user_id="root", project_id=None, roles=("admin", "member", "reader"), system_scope="all"
)

ADMIN_RULES = [
    "servers:index:get_all_tenants",
    "os-extended-server-attributes",
    "os-flavor-manage:create",
    "os-flavor-extra-specs:create",
    "os-flavor-access:add_tenant_access",
    "os-aggregates:index",
    "os-aggregates:set_metadata",
    "os-services:list",
    "os-hypervisors:list",
    "os-hypervisors:statistics",
    "os-availability-zone:detail",
    "os-server-groups:index:all_projects",
]
PROJECT_RULES = [
    "servers:index",
    "servers:detail",
    "servers:show",
    "servers:create",
    "servers:delete",
    "os-flavor-extra-specs:index",
    "os-server-groups:index",
    "os-server-groups:create",
]


def _enforcer(**settings: object) -> ComputePolicyEnforcer:
    return ComputePolicyEnforcer(ComputeSettings(**settings))  # type: ignore[arg-type]


def test_rule_names_are_upstreams() -> None:
    names = {rule.name for rule in default_rules()}
    assert {f"os_compute_api:{r}" for r in ADMIN_RULES + PROJECT_RULES} <= names
    assert {"admin_api", "project_reader_api", "project_member_api", "admin_or_owner"} <= names
    assert "os_compute_api:os-hypervisors:list" in sample_policy_yaml()


@pytest.mark.parametrize("new_defaults", [False, True])
@pytest.mark.parametrize("rule", ADMIN_RULES)
def test_admin_rules(rule: str, new_defaults: bool) -> None:
    enforcer = _enforcer(enforce_new_defaults=new_defaults)
    enforcer.authorize(ADMIN, f"os_compute_api:{rule}")
    with pytest.raises(Forbidden, match=f"os_compute_api:{rule}"):
        enforcer.authorize(MEMBER, f"os_compute_api:{rule}")


@pytest.mark.parametrize("new_defaults", [False, True])
@pytest.mark.parametrize("rule", PROJECT_RULES)
def test_project_rules(rule: str, new_defaults: bool) -> None:
    enforcer = _enforcer(enforce_new_defaults=new_defaults)
    name = f"os_compute_api:{rule}"
    own = {"project_id": "p1"}
    enforcer.authorize(MEMBER, name, own)
    enforcer.authorize(ADMIN, name, own)
    assert not enforcer.check(OTHER, name, own)


def test_legacy_defaults_let_a_roleless_owner_in_new_ones_do_not() -> None:
    roleless = RequestContext(user_id="dave", project_id="p1")
    legacy = _enforcer(enforce_new_defaults=False)
    assert legacy.check(roleless, "os_compute_api:servers:create")
    assert not _enforcer().check(roleless, "os_compute_api:servers:create")


def test_reader_reads_but_does_not_write_under_new_defaults() -> None:
    enforcer = _enforcer(enforce_new_defaults=True)
    assert enforcer.check(READER, "os_compute_api:servers:show")
    assert not enforcer.check(READER, "os_compute_api:servers:delete")


def test_defaults_are_upstreams() -> None:
    # oslo.policy 6 defaults enforce_new_defaults to true and always checks scope; Nova
    # changes neither.
    settings = ComputeSettings()
    assert settings.enforce_new_defaults and settings.enforce_scope


def test_admin_rules_are_context_is_admin_as_upstreams() -> None:
    rules = {rule.name: rule for rule in default_rules()}
    for rule in ADMIN_RULES:
        assert rules[f"os_compute_api:{rule}"].check_str == "rule:context_is_admin", rule
    assert rules["admin_api"].check_str == "is_admin:True"
    assert all(rule.scope_types == ["project"] for rule in _api_rules())


@pytest.mark.parametrize("rule", ADMIN_RULES + PROJECT_RULES)
def test_system_scoped_admin_is_refused_by_default(rule: str) -> None:
    enforcer = _enforcer()
    name = f"os_compute_api:{rule}"
    assert not enforcer.check(SYSTEM_ADMIN, name, {"project_id": "p1"})
    assert enforcer.check(ADMIN, name, {"project_id": "p1"})


def test_enforce_scope_off_lets_a_system_scoped_admin_in() -> None:
    unscoped = _enforcer(enforce_scope=False)
    assert unscoped.check(SYSTEM_ADMIN, "os_compute_api:os-hypervisors:list")
    assert unscoped.check(SYSTEM_ADMIN, "os_compute_api:servers:index:get_all_tenants")


def test_member_writes_reader_only_reads_roleless_nothing() -> None:
    enforcer, own = _enforcer(), {"project_id": "p1"}
    roleless = RequestContext(user_id="dave", project_id="p1")
    for ctx, reads, writes in (
        (MEMBER, True, True),
        (READER, True, False),
        (roleless, False, False),
    ):
        assert enforcer.check(ctx, "os_compute_api:servers:show", own) == reads
        assert enforcer.check(ctx, "os_compute_api:os-server-groups:index", own) == reads
        assert enforcer.check(ctx, "os_compute_api:servers:create", own) == writes
        assert enforcer.check(ctx, "os_compute_api:os-server-groups:delete", own) == writes


def test_role_names_compare_case_insensitively() -> None:
    enforcer = _enforcer()
    shouting = RequestContext(user_id="alice", project_id="p1", roles=("Member", "READER"))
    assert enforcer.check(shouting, "os_compute_api:servers:create", {"project_id": "p1"})
    assert enforcer.check(
        RequestContext(user_id="root", project_id="p1", roles=("Admin",)),
        "os_compute_api:os-hypervisors:list",
    )


def test_overriding_context_is_admin_changes_every_admin_rule(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"context_is_admin": "role:admin or role:cloud_operator"\n')
    enforcer = _enforcer(policy_file=str(policy_file))
    operator = RequestContext(user_id="op", project_id="ops", roles=("cloud_operator",))
    for rule in ADMIN_RULES:
        assert enforcer.check(operator, f"os_compute_api:{rule}"), rule


def test_a_policy_file_overriding_a_pre_rbac_rule_name_still_applies(tmp_path: Path) -> None:
    # Upstream's hypervisor rules replaced one "os_compute_api:os-hypervisors" rule; a policy
    # file that still names it keeps working (oslo.policy warns that the name is deprecated).
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"os_compute_api:os-hypervisors": "role:member"\n')
    with pytest.warns(UserWarning, match="os_compute_api:os-hypervisors"):
        enforcer = _enforcer(policy_file=str(policy_file))
    assert enforcer.check(MEMBER, "os_compute_api:os-hypervisors:list")
    assert enforcer.check(MEMBER, "os_compute_api:os-hypervisors:statistics")
    assert not enforcer.check(MEMBER, "os_compute_api:os-services:list")


def _api_rules() -> list[oslo_policy.RuleDefault]:
    return [rule for rule in default_rules() if rule.name.startswith("os_compute_api:")]


def test_availability_zone_list_is_anyone() -> None:
    nobody = RequestContext(user_id="x", project_id=None)
    _enforcer(enforce_new_defaults=True).authorize(
        nobody, "os_compute_api:os-availability-zone:list"
    )


@pytest.fixture
def api_db(tmp_path: Path) -> Iterator[Database]:
    db = dbs.fresh_migrated_database(
        "sqlite", "main", tmp_path, "_capi", migrate.sync_api, api_schema.metadata
    )
    yield db
    db.dispose()


def test_policy_file_lets_a_member_list_hypervisors_through_the_api(
    tmp_path: Path, api_db: Database
) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"os_compute_api:os-hypervisors:list": "role:member"\n')
    headers = {"x-auth-token": "alice:p1", "x-roles": "member"}

    def listing(settings: ComputeSettings, path: str = "/v2.1/os-hypervisors") -> httpx.Response:
        service = ComputeService(settings, api_db, NoMessages(), NoMessages())
        try:
            app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
            transport = httpx.WSGITransport(app=app)
            with httpx.Client(transport=transport, base_url="http://compute") as client:
                return client.get(path, headers=headers)
        finally:
            service.cells.dispose()

    refused = listing(ComputeSettings())
    assert refused.status_code == 403
    assert "os_compute_api:os-hypervisors:list" in refused.json()["forbidden"]["message"]
    allowed = listing(ComputeSettings(policy_file=str(policy_file)))
    assert allowed.status_code == 200, allowed.text
    assert allowed.json() == {"hypervisors": []}
    # Only the overridden rule changed: the details stay admin-only.
    detail = listing(ComputeSettings(policy_file=str(policy_file)), "/v2.1/os-hypervisors/detail")
    assert detail.status_code == 403


def test_missing_policy_file_fails_at_startup(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _enforcer(policy_file=str(tmp_path / "absent.yaml"))


def _answer(
    api_db: Database,
    headers: dict[str, str],
    method: str = "GET",
    path: str = "/v2.1/os-hypervisors",
    settings: ComputeSettings | None = None,
    body: dict[str, object] | None = None,
) -> httpx.Response:
    service = ComputeService(settings or ComputeSettings(), api_db, NoMessages(), NoMessages())
    try:
        app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
        transport = httpx.WSGITransport(app=app)
        with httpx.Client(transport=transport, base_url="http://compute") as client:
            return client.request(method, path, headers=headers, json=body)
    finally:
        service.cells.dispose()


def test_through_the_api_scope_and_roles_decide_as_upstreams(api_db: Database) -> None:
    system_admin = {
        "x-auth-token": "root",
        "x-roles": "admin,member,reader",
        "openstack-system-scope": "all",
    }
    project_admin = {"x-auth-token": "root:ops", "x-roles": "admin,member,reader"}
    assert _answer(api_db, system_admin).status_code == 403
    assert _answer(api_db, system_admin, path="/v2.1/servers").status_code == 403
    assert _answer(api_db, project_admin).status_code == 200
    unscoped = ComputeSettings(enforce_scope=False)
    assert _answer(api_db, system_admin, settings=unscoped).status_code == 200
    group = {"server_group": {"name": "g", "policies": ["affinity"]}}
    reader = {"x-auth-token": "carol:p1", "x-roles": "reader"}
    member = {"x-auth-token": "alice:p1", "x-roles": "Member,Reader"}
    assert _answer(api_db, reader, path="/v2.1/os-server-groups").status_code == 200
    refused = _answer(api_db, reader, "POST", "/v2.1/os-server-groups", body=group)
    assert refused.status_code == 403
    assert "os_compute_api:os-server-groups:create" in refused.json()["forbidden"]["message"]
    made = _answer(api_db, member, "POST", "/v2.1/os-server-groups", body=group)
    assert made.status_code == 200, made.text
