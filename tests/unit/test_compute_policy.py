"""Compute's policy: upstream Nova's rule names and defaults, and a policy file overriding them."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2wsgi import ASGIMiddleware

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
    assert _enforcer().check(roleless, "os_compute_api:servers:create")
    assert not _enforcer(enforce_new_defaults=True).check(roleless, "os_compute_api:servers:create")


def test_reader_reads_but_does_not_write_under_new_defaults() -> None:
    enforcer = _enforcer(enforce_new_defaults=True)
    assert enforcer.check(READER, "os_compute_api:servers:show")
    assert not enforcer.check(READER, "os_compute_api:servers:delete")


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
