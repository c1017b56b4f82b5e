"""What the Networking API's main operations answer, for its OpenAPI document: one schema per
resource, inside its member key (a show, a create, an update) or as a list under its collection
key (a list, a bulk create), and the query parameters each list reads.

``fields=`` selects which attributes a resource shows, so none is required; each one shown is
held to its type.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping
from typing import Any

from berth.common.openapi import Reply, links_schema
from berth.network import qos as qos_kinds
from berth.network.api import (
    agents,
    networks,
    ports,
    qos,
    rbac,
    routers,
    security_groups,
    subnets,
)

_STRING: dict[str, Any] = {"type": "string"}
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_INTEGER: dict[str, Any] = {"type": "integer"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STRING}
_OBJECT: dict[str, Any] = {"type": "object"}
_TIME: dict[str, Any] = {"type": "string", "format": "date-time"}
_LINKS = links_schema()
_STANDARD: dict[str, Any] = {
    "id": _STRING,
    "name": _STRING,
    "description": _STRING,
    "project_id": _STRING,
    "tenant_id": _STRING,
    "tags": _STRINGS,
    "created_at": _TIME,
    "updated_at": _TIME,
    "revision_number": _INTEGER,
}


def _resource(properties: dict[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": properties}


NETWORK = _resource(
    {
        **_STANDARD,
        "admin_state_up": _BOOLEAN,
        "status": _STRING,
        "subnets": _STRINGS,
        "shared": _BOOLEAN,
        "mtu": _INTEGER,
        "router:external": _BOOLEAN,
        "qos_policy_id": _NULLABLE_STRING,
        "is_default": _BOOLEAN,
        "port_security_enabled": _BOOLEAN,
        "availability_zone_hints": _STRINGS,
        "availability_zones": _STRINGS,
        "l2_adjacency": _BOOLEAN,
        "provider:network_type": _STRING,
        "provider:physical_network": _NULLABLE_STRING,
        "provider:segmentation_id": {"type": ["integer", "null"]},
        "segments": {"type": "array", "items": _OBJECT},
    }
)
SEGMENT = _resource(
    {
        **_STANDARD,
        "name": _NULLABLE_STRING,
        "network_id": _STRING,
        "network_type": _STRING,
        "physical_network": _NULLABLE_STRING,
        "segmentation_id": {"type": ["integer", "null"]},
    }
)
_POOL = {"type": "object", "properties": {"start": _STRING, "end": _STRING}}
SUBNET = _resource(
    {
        **_STANDARD,
        "network_id": _STRING,
        "segment_id": _NULLABLE_STRING,
        "ip_version": {"enum": [4, 6]},
        "cidr": _STRING,
        "gateway_ip": _NULLABLE_STRING,
        "allocation_pools": {"type": "array", "items": _POOL},
        "dns_nameservers": _STRINGS,
        "host_routes": {"type": "array", "items": _OBJECT},
        "enable_dhcp": _BOOLEAN,
        "ipv6_ra_mode": _NULLABLE_STRING,
        "ipv6_address_mode": _NULLABLE_STRING,
        "subnetpool_id": _NULLABLE_STRING,
        "service_types": _STRINGS,
    }
)
PORT = _resource(
    {
        **_STANDARD,
        "network_id": _STRING,
        "mac_address": _STRING,
        "admin_state_up": _BOOLEAN,
        "status": _STRING,
        "device_id": _STRING,
        "device_owner": _STRING,
        "fixed_ips": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"subnet_id": _STRING, "ip_address": _STRING},
            },
        },
        "qos_policy_id": _NULLABLE_STRING,
        "qos_network_policy_id": _NULLABLE_STRING,
        "resource_request": {"type": ["object", "null"]},
        "binding:host_id": _STRING,
        "binding:vnic_type": _STRING,
        "binding:profile": _OBJECT,
        "binding:vif_type": _STRING,
        "binding:vif_details": _OBJECT,
        "port_security_enabled": _BOOLEAN,
        "security_groups": _STRINGS,
    }
)
BINDING = _resource(
    {
        "host": _STRING,
        "vnic_type": _STRING,
        "profile": _OBJECT,
        "vif_type": _STRING,
        "vif_details": _OBJECT,
        "status": _STRING,
    }
)
_RULE_PROPERTIES: dict[str, Any] = {
    "id": _STRING,
    "direction": _STRING,
    "qos_policy_id": _STRING,
    "type": _STRING,
    **dict.fromkeys(("max_kbps", "max_burst_kbps", "min_kbps", "min_kpps"), _INTEGER),
}
RULE = _resource(_RULE_PROPERTIES)
POLICY = _resource(
    {
        **_STANDARD,
        "shared": _BOOLEAN,
        "is_default": _BOOLEAN,
        "rules": {"type": "array", "items": RULE},
    }
)
RBAC_POLICY = _resource(
    {
        "id": _STRING,
        "project_id": _STRING,
        "tenant_id": _STRING,
        "object_type": _STRING,
        "object_id": _STRING,
        "action": _STRING,
        "target_tenant": _STRING,
    }
)
AGENT = _resource(
    {
        "id": _STRING,
        "agent_type": _STRING,
        "binary": _STRING,
        "topic": _STRING,
        "host": _STRING,
        "admin_state_up": _BOOLEAN,
        "alive": _BOOLEAN,
        "configurations": _OBJECT,
        "description": _NULLABLE_STRING,
        "availability_zone": _NULLABLE_STRING,
        "resources_synced": {"type": ["boolean", "null"]},
    }
)
SECURITY_GROUP_RULE = _resource(
    {
        **{name: _STANDARD[name] for name in ("id", "description", "project_id", "tenant_id")},
        **{name: _STANDARD[name] for name in ("created_at", "updated_at", "revision_number")},
        "security_group_id": _STRING,
        "direction": _STRING,
        "ethertype": _STRING,
        "protocol": _NULLABLE_STRING,
        "port_range_min": {"type": ["integer", "null"]},
        "port_range_max": {"type": ["integer", "null"]},
        "remote_ip_prefix": _NULLABLE_STRING,
        "normalized_cidr": _NULLABLE_STRING,
        "remote_group_id": _NULLABLE_STRING,
    }
)
SECURITY_GROUP = _resource(
    {
        **_STANDARD,
        "stateful": _BOOLEAN,
        "security_group_rules": {"type": "array", "items": SECURITY_GROUP_RULE},
    }
)
_FIXED_IPS: dict[str, Any] = {
    "type": "array",
    "items": {"type": "object", "properties": {"subnet_id": _STRING, "ip_address": _STRING}},
}
ROUTER = _resource(
    {
        **_STANDARD,
        "admin_state_up": _BOOLEAN,
        "status": _STRING,
        "external_gateway_info": {
            "type": ["object", "null"],
            "properties": {
                "network_id": _STRING,
                "enable_snat": _BOOLEAN,
                "external_fixed_ips": _FIXED_IPS,
            },
        },
        "routes": {
            "type": "array",
            "items": {
                "type": "object",
                "properties": {"destination": _STRING, "nexthop": _STRING},
            },
        },
    }
)
# What adding or removing an interface answers: the interface, not under a member key.
ROUTER_INTERFACE = _resource(
    {
        "id": _STRING,
        "tenant_id": _STRING,
        "project_id": _STRING,
        "port_id": _STRING,
        "subnet_id": _NULLABLE_STRING,
        "subnet_ids": _STRINGS,
        "network_id": _STRING,
    }
)
FLOATINGIP = _resource(
    {
        **{name: value for name, value in _STANDARD.items() if name != "name"},
        "floating_network_id": _STRING,
        "floating_ip_address": _STRING,
        "port_id": _NULLABLE_STRING,
        "fixed_ip_address": _NULLABLE_STRING,
        "router_id": _NULLABLE_STRING,
        "status": _STRING,
        "port_details": {"type": ["object", "null"]},
    }
)
QUOTA: dict[str, Any] = {"type": "object", "additionalProperties": _INTEGER}
QUOTA_DETAILS: dict[str, Any] = {
    "type": "object",
    "additionalProperties": {
        "type": "object",
        "properties": {"limit": _INTEGER, "used": _INTEGER, "reserved": _INTEGER},
        "required": ["limit", "used", "reserved"],
    },
}


def _one(member: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {"type": "object", "properties": {member: schema}, "required": [member]}


def _listed(collection: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {
            collection: {"type": "array", "items": schema},
            f"{collection}_links": _LINKS,
        },
        "required": [collection],
    }


def _one_or_listed(member: str, collection: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    """A create's answer: one resource, or a list of them for a bulk create."""
    return {"anyOf": [_one(member, schema), _listed(collection, schema)]}


_RESOURCES: dict[str, tuple[str, str, str, dict[str, Any]]] = {
    # path: (member, collection, path parameter, schema)
    "/v2.0/networks": ("network", "networks", "network_id", NETWORK),
    "/v2.0/segments": ("segment", "segments", "segment_id", SEGMENT),
    "/v2.0/subnets": ("subnet", "subnets", "subnet_id", SUBNET),
    "/v2.0/ports": ("port", "ports", "port_id", PORT),
    "/v2.0/qos/policies": ("policy", "policies", "policy_id", POLICY),
    "/v2.0/rbac-policies": ("rbac_policy", "rbac_policies", "rbac_policy_id", RBAC_POLICY),
    "/v2.0/agents": ("agent", "agents", "agent_id", AGENT),
    "/v2.0/security-groups": (
        "security_group",
        "security_groups",
        "security_group_id",
        SECURITY_GROUP,
    ),
    "/v2.0/routers": ("router", "routers", "router_id", ROUTER),
    "/v2.0/floatingips": ("floatingip", "floatingips", "floatingip_id", FLOATINGIP),
    # Rules are not updated: their PUT is taken out below.
    "/v2.0/security-group-rules": (
        "security_group_rule",
        "security_group_rules",
        "security_group_rule_id",
        SECURITY_GROUP_RULE,
    ),
    **{
        f"/v2.0/qos/policies/{{policy_id}}/{kind.collection}": (
            kind.member,
            kind.collection,
            "rule_id",
            RULE,
        )
        for kind in qos_kinds.RULE_TYPES.values()
    },
}
_BULK = ("/v2.0/networks", "/v2.0/subnets", "/v2.0/ports")


def _replies() -> dict[tuple[str, str], Reply]:
    found: dict[tuple[str, str], Reply] = {}
    for path, (member, collection, parameter, schema) in _RESOURCES.items():
        one = _one(member, schema)
        item = f"{path}/{{{parameter}}}"
        found[("GET", path)] = Reply(200, _listed(collection, schema))
        created = _one_or_listed(member, collection, schema) if path in _BULK else one
        found[("POST", path)] = Reply(201, created)
        found[("GET", item)] = Reply(200, one)
        found[("PUT", item)] = Reply(200, one)
        found[("DELETE", item)] = Reply(204, None)
    # An agent's report answers 200 when the agent was known already: not declared.
    del found[("POST", "/v2.0/agents")]
    del found[("PUT", "/v2.0/security-group-rules/{security_group_rule_id}")]
    quota = "/v2.0/quotas/{project_id}"
    binding = "/v2.0/ports/{port_id}/bindings"
    return {
        **found,
        ("PUT", "/v2.0/routers/{router_id}/add_router_interface"): Reply(200, ROUTER_INTERFACE),
        ("PUT", "/v2.0/routers/{router_id}/remove_router_interface"): Reply(200, ROUTER_INTERFACE),
        (("GET", binding)): Reply(200, _listed("bindings", BINDING)),
        (("POST", binding)): Reply(201, _one("binding", BINDING)),
        ("GET", f"{binding}/{{host}}"): Reply(200, _one("binding", BINDING)),
        ("GET", "/v2.0/quotas"): Reply(200, _listed("quotas", QUOTA)),
        ("GET", quota): Reply(200, _one("quota", QUOTA)),
        ("PUT", quota): Reply(200, _one("quota", QUOTA)),
        ("GET", f"{quota}/default"): Reply(200, _one("quota", QUOTA)),
        ("GET", f"{quota}/details"): Reply(200, _one("quota", QUOTA_DETAILS)),
        ("DELETE", quota): Reply(204, None),
    }


REPLIES = _replies()

_PAGING: dict[str, dict[str, Any]] = {
    "fields": _STRING,
    "limit": _INTEGER,
    "marker": _STRING,
    "page_reverse": _BOOLEAN,
    "sort_key": _STRING,
    "sort_dir": {"enum": ["asc", "desc"]},
}


def _list_query(filters: Collection[str]) -> dict[str, dict[str, Any]]:
    return {**_PAGING, **dict.fromkeys(sorted(filters), _STRING)}


QUERIES: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = {
    ("GET", "/v2.0/networks"): _list_query(networks.NETWORK_FILTERS),
    ("GET", "/v2.0/segments"): _list_query(networks.SEGMENT_FILTERS),
    ("GET", "/v2.0/subnets"): _list_query(subnets.SUBNET_FILTERS),
    ("GET", "/v2.0/ports"): _list_query(ports.PORT_FILTERS),
    ("GET", "/v2.0/qos/policies"): _list_query(qos.POLICY_FILTERS),
    ("GET", "/v2.0/rbac-policies"): _list_query(rbac.RBAC_FILTERS),
    ("GET", "/v2.0/agents"): _list_query(agents.AGENT_FILTERS),
    ("GET", "/v2.0/routers"): _list_query(routers.ROUTER_FILTERS),
    ("GET", "/v2.0/floatingips"): _list_query(routers.FLOATINGIP_FILTERS),
    ("GET", "/v2.0/security-groups"): _list_query(security_groups.GROUP_FILTERS),
    ("GET", "/v2.0/security-group-rules"): _list_query(security_groups.RULE_FILTERS),
    ("GET", "/v2.0/network-ip-availabilities"): _list_query(subnets.AVAILABILITY_FILTERS),
    **{
        ("GET", f"/v2.0/qos/policies/{{policy_id}}/{kind.collection}"): _list_query(
            {"id", "direction", *kind.rates}
        )
        for kind in qos_kinds.RULE_TYPES.values()
    },
    **{
        ("GET", f"{path}/{{{parameter}}}"): {"fields": _STRING}
        for path, (_, _, parameter, _) in _RESOURCES.items()
    },
}
