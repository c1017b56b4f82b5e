"""The route table of the Compute API: every path, its methods and their handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.compute.api import (
    aggregates,
    availability_zones,
    berth_diagnosis,
    berth_what_if,
    extensions,
    flavors,
    floating_ips,
    hypervisors,
    images,
    instance_actions,
    interfaces,
    ips,
    keypairs,
    limits,
    migrations,
    os_hosts,
    os_networks,
    quota_classes,
    quota_sets,
    root,
    security_groups,
    server_actions,
    server_diagnostics,
    server_external_events,
    server_groups,
    server_metadata,
    server_password,
    server_tags,
    servers,
    services,
    simple_tenant_usage,
    usage_audit_log,
)
from berth.compute.api.request import ComputeRequest

Handler = Callable[[ComputeRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": root.versions},
    "/v2": {"GET": root.legacy_version},
    "/v2.1": {"GET": root.version},
    "/v2.1/extensions": {"GET": extensions.index},
    "/v2.1/extensions/{alias}": {"GET": extensions.show},
    "/v2.1/servers": {"GET": servers.list_servers, "POST": servers.create_server},
    # Before "/v2.1/servers/{server_id}", which would take "detail" for an id.
    "/v2.1/servers/detail": {"GET": servers.list_servers_detail},
    "/v2.1/servers/{server_id}": {
        "GET": servers.show_server,
        "PUT": servers.update_server,
        "DELETE": servers.delete_server,
    },
    "/v2.1/servers/{server_id}/action": {"POST": server_actions.act},
    "/v2.1/servers/{server_id}/diagnostics": {"GET": server_diagnostics.show},
    "/v2.1/os-server-external-events": {"POST": server_external_events.create},
    "/v2.1/servers/{server_id}/migrations": {"GET": migrations.server_index},
    "/v2.1/servers/{server_id}/migrations/{migration_id}": {"GET": migrations.server_show},
    "/v2.1/os-migrations": {"GET": migrations.index},
    "/v2.1/servers/{server_id}/os-instance-actions": {"GET": instance_actions.index},
    "/v2.1/servers/{server_id}/os-instance-actions/{request_id}": {"GET": instance_actions.show},
    "/v2.1/servers/{server_id}/os-interface": {"GET": interfaces.index, "POST": interfaces.create},
    "/v2.1/servers/{server_id}/os-security-groups": {"GET": security_groups.server_index},
    # Nova's proxies of the network's security groups, below 2.36.
    "/v2.1/os-security-groups": {
        "GET": security_groups.index,
        "POST": security_groups.create,
        # Reached by DELETE /os-security-groups/ (the router drops the trailing slash).
        "DELETE": security_groups.delete_without_id,
    },
    "/v2.1/os-security-groups/{security_group_id}": {
        "GET": security_groups.show,
        "PUT": security_groups.update,
        "DELETE": security_groups.delete,
    },
    "/v2.1/os-security-group-rules": {"POST": security_groups.create_rule},
    "/v2.1/os-security-group-rules/{security_group_rule_id}": {
        "DELETE": security_groups.delete_rule
    },
    "/v2.1/servers/{server_id}/os-interface/{port_id}": {
        "GET": interfaces.show,
        "DELETE": interfaces.delete,
    },
    # A server's sub-resources: its metadata, tags (2.26), addresses and password.
    "/v2.1/servers/{server_id}/metadata": {
        "GET": server_metadata.index,
        "PUT": server_metadata.replace,
        "POST": server_metadata.merge,
    },
    "/v2.1/servers/{server_id}/metadata/{key}": {
        "GET": server_metadata.show,
        "PUT": server_metadata.update,
        "DELETE": server_metadata.delete,
    },
    "/v2.1/servers/{server_id}/tags": {
        "GET": server_tags.index,
        "PUT": server_tags.replace,
        "DELETE": server_tags.delete_all,
    },
    "/v2.1/servers/{server_id}/tags/{tag}": {
        "GET": server_tags.show,
        "PUT": server_tags.update,
        "DELETE": server_tags.delete,
    },
    "/v2.1/servers/{server_id}/ips": {"GET": ips.index},
    "/v2.1/servers/{server_id}/ips/{network_label}": {"GET": ips.show},
    "/v2.1/servers/{server_id}/os-server-password": {
        "GET": server_password.show,
        "DELETE": server_password.clear,
    },
    # Before "/v2.1/flavors/{flavor_id}", which would take "detail" for an id.
    "/v2.1/flavors/detail": {"GET": flavors.detail},
    "/v2.1/flavors": {"GET": flavors.index, "POST": flavors.create},
    "/v2.1/flavors/{flavor_id}": {
        "GET": flavors.show,
        "PUT": flavors.update,
        "DELETE": flavors.delete,
    },
    "/v2.1/flavors/{flavor_id}/action": {"POST": flavors.action},
    "/v2.1/flavors/{flavor_id}/os-flavor-access": {"GET": flavors.list_access},
    "/v2.1/flavors/{flavor_id}/os-extra_specs": {
        "GET": flavors.list_extra_specs,
        "POST": flavors.create_extra_specs,
    },
    "/v2.1/flavors/{flavor_id}/os-extra_specs/{key}": {
        "GET": flavors.show_extra_spec,
        "PUT": flavors.update_extra_spec,
        "DELETE": flavors.delete_extra_spec,
    },
    "/v2.1/os-server-groups": {"GET": server_groups.index, "POST": server_groups.create},
    "/v2.1/os-server-groups/{group_id}": {
        "GET": server_groups.show,
        "DELETE": server_groups.delete,
    },
    "/v2.1/os-aggregates": {"GET": aggregates.index, "POST": aggregates.create},
    "/v2.1/os-aggregates/{aggregate_id}": {
        "GET": aggregates.show,
        "PUT": aggregates.update,
        "DELETE": aggregates.delete,
    },
    "/v2.1/os-aggregates/{aggregate_id}/action": {"POST": aggregates.action},
    # Before 2.43 (a 404 from then).
    "/v2.1/os-floating-ips": {"GET": floating_ips.index, "POST": floating_ips.create},
    "/v2.1/os-floating-ips/{floating_ip_id}": {
        "GET": floating_ips.show,
        "DELETE": floating_ips.delete,
    },
    "/v2.1/os-hosts": {"GET": os_hosts.index},
    "/v2.1/os-hosts/{host_name}": {"GET": os_hosts.show, "PUT": os_hosts.update},
    "/v2.1/os-hosts/{host_name}/startup": {"GET": os_hosts.startup},
    "/v2.1/os-hosts/{host_name}/shutdown": {"GET": os_hosts.shutdown},
    "/v2.1/os-hosts/{host_name}/reboot": {"GET": os_hosts.reboot},
    "/v2.1/os-services": {"GET": services.index},
    # A uuid from 2.53; before, the action: enable, disable, disable-log-reason, force-down.
    "/v2.1/os-services/{service_id}": {"PUT": services.update},
    # Berth's own: why the scheduler found no host for a server (admins).
    "/v2.1/os-berth-diagnosis/{server_id}": {"GET": berth_diagnosis.show},
    # Berth's own: where a boot request would go, how many more fit (nothing is claimed).
    "/v2.1/os-berth-what-if": {"POST": berth_what_if.create},
    "/v2.1/os-hypervisors/detail": {"GET": hypervisors.detail},
    "/v2.1/os-hypervisors/statistics": {"GET": hypervisors.statistics},
    "/v2.1/os-hypervisors": {"GET": hypervisors.index},
    "/v2.1/os-hypervisors/{hypervisor_id}": {"GET": hypervisors.show},
    "/v2.1/os-hypervisors/{hypervisor_id}/uptime": {"GET": hypervisors.uptime},
    # Before 2.53 (a 404 from then).
    "/v2.1/os-hypervisors/{hypervisor_hostname_pattern}/search": {"GET": hypervisors.search},
    "/v2.1/os-hypervisors/{hypervisor_hostname_pattern}/servers": {"GET": hypervisors.servers},
    "/v2.1/os-availability-zone": {"GET": availability_zones.index},
    "/v2.1/os-availability-zone/detail": {"GET": availability_zones.detail},
    "/v2.1/os-keypairs": {"GET": keypairs.index, "POST": keypairs.create},
    "/v2.1/os-keypairs/{keypair_name}": {"GET": keypairs.show, "DELETE": keypairs.delete},
    "/v2.1/os-quota-sets/{tenant_id}": {
        "GET": quota_sets.show,
        "PUT": quota_sets.update,
        "DELETE": quota_sets.delete,
    },
    "/v2.1/os-quota-sets/{tenant_id}/defaults": {"GET": quota_sets.defaults},
    "/v2.1/os-quota-sets/{tenant_id}/detail": {"GET": quota_sets.detail},
    "/v2.1/os-quota-class-sets/{class_name}": {
        "GET": quota_classes.show,
        "PUT": quota_classes.update,
    },
    "/v2.1/limits": {"GET": limits.index},
    "/v2.1/os-simple-tenant-usage": {"GET": simple_tenant_usage.index},
    "/v2.1/os-simple-tenant-usage/{tenant_id}": {"GET": simple_tenant_usage.show},
    "/v2.1/os-instance_usage_audit_log": {"GET": usage_audit_log.index},
    # Before 2.36 (a 404 from then): Nova's proxy to the network service.
    "/v2.1/os-networks": {"GET": os_networks.index},
    "/v2.1/os-networks/{network_id}": {"GET": os_networks.show},
    "/v2.1/os-instance_usage_audit_log/{before_timestamp}": {"GET": usage_audit_log.show},
    # The image proxy (up to 2.35); "detail" before "{image_id}", which would take it.
    "/v2.1/images": {"GET": images.index, "DELETE": images.delete},
    "/v2.1/images/detail": {"GET": images.detail},
    "/v2.1/images/{image_id}": {"GET": images.show, "DELETE": images.delete},
    "/v2.1/images/{image_id}/metadata": {
        "GET": images.list_metadata,
        "PUT": images.replace_metadata,
        "POST": images.update_metadata,
    },
    "/v2.1/images/{image_id}/metadata/{key}": {
        "GET": images.show_metadata_item,
        "PUT": images.set_metadata_item,
        "DELETE": images.delete_metadata_item,
    },
}
