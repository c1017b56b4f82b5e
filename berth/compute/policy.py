"""Who may do what in the Compute API: upstream Nova's rule names and default check strings, and
the enforcer (``berth.common.policy``) that applies them with the operator's policy file over them.

Rule names, check strings, scope types and legacy (deprecated) defaults are Nova's
(``nova/policies/*.py``), so an operator's existing nova policy file means the same here for the
APIs Berth has. While ``enforce_new_defaults`` is off the project rules also accept upstream's
legacy ``admin_or_owner`` (any token of the target's project, or an admin).
"""

from __future__ import annotations

from oslo_policy import policy

from berth.common import policy as common_policy
from berth.compute.exceptions import Forbidden
from berth.config import ComputeSettings

__all__ = ["ComputePolicyEnforcer", "default_rules", "sample_policy_yaml"]

ADMIN = "rule:context_is_admin"
ANY = "@"
# Other services acting on Compute (upstream's service_api): a token with the service role.
SERVICE = "role:service"
PROJECT_MEMBER_OR_ADMIN = "rule:project_member_or_admin"
PROJECT_READER_OR_ADMIN = "rule:project_reader_or_admin"
# Key pairs are a user's, not a project's: upstream's default for every os-keypairs rule.
ADMIN_OR_KEYPAIR_USER = f"({ADMIN}) or user_id:%(user_id)s"

_REASON = (
    "Nova now has defaults that tell admin, project member and project reader apart; the legacy "
    "defaults are evaluated only while enforce_new_defaults is off."
)
# Upstream's RULE_ADMIN_OR_OWNER and RULE_ADMIN_API. Being written "rule:...", the names never
# match a policy-file key; only oslo.policy's OR of the legacy check string while
# enforce_new_defaults is off applies.
_LEGACY_ADMIN_OR_OWNER = policy.DeprecatedRule(
    name="rule:admin_or_owner",
    check_str="is_admin:True or project_id:%(project_id)s",
    deprecated_reason=_REASON,
    deprecated_since="21.0.0",
)
_LEGACY_ADMIN = policy.DeprecatedRule(
    name="rule:admin_api",
    check_str="is_admin:True",
    deprecated_reason=_REASON,
    deprecated_since="21.0.0",
)


def _legacy(name: str, check_str: str) -> policy.DeprecatedRule:
    """An API rule's name and default before the secure-RBAC defaults: a policy file that still
    overrides ``name`` is applied to its successor while enforce_new_defaults is off."""
    return policy.DeprecatedRule(
        name=f"os_compute_api:{name}",
        check_str=check_str,
        deprecated_reason=_REASON,
        deprecated_since="21.0.0",
    )


_LEGACY_HYPERVISORS = _legacy("os-hypervisors", "rule:admin_api")
_LEGACY_SERVICES = _legacy("os-services", "rule:admin_api")
_LEGACY_FLAVOR_ACCESS = _legacy("os-flavor-access", "rule:admin_or_owner")
_LEGACY_ATTACH_INTERFACES = _legacy("os-attach-interfaces", "rule:admin_or_owner")
_LEGACY_FLOATING_IPS = _legacy("os-floating-ips", "rule:admin_or_owner")

_BASE_RULES: tuple[policy.RuleDefault, ...] = (
    # Every admin-only API rule is "rule:context_is_admin", as upstream's are.
    policy.RuleDefault(
        "context_is_admin",
        "role:admin",
        description="Decides what is an admin (and what is_admin:True means).",
        deprecated_rule=_LEGACY_ADMIN,
    ),
    policy.RuleDefault(
        "admin_or_owner",
        "is_admin:True or project_id:%(project_id)s",
        description="Default rule for most non-admin APIs (legacy).",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        deprecated_since="21.0.0",
    ),
    policy.RuleDefault(
        "admin_api",
        "is_admin:True",
        description="Default rule for admin APIs (legacy).",
        deprecated_for_removal=True,
        deprecated_reason=_REASON,
        deprecated_since="21.0.0",
    ),
    policy.RuleDefault(
        "project_member_api",
        "role:member and project_id:%(project_id)s",
        description="Default rule for project-level non-admin APIs that change things.",
        deprecated_rule=_LEGACY_ADMIN_OR_OWNER,
    ),
    policy.RuleDefault(
        "project_reader_api",
        "role:reader and project_id:%(project_id)s",
        description="Default rule for project-level read-only APIs.",
        deprecated_rule=_LEGACY_ADMIN_OR_OWNER,
    ),
    policy.RuleDefault(
        "project_member_or_admin",
        "rule:project_member_api or rule:context_is_admin",
        description="Default rule for project-or-admin APIs that change things.",
        deprecated_rule=_LEGACY_ADMIN_OR_OWNER,
    ),
    policy.RuleDefault(
        "project_reader_or_admin",
        "rule:project_reader_api or rule:context_is_admin",
        description="Default rule for project-or-admin read-only APIs.",
        deprecated_rule=_LEGACY_ADMIN_OR_OWNER,
    ),
)


def _api_rule(
    name: str,
    check_str: str,
    description: str,
    *operations: str,
    legacy: policy.DeprecatedRule | None = None,
) -> policy.DocumentedRuleDefault:
    """A project-scoped rule guarding ``operations``, each written ``"METHOD /path"``."""
    ops = [dict(zip(("method", "path"), op.split(" ", 1), strict=True)) for op in operations]
    return policy.DocumentedRuleDefault(
        name=f"os_compute_api:{name}",
        check_str=check_str,
        description=description,
        operations=ops,
        scope_types=["project"],
        deprecated_rule=legacy,
    )


_S = "/servers/{server_id}"
_F = "/flavors/{flavor_id}"
_AGG = "/os-aggregates/{aggregate_id}"
_HYP = "/os-hypervisors/{hypervisor_id}"
_GRP = "/os-server-groups/{server_group_id}"
_KP = "/os-keypairs/{keypair_name}"
_QS = "/os-quota-sets/{tenant_id}"
_QC = "/os-quota-class-sets/{id}"

_API_RULES: tuple[policy.DocumentedRuleDefault, ...] = (
    # servers
    _api_rule("servers:index", PROJECT_READER_OR_ADMIN, "List servers.", "GET /servers"),
    _api_rule(
        "servers:detail",
        PROJECT_READER_OR_ADMIN,
        "List servers with details.",
        "GET /servers/detail",
    ),
    _api_rule(
        "servers:index:get_all_tenants",
        ADMIN,
        "List the servers of every project (all_tenants).",
        "GET /servers",
    ),
    _api_rule(
        "servers:detail:get_all_tenants",
        ADMIN,
        "List the servers of every project with details (all_tenants).",
        "GET /servers/detail",
    ),
    _api_rule("servers:show", PROJECT_READER_OR_ADMIN, "Show a server.", f"GET {_S}"),
    _api_rule("servers:create", PROJECT_MEMBER_OR_ADMIN, "Create a server.", "POST /servers"),
    _api_rule("servers:delete", PROJECT_MEMBER_OR_ADMIN, "Delete a server.", f"DELETE {_S}"),
    # interfaces (os-interface)
    _api_rule(
        "os-attach-interfaces:list",
        PROJECT_READER_OR_ADMIN,
        "List a server's port interfaces.",
        f"GET {_S}/os-interface",
        legacy=_LEGACY_ATTACH_INTERFACES,
    ),
    _api_rule(
        "os-attach-interfaces:show",
        PROJECT_READER_OR_ADMIN,
        "Show a server's port interface.",
        f"GET {_S}/os-interface/{{port_id}}",
        legacy=_LEGACY_ATTACH_INTERFACES,
    ),
    _api_rule(
        "os-attach-interfaces:create",
        PROJECT_MEMBER_OR_ADMIN,
        "Attach a port interface to a server.",
        f"POST {_S}/os-interface",
        legacy=_LEGACY_ATTACH_INTERFACES,
    ),
    _api_rule(
        "os-attach-interfaces:delete",
        PROJECT_MEMBER_OR_ADMIN,
        "Detach a port interface from a server.",
        f"DELETE {_S}/os-interface/{{port_id}}",
        legacy=_LEGACY_ATTACH_INTERFACES,
    ),
    # security groups: Nova's proxies (below 2.36) and a server's groups
    *(
        _api_rule(f"os-security-groups:{name}", check, description, *operations)
        for name, check, description, operations in (
            ("get", PROJECT_READER_OR_ADMIN, "List security groups.", ("GET /os-security-groups",)),
            (
                "show",
                PROJECT_READER_OR_ADMIN,
                "Show a security group.",
                ("GET /os-security-groups/{security_group_id}",),
            ),
            (
                "create",
                PROJECT_MEMBER_OR_ADMIN,
                "Create a security group.",
                ("POST /os-security-groups",),
            ),
            (
                "update",
                PROJECT_MEMBER_OR_ADMIN,
                "Update a security group.",
                ("PUT /os-security-groups/{security_group_id}",),
            ),
            (
                "delete",
                PROJECT_MEMBER_OR_ADMIN,
                "Delete a security group.",
                ("DELETE /os-security-groups/{security_group_id}",),
            ),
            (
                "rule:create",
                PROJECT_MEMBER_OR_ADMIN,
                "Create a security group rule.",
                ("POST /os-security-group-rules",),
            ),
            (
                "rule:delete",
                PROJECT_MEMBER_OR_ADMIN,
                "Delete a security group rule.",
                ("DELETE /os-security-group-rules/{security_group_rule_id}",),
            ),
            (
                "list",
                PROJECT_READER_OR_ADMIN,
                "List a server's security groups.",
                (f"GET {_S}/os-security-groups",),
            ),
            (
                "add",
                PROJECT_MEMBER_OR_ADMIN,
                "Add a server to a security group.",
                (f"POST {_S}/action (addSecurityGroup)",),
            ),
            (
                "remove",
                PROJECT_MEMBER_OR_ADMIN,
                "Take a server out of a security group.",
                (f"POST {_S}/action (removeSecurityGroup)",),
            ),
        )
    ),
    # instance actions
    _api_rule(
        "os-instance-actions:list",
        PROJECT_READER_OR_ADMIN,
        "List a server's actions.",
        f"GET {_S}/os-instance-actions",
    ),
    _api_rule(
        "os-instance-actions:show",
        PROJECT_READER_OR_ADMIN,
        "Show a server's action.",
        f"GET {_S}/os-instance-actions/{{request_id}}",
    ),
    _api_rule(
        "os-instance-actions:events",
        ADMIN,
        "Show an action's events (before 2.51), their tracebacks, and (from 2.62) their host.",
        f"GET {_S}/os-instance-actions/{{request_id}}",
    ),
    # Upstream guards the events' "details" (2.84) with it; registered so a policy file that
    # sets it stays valid, though no microversion Berth serves shows that field.
    _api_rule(
        "os-instance-actions:events:details",
        PROJECT_READER_OR_ADMIN,
        "Show the details of an action's events (from 2.84).",
        f"GET {_S}/os-instance-actions/{{request_id}}",
    ),
    # a server's sub-resources: metadata, tags, addresses, password
    _api_rule(
        "server-metadata:index",
        PROJECT_READER_OR_ADMIN,
        "List a server's metadata.",
        f"GET {_S}/metadata",
    ),
    _api_rule(
        "server-metadata:show",
        PROJECT_READER_OR_ADMIN,
        "Show one metadata item of a server.",
        f"GET {_S}/metadata/{{key}}",
    ),
    _api_rule(
        "server-metadata:create",
        PROJECT_MEMBER_OR_ADMIN,
        "Add or change metadata items of a server.",
        f"POST {_S}/metadata",
    ),
    _api_rule(
        "server-metadata:update_all",
        PROJECT_MEMBER_OR_ADMIN,
        "Replace a server's metadata.",
        f"PUT {_S}/metadata",
    ),
    _api_rule(
        "server-metadata:update",
        PROJECT_MEMBER_OR_ADMIN,
        "Set one metadata item of a server.",
        f"PUT {_S}/metadata/{{key}}",
    ),
    _api_rule(
        "server-metadata:delete",
        PROJECT_MEMBER_OR_ADMIN,
        "Delete one metadata item of a server.",
        f"DELETE {_S}/metadata/{{key}}",
    ),
    _api_rule(
        "os-server-tags:index", PROJECT_READER_OR_ADMIN, "List a server's tags.", f"GET {_S}/tags"
    ),
    _api_rule(
        "os-server-tags:show",
        PROJECT_READER_OR_ADMIN,
        "Check whether a server has a tag.",
        f"GET {_S}/tags/{{tag}}",
    ),
    _api_rule(
        "os-server-tags:update_all",
        PROJECT_MEMBER_OR_ADMIN,
        "Replace a server's tags.",
        f"PUT {_S}/tags",
    ),
    _api_rule(
        "os-server-tags:update",
        PROJECT_MEMBER_OR_ADMIN,
        "Add a tag to a server.",
        f"PUT {_S}/tags/{{tag}}",
    ),
    _api_rule(
        "os-server-tags:delete_all",
        PROJECT_MEMBER_OR_ADMIN,
        "Delete every tag of a server.",
        f"DELETE {_S}/tags",
    ),
    _api_rule(
        "os-server-tags:delete",
        PROJECT_MEMBER_OR_ADMIN,
        "Delete one tag of a server.",
        f"DELETE {_S}/tags/{{tag}}",
    ),
    _api_rule("ips:index", PROJECT_READER_OR_ADMIN, "List a server's addresses.", f"GET {_S}/ips"),
    _api_rule(
        "ips:show",
        PROJECT_READER_OR_ADMIN,
        "List a server's addresses on one network.",
        f"GET {_S}/ips/{{network_label}}",
    ),
    _api_rule(
        "os-server-password:show",
        PROJECT_READER_OR_ADMIN,
        "Show a server's encrypted password.",
        f"GET {_S}/os-server-password",
    ),
    _api_rule(
        "os-server-password:clear",
        PROJECT_MEMBER_OR_ADMIN,
        "Clear a server's encrypted password.",
        f"DELETE {_S}/os-server-password",
    ),
    # moves
    _api_rule(
        "os-migrate-server:migrate",
        ADMIN,
        "Cold migrate a server to another host.",
        f"POST {_S}/action (migrate)",
    ),
    _api_rule(
        "os-migrate-server:migrate:host",
        ADMIN,
        "Cold migrate a server to a host the caller names (2.56).",
        f"POST {_S}/action (migrate)",
    ),
    _api_rule(
        "os-migrate-server:migrate_live",
        ADMIN,
        "Live migrate a server to another host.",
        f"POST {_S}/action (os-migrateLive)",
    ),
    _api_rule(
        "servers:resize", PROJECT_MEMBER_OR_ADMIN, "Resize a server.", f"POST {_S}/action (resize)"
    ),
    _api_rule(
        "servers:confirm_resize",
        PROJECT_MEMBER_OR_ADMIN,
        "Confirm a server's resize or cold migration.",
        f"POST {_S}/action (confirmResize)",
    ),
    _api_rule(
        "servers:revert_resize",
        PROJECT_MEMBER_OR_ADMIN,
        "Revert a server's resize or cold migration.",
        f"POST {_S}/action (revertResize)",
    ),
    _api_rule("os-migrations:index", ADMIN, "List migrations.", "GET /os-migrations"),
    _api_rule(
        "servers:migrations:index",
        ADMIN,
        "List a server's live migrations in progress.",
        f"GET {_S}/migrations",
    ),
    _api_rule(
        "servers:migrations:show",
        ADMIN,
        "Show a server's live migration in progress.",
        f"GET {_S}/migrations/{{migration_id}}",
    ),
    _api_rule(
        "os-extended-server-attributes",
        ADMIN,
        "Show a server's host attributes (OS-EXT-SRV-ATTR:*, fault details) in its views.",
        f"GET {_S}",
        "GET /servers/detail",
    ),
    # shelving
    _api_rule(
        "os-shelve:shelve",
        PROJECT_MEMBER_OR_ADMIN,
        "Shelve a server.",
        f"POST {_S}/action (shelve)",
    ),
    _api_rule(
        "os-shelve:shelve_offload",
        ADMIN,
        "Offload a shelved server from its host.",
        f"POST {_S}/action (shelveOffload)",
    ),
    _api_rule(
        "os-shelve:unshelve",
        PROJECT_MEMBER_OR_ADMIN,
        "Unshelve a shelved or offloaded server.",
        f"POST {_S}/action (unshelve)",
    ),
    # evacuation
    _api_rule(
        "os-evacuate",
        ADMIN,
        "Evacuate a server from a failed host to a new host.",
        f"POST {_S}/action (evacuate)",
    ),
    # server actions and update
    _api_rule("servers:update", PROJECT_MEMBER_OR_ADMIN, "Update a server.", f"PUT {_S}"),
    _api_rule(
        "servers:reboot", PROJECT_MEMBER_OR_ADMIN, "Reboot a server.", f"POST {_S}/action (reboot)"
    ),
    _api_rule(
        "servers:stop", PROJECT_MEMBER_OR_ADMIN, "Stop a server.", f"POST {_S}/action (os-stop)"
    ),
    _api_rule(
        "servers:start", PROJECT_MEMBER_OR_ADMIN, "Start a server.", f"POST {_S}/action (os-start)"
    ),
    _api_rule(
        "servers:rebuild",
        PROJECT_MEMBER_OR_ADMIN,
        "Rebuild a server.",
        f"POST {_S}/action (rebuild)",
    ),
    _api_rule(
        "servers:create_image",
        PROJECT_MEMBER_OR_ADMIN,
        "Snapshot a server to a new image.",
        f"POST {_S}/action (createImage)",
    ),
    _api_rule(
        "os-create-backup",
        PROJECT_MEMBER_OR_ADMIN,
        "Back up a server to a new image, keeping a rotation of backups.",
        f"POST {_S}/action (createBackup)",
    ),
    _api_rule(
        "os-pause-server:pause",
        PROJECT_MEMBER_OR_ADMIN,
        "Pause a server.",
        f"POST {_S}/action (pause)",
    ),
    _api_rule(
        "os-pause-server:unpause",
        PROJECT_MEMBER_OR_ADMIN,
        "Unpause a paused server.",
        f"POST {_S}/action (unpause)",
    ),
    _api_rule(
        "os-suspend-server:suspend",
        PROJECT_MEMBER_OR_ADMIN,
        "Suspend a server.",
        f"POST {_S}/action (suspend)",
    ),
    _api_rule(
        "os-suspend-server:resume",
        PROJECT_MEMBER_OR_ADMIN,
        "Resume a suspended server.",
        f"POST {_S}/action (resume)",
    ),
    _api_rule(
        "os-lock-server:lock",
        PROJECT_MEMBER_OR_ADMIN,
        "Lock a server.",
        f"POST {_S}/action (lock)",
    ),
    _api_rule(
        "os-lock-server:unlock",
        PROJECT_MEMBER_OR_ADMIN,
        "Unlock a server.",
        f"POST {_S}/action (unlock)",
    ),
    _api_rule(
        "os-lock-server:unlock:unlock_override",
        ADMIN,
        "Unlock a server locked by another kind of caller (the owner lifting an admin's lock).",
        f"POST {_S}/action (unlock)",
    ),
    _api_rule(
        "os-admin-actions:reset_state",
        ADMIN,
        "Force a server's state to active or error.",
        f"POST {_S}/action (os-resetState)",
    ),
    _api_rule(
        "os-admin-actions:inject_network_info",
        ADMIN,
        "Inject a server's network information into its guest.",
        f"POST {_S}/action (injectNetworkInfo)",
    ),
    _api_rule(
        "os-deferred-delete:restore",
        PROJECT_MEMBER_OR_ADMIN,
        "Restore a soft-deleted server.",
        f"POST {_S}/action (restore)",
    ),
    _api_rule(
        "os-deferred-delete:force",
        PROJECT_MEMBER_OR_ADMIN,
        "Delete a server at once, soft-deleted or not.",
        f"POST {_S}/action (forceDelete)",
    ),
    _api_rule(
        "os-server-diagnostics",
        ADMIN,
        "Show what a server's hypervisor sees of it.",
        f"GET {_S}/diagnostics",
    ),
    _api_rule(
        "os-server-external-events:create",
        SERVICE,
        "Tell the compute service of events about servers (the network service's).",
        "POST /os-server-external-events",
    ),
    _api_rule(
        "os-networks:list",
        PROJECT_READER_OR_ADMIN,
        "List the networks the caller may use (before 2.36).",
        "GET /os-networks",
    ),
    _api_rule(
        "os-networks:view",
        PROJECT_READER_OR_ADMIN,
        "Show a network the caller may use (before 2.36).",
        "GET /os-networks/{network_id}",
    ),
    _api_rule(
        "os-instance-usage-audit-log:list",
        ADMIN,
        "List the compute hosts' usage audits of the last period.",
        "GET /os-instance_usage_audit_log",
    ),
    _api_rule(
        "os-instance-usage-audit-log:show",
        ADMIN,
        "Show the compute hosts' usage audits of the period before a time.",
        "GET /os-instance_usage_audit_log/{before_timestamp}",
    ),
    _api_rule(
        "os-rescue",
        PROJECT_MEMBER_OR_ADMIN,
        "Rescue a server.",
        f"POST {_S}/action (rescue)",
    ),
    _api_rule(
        "os-unrescue",
        PROJECT_MEMBER_OR_ADMIN,
        "Unrescue a rescued server.",
        f"POST {_S}/action (unrescue)",
    ),
    _api_rule(
        "os-admin-password",
        PROJECT_MEMBER_OR_ADMIN,
        "Change a server's admin password.",
        f"POST {_S}/action (changePassword)",
    ),
    _api_rule(
        "os-console-output",
        PROJECT_MEMBER_OR_ADMIN,
        "Show a server's console output.",
        f"POST {_S}/action (os-getConsoleOutput)",
    ),
    # flavors
    _api_rule("os-flavor-manage:create", ADMIN, "Create a flavor.", "POST /flavors"),
    _api_rule("os-flavor-manage:update", ADMIN, "Update a flavor's description.", f"PUT {_F}"),
    _api_rule("os-flavor-manage:delete", ADMIN, "Delete a flavor.", f"DELETE {_F}"),
    _api_rule(
        "os-flavor-extra-specs:index",
        PROJECT_READER_OR_ADMIN,
        "List a flavor's extra specs.",
        f"GET {_F}/os-extra_specs",
    ),
    _api_rule(
        "os-flavor-extra-specs:show",
        PROJECT_READER_OR_ADMIN,
        "Show one extra spec of a flavor.",
        f"GET {_F}/os-extra_specs/{{flavor_extra_spec_key}}",
    ),
    _api_rule(
        "os-flavor-extra-specs:create",
        ADMIN,
        "Add extra specs to a flavor.",
        f"POST {_F}/os-extra_specs",
    ),
    _api_rule(
        "os-flavor-extra-specs:update",
        ADMIN,
        "Update one extra spec of a flavor.",
        f"PUT {_F}/os-extra_specs/{{flavor_extra_spec_key}}",
    ),
    _api_rule(
        "os-flavor-extra-specs:delete",
        ADMIN,
        "Delete one extra spec of a flavor.",
        f"DELETE {_F}/os-extra_specs/{{flavor_extra_spec_key}}",
    ),
    _api_rule(
        "os-flavor-access",
        ADMIN,
        "List the projects given a private flavor.",
        f"GET {_F}/os-flavor-access",
        legacy=_LEGACY_FLAVOR_ACCESS,
    ),
    _api_rule(
        "os-flavor-access:add_tenant_access",
        ADMIN,
        "Give a project access to a private flavor.",
        f"POST {_F}/action (addTenantAccess)",
    ),
    _api_rule(
        "os-flavor-access:remove_tenant_access",
        ADMIN,
        "Take a project's access to a private flavor away.",
        f"POST {_F}/action (removeTenantAccess)",
    ),
    # aggregates
    _api_rule("os-aggregates:index", ADMIN, "List host aggregates.", "GET /os-aggregates"),
    _api_rule("os-aggregates:create", ADMIN, "Create a host aggregate.", "POST /os-aggregates"),
    _api_rule("os-aggregates:show", ADMIN, "Show a host aggregate.", f"GET {_AGG}"),
    _api_rule("os-aggregates:update", ADMIN, "Update a host aggregate.", f"PUT {_AGG}"),
    _api_rule("os-aggregates:delete", ADMIN, "Delete a host aggregate.", f"DELETE {_AGG}"),
    _api_rule(
        "os-aggregates:add_host",
        ADMIN,
        "Add a host to an aggregate.",
        f"POST {_AGG}/action (add_host)",
    ),
    _api_rule(
        "os-aggregates:remove_host",
        ADMIN,
        "Remove a host from an aggregate.",
        f"POST {_AGG}/action (remove_host)",
    ),
    _api_rule(
        "os-aggregates:set_metadata",
        ADMIN,
        "Set an aggregate's metadata.",
        f"POST {_AGG}/action (set_metadata)",
    ),
    # floating IPs: proxies to the network service (paths before 2.36, actions before 2.44)
    *(
        _api_rule(
            f"os-floating-ips:{name}", check, description, operation, legacy=_LEGACY_FLOATING_IPS
        )
        for name, check, description, operation in (
            ("list", PROJECT_READER_OR_ADMIN, "List floating IPs.", "GET /os-floating-ips"),
            (
                "show",
                PROJECT_READER_OR_ADMIN,
                "Show a floating IP.",
                "GET /os-floating-ips/{floating_ip_id}",
            ),
            ("create", PROJECT_MEMBER_OR_ADMIN, "Allocate a floating IP.", "POST /os-floating-ips"),
            (
                "delete",
                PROJECT_MEMBER_OR_ADMIN,
                "Release a floating IP.",
                "DELETE /os-floating-ips/{floating_ip_id}",
            ),
            (
                "add",
                PROJECT_MEMBER_OR_ADMIN,
                "Associate a floating IP with a server.",
                f"POST {_S}/action (addFloatingIp)",
            ),
            (
                "remove",
                PROJECT_MEMBER_OR_ADMIN,
                "Disassociate a floating IP from a server.",
                f"POST {_S}/action (removeFloatingIp)",
            ),
        )
    ),
    # hosts (before 2.43)
    _api_rule("os-hosts:list", ADMIN, "List hosts.", "GET /os-hosts"),
    _api_rule("os-hosts:show", ADMIN, "Show a host's resources.", "GET /os-hosts/{host_name}"),
    _api_rule(
        "os-hosts:update",
        ADMIN,
        "Enable or disable a host, or set its maintenance mode.",
        "PUT /os-hosts/{host_name}",
    ),
    _api_rule("os-hosts:reboot", ADMIN, "Reboot a host.", "GET /os-hosts/{host_name}/reboot"),
    _api_rule(
        "os-hosts:shutdown", ADMIN, "Shut a host down.", "GET /os-hosts/{host_name}/shutdown"
    ),
    _api_rule("os-hosts:start", ADMIN, "Start a host.", "GET /os-hosts/{host_name}/startup"),
    # services
    _api_rule(
        "os-services:list",
        ADMIN,
        "List compute services.",
        "GET /os-services",
        legacy=_LEGACY_SERVICES,
    ),
    _api_rule(
        "os-services:update",
        ADMIN,
        "Enable, disable or force down a compute service.",
        "PUT /os-services/{service_id}",
        legacy=_LEGACY_SERVICES,
    ),
    # Berth's own extension
    _api_rule(
        "os-berth-diagnosis:show",
        ADMIN,
        "Show why the scheduler found no host for a server (Berth's extension).",
        "GET /os-berth-diagnosis/{server_id}",
    ),
    _api_rule(
        "os-berth-what-if:create",
        PROJECT_MEMBER_OR_ADMIN,
        "Ask where a boot request would go and how many more of it fit, without booting "
        "(Berth's extension): whether it fits, the room per availability zone.",
        "POST /os-berth-what-if",
    ),
    _api_rule(
        "os-berth-what-if:hosts",
        ADMIN,
        "See the hosts, cells, providers and diagnosis in a what-if's answer (Berth's "
        "extension); others see only whether it fits and the room per availability zone.",
        "POST /os-berth-what-if",
    ),
    # hypervisors
    _api_rule(
        "os-hypervisors:list",
        ADMIN,
        "List hypervisors.",
        "GET /os-hypervisors",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:list-detail",
        ADMIN,
        "List hypervisors with details.",
        "GET /os-hypervisors/detail",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:statistics",
        ADMIN,
        "Show the hypervisors' summed statistics.",
        "GET /os-hypervisors/statistics",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:show",
        ADMIN,
        "Show a hypervisor.",
        f"GET {_HYP}",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:uptime",
        ADMIN,
        "Show a hypervisor's uptime.",
        f"GET {_HYP}/uptime",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:search",
        ADMIN,
        "Find hypervisors by a part of their name (before 2.53).",
        "GET /os-hypervisors/{hypervisor_hostname_pattern}/search",
        legacy=_LEGACY_HYPERVISORS,
    ),
    _api_rule(
        "os-hypervisors:servers",
        ADMIN,
        "List the servers on hypervisors found by a part of their name (before 2.53).",
        "GET /os-hypervisors/{hypervisor_hostname_pattern}/servers",
        legacy=_LEGACY_HYPERVISORS,
    ),
    # availability zones
    _api_rule(
        "os-availability-zone:list",
        ANY,
        "List the availability zones.",
        "GET /os-availability-zone",
    ),
    _api_rule(
        "os-availability-zone:detail",
        ADMIN,
        "List the availability zones with their hosts and services.",
        "GET /os-availability-zone/detail",
    ),
    # server groups
    _api_rule(
        "os-server-groups:index",
        PROJECT_READER_OR_ADMIN,
        "List the project's server groups.",
        "GET /os-server-groups",
    ),
    _api_rule(
        "os-server-groups:index:all_projects",
        ADMIN,
        "List the server groups of every project (all_projects).",
        "GET /os-server-groups",
    ),
    _api_rule(
        "os-server-groups:show", PROJECT_READER_OR_ADMIN, "Show a server group.", f"GET {_GRP}"
    ),
    _api_rule(
        "os-server-groups:create",
        PROJECT_MEMBER_OR_ADMIN,
        "Create a server group.",
        "POST /os-server-groups",
    ),
    _api_rule(
        "os-server-groups:delete",
        PROJECT_MEMBER_OR_ADMIN,
        "Delete a server group.",
        f"DELETE {_GRP}",
    ),
    # key pairs
    _api_rule(
        "os-keypairs:index", ADMIN_OR_KEYPAIR_USER, "List a user's key pairs.", "GET /os-keypairs"
    ),
    _api_rule(
        "os-keypairs:create",
        ADMIN_OR_KEYPAIR_USER,
        "Create or import a key pair.",
        "POST /os-keypairs",
    ),
    _api_rule("os-keypairs:show", ADMIN_OR_KEYPAIR_USER, "Show a key pair.", f"GET {_KP}"),
    _api_rule("os-keypairs:delete", ADMIN_OR_KEYPAIR_USER, "Delete a key pair.", f"DELETE {_KP}"),
    # quotas, limits and usage
    _api_rule(
        "os-quota-sets:show", PROJECT_READER_OR_ADMIN, "Show a project's quotas.", f"GET {_QS}"
    ),
    _api_rule(
        "os-quota-sets:detail",
        PROJECT_READER_OR_ADMIN,
        "Show a project's quotas with what it uses.",
        f"GET {_QS}/detail",
    ),
    _api_rule("os-quota-sets:defaults", ANY, "Show the default quotas.", f"GET {_QS}/defaults"),
    _api_rule("os-quota-sets:update", ADMIN, "Update a project's quotas.", f"PUT {_QS}"),
    _api_rule(
        "os-quota-sets:delete", ADMIN, "Revert a project's quotas to the defaults.", f"DELETE {_QS}"
    ),
    _api_rule("os-quota-class-sets:show", ADMIN, "Show a quota class.", f"GET {_QC}"),
    _api_rule("os-quota-class-sets:update", ADMIN, "Update a quota class.", f"PUT {_QC}"),
    _api_rule(
        "extensions",
        ANY,
        "List and show the legacy v2 extensions.",
        "GET /extensions",
        "GET /extensions/{alias}",
    ),
    _api_rule("limits", ANY, "Show the project's limits and usage.", "GET /limits"),
    _api_rule(
        "limits:other_project",
        ADMIN,
        "Show another project's limits and usage (tenant_id).",
        "GET /limits",
    ),
    _api_rule(
        "os-simple-tenant-usage:show",
        PROJECT_READER_OR_ADMIN,
        "Show a project's usage over a period.",
        "GET /os-simple-tenant-usage/{tenant_id}",
    ),
    _api_rule(
        "os-simple-tenant-usage:list",
        ADMIN,
        "List every project's usage over a period.",
        "GET /os-simple-tenant-usage",
    ),
)


# Rules that guard a behaviour, not an API (upstream's "compute:" ones).
_BEHAVIOUR_RULES: tuple[policy.DocumentedRuleDefault, ...] = (
    policy.DocumentedRuleDefault(
        name="compute:servers:resize:cross_cell",
        check_str="!",
        description="Let a cold migration or resize move a server to another cell when its own "
        "has no room (nobody by default, as upstream).",
        operations=[
            {"method": "POST", "path": f"{_S}/action (resize)"},
            {"method": "POST", "path": f"{_S}/action (migrate)"},
        ],
        scope_types=["project"],
    ),
)


def default_rules() -> list[policy.RuleDefault]:
    """Every rule Compute registers, base rules first, as oslo.policy defaults."""
    return [*_BASE_RULES, *_API_RULES, *_BEHAVIOUR_RULES]


class ComputePolicyEnforcer(common_policy.PolicyEnforcer):
    """Compute's rules, and the operator's policy file over them; refusals are ``Forbidden``."""

    forbidden = Forbidden

    def __init__(self, settings: ComputeSettings) -> None:
        super().__init__(settings, default_rules())

    @staticmethod
    def refusal(rule_name: str) -> str:
        return f"Policy doesn't allow {rule_name} to be performed."  # upstream's wording


def sample_policy_yaml() -> str:
    """Every default rule as a commented-out YAML policy file; uncomment a line to override it."""
    return common_policy.sample_policy_yaml("Compute", "compute.policy_file", default_rules())
