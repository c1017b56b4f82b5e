"""/v2.0/extensions: what this service implements, so clients can discover it.

Only extensions whose behaviour is really here are listed; docs/network.md says what each covers.
"""

from __future__ import annotations

from starlette.responses import Response

from berth.network import exceptions
from berth.network.api.request import NetworkRequest

_UPDATED = "2026-11-23T00:00:00-00:00"

EXTENSIONS: dict[str, tuple[str, str]] = {
    "agent": ("agent", "The agents that report each host's networking."),
    "binding": ("Port Binding", "The binding:* attributes of ports."),
    "binding-extended": ("Port Bindings Extended", "Inactive bindings on other hosts, activation."),
    "ext-gw-mode": ("Neutron L3 Configurable external gateway mode", "enable_snat of gateways."),
    "extraroute": ("Neutron Extra Route", "Extra routes of routers."),
    "external-net": ("Neutron external network", "The router:external attribute of networks."),
    "fields": ("Field selection", "The fields query parameter of lists and shows."),
    "fip-port-details": ("Floating IP Port Details", "port_details of floating IPs."),
    "filter-validation": ("Filter parameters validation", "Unknown list filters are refused."),
    "ip_allocation": ("IP Allocation", "Immediate, deferred or no IP allocation of ports."),
    "multi-provider": ("Multi Provider Network", "Networks of several segments."),
    "net-mtu": ("Network MTU", "The mtu attribute of networks."),
    "network-ip-availability": ("Network IP Availability", "Used and total IPs per network."),
    "pagination": ("Pagination support", "limit, marker and page_reverse on lists."),
    "port-resource-request": ("Port Resource", "The resource_request attribute of ports."),
    "port-resource-request-groups": (
        "Port Resource Request Groups",
        "resource_request as request groups with same_subtree.",
    ),
    "port-security": ("Port Security", "port_security_enabled of networks and ports."),
    "project-id": ("project_id field enabled", "project_id beside tenant_id."),
    "provider": ("Provider Network", "The provider:* attributes of networks."),
    "qos": ("Quality of Service", "QoS policies and rules."),
    "qos-bw-limit-direction": ("Direction for QoS bandwidth limit rule", "Egress and ingress."),
    "qos-bw-minimum-ingress": ("Ingress minimum bandwidth rule", "Minimum bandwidth both ways."),
    "qos-pps-minimum": ("QoS minimum packet rate rule", "Minimum packet rate rules."),
    "quotas": (
        "Quota management support",
        "Networks, subnets, ports, RBAC policies, routers and floating IPs per project.",
    ),
    "quota_details": ("Quota details extension", "Each quota's limit, use and reservation."),
    "router": ("Neutron L3 Router", "Routers and floating IPs (control-plane state)."),
    "rbac-policies": ("RBAC Policies", "Sharing QoS policies with chosen projects."),
    "security-group": ("security-group", "Security groups, their rules, and those of ports."),
    "security-groups-normalized-cidr": (
        "Normalized CIDR field for security group rules",
        "normalized_cidr: a rule's remote prefix without host bits.",
    ),
    "segment": ("Segment", "Segments of routed networks."),
    "sorting": ("Sorting support", "sort_key and sort_dir on lists."),
    "standard-attr-description": ("standard-attr-description", "Description on resources."),
    "standard-attr-revisions": ("Resource revision numbers", "revision_number on resources."),
    "standard-attr-timestamp": ("Resource timestamps", "created_at and updated_at."),
    "stateful-security-group": ("Stateful security group", "The stateful flag of groups."),
}


def _view(alias: str) -> dict[str, object]:
    name, description = EXTENSIONS[alias]
    return {
        "alias": alias,
        "name": name,
        "description": description,
        "updated": _UPDATED,
        "links": [],
    }


def list_extensions(req: NetworkRequest) -> Response:
    return req.respond({"extensions": [_view(alias) for alias in sorted(EXTENSIONS)]})


def show_extension(req: NetworkRequest) -> Response:
    alias = req.param("alias")
    if alias not in EXTENSIONS:
        raise exceptions.NotFound(f"Extension with alias {alias} does not exist")
    return req.respond({"extension": _view(alias)})
