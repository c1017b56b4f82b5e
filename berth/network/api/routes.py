"""The route table of the Networking API: every path, its methods and their handlers."""

from __future__ import annotations

from collections.abc import Callable, Mapping

from starlette.responses import Response

from berth.network.api import (
    agents,
    extensions,
    networks,
    ports,
    qos,
    quotas,
    rbac,
    root,
    routers,
    security_groups,
    subnets,
)
from berth.network.api.request import NetworkRequest

Handler = Callable[[NetworkRequest], Response]

ROUTES: Mapping[str, Mapping[str, Handler]] = {
    "/": {"GET": root.versions},
    "/v2.0": {"GET": root.resources},
    "/v2.0/extensions": {"GET": extensions.list_extensions},
    "/v2.0/extensions/{alias}": {"GET": extensions.show_extension},
    "/v2.0/networks": {"GET": networks.list_networks, "POST": networks.create_network},
    "/v2.0/networks/{network_id}": {
        "GET": networks.show_network,
        "PUT": networks.update_network,
        "DELETE": networks.delete_network,
    },
    "/v2.0/segments": {"GET": networks.list_segments, "POST": networks.create_segment},
    "/v2.0/segments/{segment_id}": {
        "GET": networks.show_segment,
        "PUT": networks.update_segment,
        "DELETE": networks.delete_segment,
    },
    "/v2.0/qos/rule-types": {"GET": qos.list_rule_types},
    "/v2.0/qos/rule-types/{rule_type}": {"GET": qos.show_rule_type},
    "/v2.0/qos/policies": {"GET": qos.list_policies, "POST": qos.create_policy},
    "/v2.0/qos/policies/{policy_id}": {
        "GET": qos.show_policy,
        "PUT": qos.update_policy,
        "DELETE": qos.delete_policy,
    },
    "/v2.0/qos/policies/{policy_id}/bandwidth_limit_rules": {
        "GET": qos.BANDWIDTH_LIMIT.list,
        "POST": qos.BANDWIDTH_LIMIT.create,
    },
    "/v2.0/qos/policies/{policy_id}/bandwidth_limit_rules/{rule_id}": {
        "GET": qos.BANDWIDTH_LIMIT.show,
        "PUT": qos.BANDWIDTH_LIMIT.update,
        "DELETE": qos.BANDWIDTH_LIMIT.delete,
    },
    "/v2.0/qos/policies/{policy_id}/minimum_bandwidth_rules": {
        "GET": qos.MINIMUM_BANDWIDTH.list,
        "POST": qos.MINIMUM_BANDWIDTH.create,
    },
    "/v2.0/qos/policies/{policy_id}/minimum_bandwidth_rules/{rule_id}": {
        "GET": qos.MINIMUM_BANDWIDTH.show,
        "PUT": qos.MINIMUM_BANDWIDTH.update,
        "DELETE": qos.MINIMUM_BANDWIDTH.delete,
    },
    "/v2.0/qos/policies/{policy_id}/minimum_packet_rate_rules": {
        "GET": qos.MINIMUM_PACKET_RATE.list,
        "POST": qos.MINIMUM_PACKET_RATE.create,
    },
    "/v2.0/qos/policies/{policy_id}/minimum_packet_rate_rules/{rule_id}": {
        "GET": qos.MINIMUM_PACKET_RATE.show,
        "PUT": qos.MINIMUM_PACKET_RATE.update,
        "DELETE": qos.MINIMUM_PACKET_RATE.delete,
    },
    # POST is Berth's: agents in other processes report their state (Neutron's agents use RPC).
    "/v2.0/agents": {"GET": agents.list_agents, "POST": agents.report_state},
    "/v2.0/agents/{agent_id}": {
        "GET": agents.show_agent,
        "PUT": agents.update_agent,
        "DELETE": agents.delete_agent,
    },
    "/v2.0/subnets": {"GET": subnets.list_subnets, "POST": subnets.create_subnet},
    "/v2.0/subnets/{subnet_id}": {
        "GET": subnets.show_subnet,
        "PUT": subnets.update_subnet,
        "DELETE": subnets.delete_subnet,
    },
    "/v2.0/network-ip-availabilities": {"GET": subnets.list_availabilities},
    "/v2.0/network-ip-availabilities/{network_id}": {"GET": subnets.show_availability},
    "/v2.0/ports": {"GET": ports.list_ports, "POST": ports.create_port},
    "/v2.0/ports/{port_id}": {
        "GET": ports.show_port,
        "PUT": ports.update_port,
        "DELETE": ports.delete_port,
    },
    "/v2.0/ports/{port_id}/bindings": {"GET": ports.list_bindings, "POST": ports.create_binding},
    "/v2.0/ports/{port_id}/bindings/{host}": {
        "GET": ports.show_binding,
        "DELETE": ports.delete_binding,
    },
    "/v2.0/ports/{port_id}/bindings/{host}/activate": {"PUT": ports.activate_binding},
    "/v2.0/rbac-policies": {"GET": rbac.list_entries, "POST": rbac.create_entry},
    "/v2.0/rbac-policies/{rbac_policy_id}": {
        "GET": rbac.show_entry,
        "PUT": rbac.update_entry,
        "DELETE": rbac.delete_entry,
    },
    "/v2.0/routers": {"GET": routers.list_routers, "POST": routers.create_router},
    "/v2.0/routers/{router_id}": {
        "GET": routers.show_router,
        "PUT": routers.update_router,
        "DELETE": routers.delete_router,
    },
    "/v2.0/routers/{router_id}/add_router_interface": {"PUT": routers.add_router_interface},
    "/v2.0/routers/{router_id}/remove_router_interface": {"PUT": routers.remove_router_interface},
    "/v2.0/floatingips": {"GET": routers.list_floatingips, "POST": routers.create_floatingip},
    "/v2.0/floatingips/{floatingip_id}": {
        "GET": routers.show_floatingip,
        "PUT": routers.update_floatingip,
        "DELETE": routers.delete_floatingip,
    },
    "/v2.0/security-groups": {
        "GET": security_groups.list_groups,
        "POST": security_groups.create_group,
    },
    "/v2.0/security-groups/{security_group_id}": {
        "GET": security_groups.show_group,
        "PUT": security_groups.update_group,
        "DELETE": security_groups.delete_group,
    },
    "/v2.0/security-group-rules": {
        "GET": security_groups.list_rules,
        "POST": security_groups.create_rule,
    },
    "/v2.0/security-group-rules/{security_group_rule_id}": {
        "GET": security_groups.show_rule,
        "DELETE": security_groups.delete_rule,
    },
    "/v2.0/quotas": {"GET": quotas.list_quotas},
    "/v2.0/quotas/{project_id}": {
        "GET": quotas.show_quota,
        "PUT": quotas.update_quota,
        "DELETE": quotas.delete_quota,
    },
    "/v2.0/quotas/{project_id}/default": {"GET": quotas.show_default},
    "/v2.0/quotas/{project_id}/details": {"GET": quotas.show_details},
}
