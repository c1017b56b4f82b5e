"""Who may do what: Placement's default policy rules and the enforcer that applies them.

Rule names, check strings, scope types and legacy (deprecated) defaults are OpenStack Placement's, so
an operator's existing placement policy file means the same here. Evaluation is oslo.policy's own,
through the enforcer shared with the other services (``berth.common.policy``).
"""

from __future__ import annotations

from oslo_policy import policy

from berth.common import policy as common_policy
from berth.config import PlacementSettings
from berth.placement.exceptions import Forbidden

__all__ = ["PolicyEnforcer", "default_rules", "sample_policy_yaml"]

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


class PolicyEnforcer(common_policy.PolicyEnforcer):
    """Placement's rules, and the operator's policy file over them; refusals are ``Forbidden``."""

    forbidden = Forbidden

    def __init__(self, settings: PlacementSettings) -> None:
        super().__init__(settings, default_rules())


def sample_policy_yaml() -> str:
    """Every default rule as a commented-out YAML policy file; uncomment a line to override it."""
    return common_policy.sample_policy_yaml("Placement", "placement.policy_file", default_rules())
