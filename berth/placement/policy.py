"""Who may do what: Placement's default policy rules and the enforcer that applies them.

Rule names, check strings, scope types and legacy (deprecated) defaults are OpenStack Placement's, so
an operator's existing placement policy file means the same here. Evaluation is oslo.policy's own.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from berth.common.context import RequestContext
from berth.config import PlacementSettings
from berth.placement.exceptions import Forbidden

__all__ = ["PolicyEnforcer", "default_rules", "sample_policy_yaml"]

LOG = logging.getLogger(__name__)

ADMIN_OR_SERVICE = "rule:admin_or_service_api"
SERVICE = "rule:service_api"
ADMIN_OR_PROJECT_READER_OR_SERVICE = "rule:admin_or_project_reader_or_service_api"

# Until the secure-RBAC defaults (Wallaby, "W") every base rule was plain "role:admin". Declaring it
# as the deprecated rule makes oslo.policy OR it into the new check string while
# enforce_new_defaults is off. The name "rule:admin_api" is upstream's; being no real rule name, it
# can never match a policy-file key, so only that OR behaviour applies.
_LEGACY_ADMIN = policy.DeprecatedRule(
    name="rule:admin_api",
    check_str="role:admin",
    deprecated_reason=(
        "Placement now has scope-aware defaults that tell admin, service and project reader "
        "apart; the admin-only legacy default is evaluated only while enforce_new_defaults is off."
    ),
    deprecated_since="W",
)

_BASE_RULES: tuple[policy.RuleDefault, ...] = (
    policy.RuleDefault(
        "admin_api",
        "role:admin",
        description="Callers holding the admin role.",
        scope_types=["project"],
    ),
    policy.RuleDefault(
        "service_api",
        "role:service",
        description="Other OpenStack services calling Placement on their own behalf.",
        scope_types=["project"],
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "admin_or_service_api",
        "role:admin or role:service",
        description="Admins or services: the default for nearly every Placement API.",
        scope_types=["project"],
        deprecated_rule=_LEGACY_ADMIN,
    ),
    # No scope types: upstream leaves this building block unscoped; the rules using it carry scope.
    policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        description="Readers of the project that the target belongs to.",
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "admin_or_project_reader_or_service_api",
        "role:admin or rule:project_reader_api or role:service",
        description="Admins, services, or readers of the target's own project.",
        scope_types=["project"],
        deprecated_rule=_LEGACY_ADMIN,
    ),
)


def _api_rule(
    name: str, check_str: str, description: str, *operations: str
) -> policy.DocumentedRuleDefault:
    """A project-scoped rule guarding ``operations``, each written ``"METHOD /path"``."""
    ops = [dict(zip(("method", "path"), op.split(" ", 1), strict=True)) for op in operations]
    return policy.DocumentedRuleDefault(
        name=name,
        check_str=check_str,
        description=description,
        operations=ops,
        scope_types=["project"],
    )


_RP = "/resource_providers/{uuid}"

# In upstream's order, so a generated sample diffs cleanly against placement's.
_API_RULES: tuple[policy.DocumentedRuleDefault, ...] = (
    _api_rule(
        "placement:resource_providers:list",
        ADMIN_OR_SERVICE,
        "List or search resource providers.",
        "GET /resource_providers",
    ),
    _api_rule(
        "placement:resource_providers:create",
        ADMIN_OR_SERVICE,
        "Create a resource provider.",
        "POST /resource_providers",
    ),
    _api_rule(
        "placement:resource_providers:show",
        ADMIN_OR_SERVICE,
        "Show one resource provider.",
        f"GET {_RP}",
    ),
    _api_rule(
        "placement:resource_providers:update",
        ADMIN_OR_SERVICE,
        "Rename or re-parent a resource provider.",
        f"PUT {_RP}",
    ),
    _api_rule(
        "placement:resource_providers:delete",
        ADMIN_OR_SERVICE,
        "Delete a resource provider.",
        f"DELETE {_RP}",
    ),
    _api_rule(
        "placement:resource_classes:list",
        ADMIN_OR_SERVICE,
        "List the resource classes.",
        "GET /resource_classes",
    ),
    _api_rule(
        "placement:resource_classes:create",
        ADMIN_OR_SERVICE,
        "Create a custom resource class.",
        "POST /resource_classes",
    ),
    _api_rule(
        "placement:resource_classes:show",
        ADMIN_OR_SERVICE,
        "Show one resource class.",
        "GET /resource_classes/{name}",
    ),
    _api_rule(
        "placement:resource_classes:update",
        ADMIN_OR_SERVICE,
        "Create or confirm a custom resource class by name.",
        "PUT /resource_classes/{name}",
    ),
    _api_rule(
        "placement:resource_classes:delete",
        ADMIN_OR_SERVICE,
        "Delete a custom resource class.",
        "DELETE /resource_classes/{name}",
    ),
    _api_rule(
        "placement:resource_providers:inventories:list",
        ADMIN_OR_SERVICE,
        "List a provider's inventories.",
        f"GET {_RP}/inventories",
    ),
    _api_rule(
        "placement:resource_providers:inventories:create",
        ADMIN_OR_SERVICE,
        "Add one inventory to a provider.",
        f"POST {_RP}/inventories",
    ),
    _api_rule(
        "placement:resource_providers:inventories:show",
        ADMIN_OR_SERVICE,
        "Show a provider's inventory of one resource class.",
        f"GET {_RP}/inventories/{{resource_class}}",
    ),
    _api_rule(
        "placement:resource_providers:inventories:update",
        ADMIN_OR_SERVICE,
        "Replace all of a provider's inventories, or one of them.",
        f"PUT {_RP}/inventories",
        f"PUT {_RP}/inventories/{{resource_class}}",
    ),
    _api_rule(
        "placement:resource_providers:inventories:delete",
        ADMIN_OR_SERVICE,
        "Remove all of a provider's inventories, or one of them.",
        f"DELETE {_RP}/inventories",
        f"DELETE {_RP}/inventories/{{resource_class}}",
    ),
    _api_rule(
        "placement:resource_providers:aggregates:list",
        ADMIN_OR_SERVICE,
        "List the aggregates a provider belongs to.",
        f"GET {_RP}/aggregates",
    ),
    _api_rule(
        "placement:resource_providers:aggregates:update",
        ADMIN_OR_SERVICE,
        "Set the aggregates a provider belongs to.",
        f"PUT {_RP}/aggregates",
    ),
    _api_rule(
        "placement:resource_providers:usages",
        ADMIN_OR_SERVICE,
        "Show how much of each resource class is consumed on a provider.",
        f"GET {_RP}/usages",
    ),
    _api_rule(
        "placement:usages",
        # Project readers may see their own project's totals; the handler passes the queried
        # project_id as the target, so other projects stay admin- or service-only.
        ADMIN_OR_PROJECT_READER_OR_SERVICE,
        "Show a project's (or a project user's) total consumption.",
        "GET /usages",
    ),
    _api_rule(
        "placement:traits:list",
        ADMIN_OR_SERVICE,
        "List or filter the traits.",
        "GET /traits",
    ),
    _api_rule(
        "placement:traits:show",
        ADMIN_OR_SERVICE,
        "Check that one trait exists.",
        "GET /traits/{name}",
    ),
    _api_rule(
        "placement:traits:update",
        ADMIN_OR_SERVICE,
        "Create a custom trait.",
        "PUT /traits/{name}",
    ),
    _api_rule(
        "placement:traits:delete",
        ADMIN_OR_SERVICE,
        "Delete a custom trait.",
        "DELETE /traits/{name}",
    ),
    _api_rule(
        "placement:resource_providers:traits:list",
        ADMIN_OR_SERVICE,
        "List the traits of a provider.",
        f"GET {_RP}/traits",
    ),
    _api_rule(
        "placement:resource_providers:traits:update",
        ADMIN_OR_SERVICE,
        "Set the traits of a provider.",
        f"PUT {_RP}/traits",
    ),
    _api_rule(
        "placement:resource_providers:traits:delete",
        ADMIN_OR_SERVICE,
        "Remove every trait from a provider.",
        f"DELETE {_RP}/traits",
    ),
    _api_rule(
        "placement:allocations:manage",
        ADMIN_OR_SERVICE,
        "Write the allocations of several consumers at once.",
        "POST /allocations",
    ),
    _api_rule(
        "placement:allocations:list",
        ADMIN_OR_SERVICE,
        "Show a consumer's allocations.",
        "GET /allocations/{consumer_uuid}",
    ),
    _api_rule(
        "placement:allocations:update",
        ADMIN_OR_SERVICE,
        "Replace a consumer's allocations.",
        "PUT /allocations/{consumer_uuid}",
    ),
    _api_rule(
        "placement:allocations:delete",
        ADMIN_OR_SERVICE,
        "Remove a consumer's allocations.",
        "DELETE /allocations/{consumer_uuid}",
    ),
    _api_rule(
        "placement:resource_providers:allocations:list",
        ADMIN_OR_SERVICE,
        "Show the allocations made against one provider.",
        f"GET {_RP}/allocations",
    ),
    _api_rule(
        "placement:allocation_candidates:list",
        ADMIN_OR_SERVICE,
        "Search for allocation requests that would satisfy a resource request.",
        "GET /allocation_candidates",
    ),
    _api_rule(
        "placement:reshaper:reshape",
        SERVICE,
        "Move inventories and allocations between providers in one atomic step.",
        "POST /reshaper",
    ),
)


def default_rules() -> list[policy.RuleDefault]:
    """Every rule Placement registers, base rules first, as oslo.policy defaults."""
    return [*_BASE_RULES, *_API_RULES]


class PolicyEnforcer:
    """Applies the default rules, and the operator's policy file over them, to each request.

    Refusals, including a token of the wrong scope, raise ``Forbidden``. A rule name that was never
    registered raises oslo.policy's ``PolicyNotRegistered``: that is a bug in the caller.
    """

    def __init__(self, settings: PlacementSettings) -> None:
        conf = cfg.ConfigOpts()  # our own, so nothing else in the process can change policy
        policy_opts.set_defaults(conf)  # registers the [oslo_policy] options on it
        # No command line, config files or OS_* variables: Berth's settings are the only source.
        conf(args=[], default_config_files=[], default_config_dirs=[], use_env=False)
        group = "oslo_policy"
        conf.set_override("policy_file", _policy_path(settings.policy_file), group)
        conf.set_override("policy_dirs", [], group)  # one file, as the settings describe
        conf.set_override("enforce_new_defaults", settings.enforce_new_defaults, group)
        if "enforce_scope" in conf.oslo_policy:  # oslo.policy < 6 only; see _without_scope
            conf.set_override("enforce_scope", settings.enforce_scope, group)

        self._enforcer = policy.Enforcer(conf)
        # While legacy defaults apply, oslo.policy would warn once per deprecated rule at every
        # (re)load that its default is changing. That is the normal, documented state of an
        # enforce_new_defaults=false deployment, not something an operator must act on (upstream
        # silences it the same way), and warnings are errors in our tests.
        self._enforcer.suppress_default_change_warnings = True
        rules = default_rules()
        if not settings.enforce_scope:
            rules = [_without_scope(rule) for rule in rules]
        self._enforcer.register_defaults(rules)
        # Load now so that a malformed policy file fails at startup, not on the first request.
        self._enforcer.load_rules()
        # oslo.policy re-reads the policy file when it changes and rebuilds its rule table in
        # place; the lock keeps a check on another worker thread from seeing it half-built.
        self._lock = threading.Lock()

    def authorize(
        self,
        context: RequestContext,
        rule_name: str,
        target: Mapping[str, Any] | None = None,
    ) -> None:
        """Return if ``context`` may perform ``rule_name`` on ``target``; raise ``Forbidden`` if not.

        ``target`` defaults to the caller's own project and user, as upstream's does; pass the
        owner of the thing acted on when it can differ (``GET /usages?project_id=``).
        """
        if target is None:
            target = {"project_id": context.project_id, "user_id": context.user_id}
        # credentials() carries system_scope; oslo.policy maps it to the system scope itself.
        creds = context.credentials()
        with self._lock:
            # do_raise=False: a failed check and a token of the wrong scope both come back falsy
            # (instead of PolicyNotAuthorized / InvalidScope), so both become the same 403.
            allowed = self._enforcer.authorize(rule_name, dict(target), creds, do_raise=False)
        if not allowed:
            LOG.debug("Policy %s refused credentials %s", rule_name, creds)
            raise Forbidden(f"Policy does not allow {rule_name} to be performed.")


def _policy_path(policy_file: str | None) -> str:
    """An absolute path for oslo.policy, which would otherwise search ~/ and /etc/ for the name."""
    if policy_file is None:
        # An empty rule file: without one, oslo.policy would pick up any policy.yaml it finds in
        # ~/ or /etc/, which Berth was never told about.
        return os.devnull
    path = Path(policy_file).expanduser().resolve()
    if not path.is_file():
        # oslo.policy would silently fall back to the defaults; an operator who named a file
        # should learn at startup that it is not being applied.
        raise FileNotFoundError(f"policy_file {policy_file!r} does not exist")
    return str(path)


def _without_scope(rule: policy.RuleDefault) -> policy.RuleDefault:
    """``rule`` without scope types, so oslo.policy evaluates it for a token of any scope.

    oslo.policy 6 checks scope whenever a rule declares scope types (it dropped its enforce_scope
    option), so Berth's enforce_scope=false is expressed by registering the rules without them.
    """
    unscoped = copy.deepcopy(rule)
    unscoped.scope_types = None
    return unscoped


def sample_policy_yaml() -> str:
    """Every default rule as a commented-out YAML policy file; uncomment a line to override it."""
    lines = [
        "# Berth Placement policy defaults, generated by `berth policy sample`.",
        "# Uncomment a rule and change its check string to override it (any rule not named here",
        "# keeps its default). Point placement.policy_file at the result.",
        "",
    ]
    for rule in default_rules():
        lines.append(f"# {rule.description}")
        for op in getattr(rule, "operations", []):
            lines.append(f"# {op['method']:<7}{op['path']}")
        if rule.scope_types:
            lines.append(f"# Intended scope(s): {', '.join(rule.scope_types)}")
        if rule.deprecated_rule is not None:
            lines.append(
                f"# Legacy default, also allowed while enforce_new_defaults is false: "
                f"{rule.deprecated_rule.check_str}"
            )
        # JSON strings are valid YAML scalars and quote check strings safely.
        lines.append(f"#{json.dumps(rule.name)}: {json.dumps(rule.check_str)}")
        lines.append("")
    return "\n".join(lines)
