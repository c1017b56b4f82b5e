"""Which schema each Networking write's body is held to: the table the app checks bodies by
(``berth.common.validation.guarded``) and the OpenAPI document shows."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.network import qos as qos_kinds
from berth.network.api.schemas import (
    agents,
    networks,
    ports,
    qos,
    quotas,
    rbac,
    routers,
    security_groups,
    subnets,
)

_POLICY = "/v2.0/qos/policies/{policy_id}"

BODIES: Mapping[tuple[str, str], Mapping[str, Any]] = {
    ("POST", "/v2.0/networks"): networks.CREATE,
    ("PUT", "/v2.0/networks/{network_id}"): networks.UPDATE,
    ("POST", "/v2.0/segments"): networks.SEGMENT_CREATE,
    ("PUT", "/v2.0/segments/{segment_id}"): networks.SEGMENT_UPDATE,
    ("POST", "/v2.0/subnets"): subnets.CREATE,
    ("PUT", "/v2.0/subnets/{subnet_id}"): subnets.UPDATE,
    ("POST", "/v2.0/ports"): ports.CREATE,
    ("PUT", "/v2.0/ports/{port_id}"): ports.UPDATE,
    ("POST", "/v2.0/ports/{port_id}/bindings"): ports.BINDING,
    ("POST", "/v2.0/qos/policies"): qos.POLICY_CREATE,
    ("PUT", _POLICY): qos.POLICY_UPDATE,
    **{
        (method, path): qos.rule(kind)
        for kind in qos_kinds.RULE_TYPES.values()
        for method, path in (
            ("POST", f"{_POLICY}/{kind.collection}"),
            ("PUT", f"{_POLICY}/{kind.collection}/{{rule_id}}"),
        )
    },
    ("POST", "/v2.0/rbac-policies"): rbac.CREATE,
    ("PUT", "/v2.0/rbac-policies/{rbac_policy_id}"): rbac.UPDATE,
    ("PUT", "/v2.0/quotas/{project_id}"): quotas.UPDATE,
    ("POST", "/v2.0/security-groups"): security_groups.GROUP_CREATE,
    ("PUT", "/v2.0/security-groups/{security_group_id}"): security_groups.GROUP_UPDATE,
    ("POST", "/v2.0/security-group-rules"): security_groups.RULE_CREATE,
    ("POST", "/v2.0/routers"): routers.ROUTER_CREATE,
    ("PUT", "/v2.0/routers/{router_id}"): routers.ROUTER_UPDATE,
    ("PUT", "/v2.0/routers/{router_id}/add_router_interface"): routers.INTERFACE,
    ("PUT", "/v2.0/routers/{router_id}/remove_router_interface"): routers.INTERFACE,
    ("POST", "/v2.0/floatingips"): routers.FLOATINGIP_CREATE,
    ("PUT", "/v2.0/floatingips/{floatingip_id}"): routers.FLOATINGIP_UPDATE,
    ("POST", "/v2.0/agents"): agents.REPORT,
    ("PUT", "/v2.0/agents/{agent_id}"): agents.UPDATE,
}
