"""The policy layer: upstream's rules, legacy vs new defaults, scope, and policy-file overrides."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest
import yaml
from oslo_policy import policy as oslo_policy

from berth.common.context import RequestContext
from berth.config import PlacementSettings
from berth.placement.exceptions import Forbidden
from berth.placement.policy import PolicyEnforcer, default_rules, sample_policy_yaml

ADMIN_OR_SERVICE = "rule:admin_or_service_api"

# Upstream placement's rules (placement/policies/*.py): name -> (check string, scope types).
UPSTREAM_RULES: dict[str, tuple[str, list[str] | None]] = {
    "admin_api": ("role:admin", ["project"]),
    "service_api": ("role:service", ["project"]),
    "admin_or_service_api": ("role:admin or role:service", ["project"]),
    "project_reader_api": ("role:reader and project_id:%(project_id)s", None),
    "admin_or_project_reader_or_service_api": (
        "role:admin or rule:project_reader_api or role:service",
        ["project"],
    ),
    **{
        f"placement:{name}": (ADMIN_OR_SERVICE, ["project"])
        for name in [
            "resource_providers:list",
            "resource_providers:create",
            "resource_providers:show",
            "resource_providers:update",
            "resource_providers:delete",
            "resource_classes:list",
            "resource_classes:create",
            "resource_classes:show",
            "resource_classes:update",
            "resource_classes:delete",
            "resource_providers:inventories:list",
            "resource_providers:inventories:create",
            "resource_providers:inventories:show",
            "resource_providers:inventories:update",
            "resource_providers:inventories:delete",
            "resource_providers:aggregates:list",
            "resource_providers:aggregates:update",
            "resource_providers:usages",
            "traits:list",
            "traits:show",
            "traits:update",
            "traits:delete",
            "resource_providers:traits:list",
            "resource_providers:traits:update",
            "resource_providers:traits:delete",
            "allocations:manage",
            "allocations:list",
            "allocations:update",
            "allocations:delete",
            "resource_providers:allocations:list",
            "allocation_candidates:list",
        ]
    },
    "placement:usages": ("rule:admin_or_project_reader_or_service_api", ["project"]),
    "placement:reshaper:reshape": ("rule:service_api", ["project"]),
}
ADMIN_OR_SERVICE_RULES = [n for n, (c, _) in UPSTREAM_RULES.items() if c == ADMIN_OR_SERVICE]

# Keystone expands implied roles into the token: admin implies member implies reader.
PROJECT_ADMIN = RequestContext("u-admin", "p1", ("admin", "member", "reader"))
SERVICE = RequestContext("u-nova", "service", ("service",))
MEMBER = RequestContext("u-member", "p1", ("member", "reader"))
READER = RequestContext("u-reader", "p1", ("reader",))
SYSTEM_ADMIN = RequestContext("u-sys", None, ("admin", "member", "reader"), system_scope="all")


def _enforcer(**settings: Any) -> PolicyEnforcer:
    return PolicyEnforcer(PlacementSettings(**settings))


def _allowed(enforcer: PolicyEnforcer, ctx: RequestContext, rule: str, **target: Any) -> bool:
    try:
        enforcer.authorize(ctx, rule, target or None)
    except Forbidden:
        return False
    return True


def test_rules_are_exactly_upstreams() -> None:
    registered = {r.name: (r.check_str, r.scope_types) for r in default_rules()}
    assert registered == UPSTREAM_RULES


def test_base_rules_but_admin_api_fall_back_to_legacy_admin() -> None:
    legacy = {r.name: r.deprecated_rule for r in default_rules() if r.deprecated_rule}
    assert set(legacy) == {
        "service_api",
        "admin_or_service_api",
        "project_reader_api",
        "admin_or_project_reader_or_service_api",
    }
    assert {d.check_str for d in legacy.values()} == {"role:admin"}


@pytest.mark.parametrize("new_defaults", [False, True])
@pytest.mark.parametrize("rule", ["admin_api", *ADMIN_OR_SERVICE_RULES])
def test_admin_allowed_member_refused(rule: str, new_defaults: bool) -> None:
    enforcer = _enforcer(enforce_new_defaults=new_defaults)
    assert _allowed(enforcer, PROJECT_ADMIN, rule)
    assert not _allowed(enforcer, MEMBER, rule)
    assert not _allowed(enforcer, READER, rule)


@pytest.mark.parametrize("new_defaults", [False, True])
def test_service_allowed_on_admin_or_service_rules(new_defaults: bool) -> None:
    enforcer = _enforcer(enforce_new_defaults=new_defaults)
    for rule in ADMIN_OR_SERVICE_RULES:
        assert _allowed(enforcer, SERVICE, rule), rule
    assert not _allowed(enforcer, SERVICE, "admin_api")


def test_reshaper_is_service_only_under_new_defaults() -> None:
    legacy, new = _enforcer(enforce_new_defaults=False), _enforcer(enforce_new_defaults=True)
    assert _allowed(legacy, SERVICE, "placement:reshaper:reshape")
    assert _allowed(legacy, PROJECT_ADMIN, "placement:reshaper:reshape")
    assert _allowed(new, SERVICE, "placement:reshaper:reshape")
    assert not _allowed(new, PROJECT_ADMIN, "placement:reshaper:reshape")


@pytest.mark.parametrize("new_defaults", [False, True])
@pytest.mark.parametrize("ctx", [MEMBER, READER], ids=["member", "reader"])
def test_project_reader_sees_only_own_project_usages(
    ctx: RequestContext, new_defaults: bool
) -> None:
    enforcer = _enforcer(enforce_new_defaults=new_defaults)
    assert _allowed(enforcer, ctx, "placement:usages", project_id="p1")
    assert not _allowed(enforcer, ctx, "placement:usages", project_id="p2")
    assert _allowed(enforcer, PROJECT_ADMIN, "placement:usages", project_id="p2")
    assert _allowed(enforcer, SERVICE, "placement:usages", project_id="p2")


def test_default_target_is_the_callers_own_project() -> None:
    enforcer = _enforcer(enforce_new_defaults=True)
    enforcer.authorize(READER, "placement:usages")  # target defaults to project p1


def test_refusal_is_forbidden_naming_the_rule() -> None:
    with pytest.raises(Forbidden) as exc:
        _enforcer().authorize(MEMBER, "placement:resource_providers:list")
    assert str(exc.value) == (
        "Policy does not allow placement:resource_providers:list to be performed."
    )


def test_unregistered_rule_is_a_programming_error() -> None:
    with pytest.raises(oslo_policy.PolicyNotRegistered):
        _enforcer().authorize(PROJECT_ADMIN, "placement:no_such_rule")


@pytest.mark.parametrize("new_defaults", [False, True])
def test_enforce_scope_refuses_system_token_on_project_rules(new_defaults: bool) -> None:
    scoped = _enforcer(enforce_scope=True, enforce_new_defaults=new_defaults)
    for rule in ADMIN_OR_SERVICE_RULES:
        assert not _allowed(scoped, SYSTEM_ADMIN, rule), rule
        assert _allowed(scoped, PROJECT_ADMIN, rule), rule


def test_defaults_are_upstreams() -> None:
    # Placement 16.0.0 leaves oslo.policy's defaults: new defaults only, scope always checked.
    settings = PlacementSettings()
    assert settings.enforce_new_defaults and settings.enforce_scope
    enforcer = _enforcer()
    for rule in UPSTREAM_RULES:
        assert not _allowed(enforcer, SYSTEM_ADMIN, rule, project_id="p1"), rule
    for rule in ["admin_api", *ADMIN_OR_SERVICE_RULES]:
        assert _allowed(enforcer, PROJECT_ADMIN, rule), rule
    assert not _allowed(enforcer, PROJECT_ADMIN, "placement:reshaper:reshape")
    assert _allowed(enforcer, SERVICE, "placement:reshaper:reshape")


def test_role_names_compare_case_insensitively() -> None:
    enforcer = _enforcer()
    shouting = RequestContext("u-admin", "p1", ("ADMIN",))
    assert _allowed(enforcer, shouting, "placement:resource_providers:list")
    assert shouting.is_admin and shouting.has_role("Admin")
    reader = RequestContext("u-reader", "p1", ("Reader",))
    assert _allowed(enforcer, reader, "placement:usages", project_id="p1")


def test_scope_ignored_when_enforce_scope_off() -> None:
    unscoped = _enforcer(enforce_scope=False)
    assert _allowed(unscoped, SYSTEM_ADMIN, "placement:resource_providers:list")


def test_system_scope_reaches_oslo_as_system_token() -> None:
    # A system-scoped caller whose role would pass must be refused on scope alone, which only
    # happens if oslo.policy saw system_scope='all' in the credentials.
    ctx = RequestContext("u", None, ("admin",), system_scope="all")
    assert _allowed(_enforcer(enforce_scope=False), ctx, "admin_api")
    assert not _allowed(_enforcer(enforce_scope=True), ctx, "admin_api")


@pytest.mark.parametrize("suffix", ["yaml", "json"])
def test_policy_file_overrides_a_rule(tmp_path: Path, suffix: str) -> None:
    policy_file = tmp_path / f"policy.{suffix}"
    policy_file.write_text(json.dumps({"placement:resource_providers:list": "role:member"}))
    enforcer = _enforcer(policy_file=str(policy_file))
    assert _allowed(enforcer, MEMBER, "placement:resource_providers:list")
    assert not _allowed(enforcer, SERVICE, "placement:resource_providers:list")
    # Rules the file does not name keep their defaults.
    assert not _allowed(enforcer, MEMBER, "placement:resource_providers:create")


def test_a_changed_policy_file_applies_to_the_next_check(tmp_path: Path) -> None:
    # Decisions are remembered; the change of the file must still be seen at once.
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"placement:resource_providers:list": "role:member"\n')
    enforcer = _enforcer(policy_file=str(policy_file))
    for _ in range(2):
        assert _allowed(enforcer, MEMBER, "placement:resource_providers:list")
    policy_file.write_text('"placement:resource_providers:list": "role:admin"\n')
    assert not _allowed(enforcer, MEMBER, "placement:resource_providers:list")
    assert _allowed(enforcer, PROJECT_ADMIN, "placement:resource_providers:list")


def test_policy_file_overriding_a_base_rule_changes_every_rule_using_it(tmp_path: Path) -> None:
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text('"admin_or_service_api": "role:admin"\n')
    enforcer = _enforcer(policy_file=str(policy_file))
    assert not _allowed(enforcer, SERVICE, "placement:allocations:manage")
    assert _allowed(enforcer, PROJECT_ADMIN, "placement:allocations:manage")


def test_missing_policy_file_fails_at_startup(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError):
        _enforcer(policy_file=str(tmp_path / "absent.yaml"))


def test_legacy_defaults_emit_no_warnings() -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        enforcer = _enforcer(enforce_new_defaults=False)
        enforcer.authorize(PROJECT_ADMIN, "placement:resource_providers:list")
    assert [str(w.message) for w in caught] == []


def test_sample_lists_every_rule_with_its_default() -> None:
    uncommented = "\n".join(
        line[1:] for line in sample_policy_yaml().splitlines() if line.startswith('#"')
    )
    assert yaml.safe_load(uncommented) == {r.name: r.check_str for r in default_rules()}


def test_sample_uncommented_is_a_working_policy_file(tmp_path: Path) -> None:
    text = "\n".join(
        line[1:] if line.startswith('#"') else line for line in sample_policy_yaml().splitlines()
    )
    policy_file = tmp_path / "policy.yaml"
    policy_file.write_text(text)
    enforcer = _enforcer(policy_file=str(policy_file))
    assert _allowed(enforcer, PROJECT_ADMIN, "placement:resource_providers:list")
    assert not _allowed(enforcer, MEMBER, "placement:resource_providers:list")
    # Written out in full, the rules are the new defaults: no legacy admin fallback.
    assert not _allowed(enforcer, PROJECT_ADMIN, "placement:reshaper:reshape")


def test_operator_doc_lists_every_rule() -> None:
    doc = (Path(__file__).parents[2] / "docs" / "policy.md").read_text()
    missing = [r.name for r in default_rules() if f"`{r.name}`" not in doc]
    assert missing == []
