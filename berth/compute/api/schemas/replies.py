"""What the Compute API's main operations answer at the newest microversion, for its OpenAPI
document, and the query parameters its lists read. Each resource's schema names the
attributes every view of it has; the others shown are held to their types where given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.common.openapi import Reply, links_schema

_STRING: dict[str, Any] = {"type": "string"}
_NULLABLE_STRING: dict[str, Any] = {"type": ["string", "null"]}
_INTEGER: dict[str, Any] = {"type": "integer"}
_BOOLEAN: dict[str, Any] = {"type": "boolean"}
_OBJECT: dict[str, Any] = {"type": "object"}
_STRINGS: dict[str, Any] = {"type": "array", "items": _STRING}
_LINKS = links_schema()


def _object(properties: dict[str, Any], *required: str) -> dict[str, Any]:
    return {"type": "object", "properties": properties, "required": list(required)}


def _one(member: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return _object({member: schema}, member)


def _listed(collection: str, schema: Mapping[str, Any]) -> dict[str, Any]:
    return _object(
        {collection: {"type": "array", "items": schema}, f"{collection}_links": _LINKS},
        collection,
    )


SERVER_REFERENCE = _object({"id": _STRING, "name": _STRING, "links": _LINKS}, "id", "links")
SERVER = _object(
    {
        "id": _STRING,
        "name": _STRING,
        "status": _STRING,
        "tenant_id": _STRING,
        "user_id": _STRING,
        "created": _STRING,
        "updated": _STRING,
        "flavor": _OBJECT,
        # "" for a server booted from a volume.
        "image": {"type": ["object", "string"]},
        "addresses": _OBJECT,
        "metadata": {"type": "object", "additionalProperties": _STRING},
        "key_name": _NULLABLE_STRING,
        "hostId": _STRING,
        "accessIPv4": _STRING,
        "accessIPv6": _STRING,
        "links": _LINKS,
        "locked": _BOOLEAN,
        "description": _NULLABLE_STRING,
        "tags": _STRINGS,
        "OS-EXT-STS:vm_state": _STRING,
        "OS-EXT-STS:task_state": _NULLABLE_STRING,
        "OS-EXT-STS:power_state": _INTEGER,
    },
    "id",
    "name",
    "status",
    "links",
)
SERVER_CREATED = _object(
    {"id": _STRING, "links": _LINKS, "adminPass": _STRING, "reservation_id": _STRING}, "id"
)
FLAVOR_REFERENCE = _object({"id": _STRING, "name": _STRING, "links": _LINKS}, "id", "links")
FLAVOR = _object(
    {
        "id": _STRING,
        "name": _STRING,
        "ram": _INTEGER,
        "vcpus": _INTEGER,
        "disk": _INTEGER,
        "OS-FLV-EXT-DATA:ephemeral": _INTEGER,
        # "" for none (as Nova shows it).
        "swap": {"type": ["integer", "string"]},
        "rxtx_factor": {"type": "number"},
        "os-flavor-access:is_public": _BOOLEAN,
        "links": _LINKS,
        "description": _NULLABLE_STRING,
        "extra_specs": {"type": "object", "additionalProperties": _STRING},
    },
    "id",
    "name",
    "ram",
    "vcpus",
    "disk",
    "links",
)
KEYPAIR = _object(
    {
        "name": _STRING,
        "public_key": _STRING,
        "fingerprint": _STRING,
        "type": _STRING,
        "user_id": _STRING,
        "private_key": _STRING,
    },
    "name",
    "public_key",
    "fingerprint",
)
AGGREGATE = _object(
    {
        "id": _INTEGER,
        "uuid": _STRING,
        "name": _STRING,
        "availability_zone": _NULLABLE_STRING,
        "hosts": _STRINGS,
        "metadata": {"type": "object", "additionalProperties": _STRING},
        "deleted": _BOOLEAN,
    },
    "id",
    "name",
)
SERVER_GROUP = _object(
    {
        "id": _STRING,
        "name": _STRING,
        "policy": _STRING,
        "rules": _OBJECT,
        "members": _STRINGS,
        "project_id": _STRING,
        "user_id": _STRING,
    },
    "id",
    "name",
)
SERVICE = _object(
    {
        "id": {"type": ["string", "integer"]},
        "binary": _STRING,
        "host": _STRING,
        "zone": _STRING,
        "status": {"enum": ["enabled", "disabled"]},
        "state": {"enum": ["up", "down"]},
        "disabled_reason": _NULLABLE_STRING,
        "forced_down": _BOOLEAN,
    },
    "binary",
    "host",
)
HYPERVISOR = _object(
    {
        "id": {"type": ["string", "integer"]},
        "hypervisor_hostname": _STRING,
        "state": _STRING,
        "status": _STRING,
    },
    "id",
    "hypervisor_hostname",
)
QUOTA_SET: dict[str, Any] = {
    "type": "object",
    "properties": {"id": _STRING},
    "additionalProperties": {"type": ["integer", "object"]},
}
INTERFACE = _object(
    {
        "port_state": _STRING,
        "fixed_ips": {"type": "array", "items": _OBJECT},
        "port_id": _STRING,
        "net_id": _STRING,
        "mac_addr": _STRING,
        "tag": _NULLABLE_STRING,
    },
    "port_id",
    "net_id",
)
MIGRATION = _object(
    {"id": _INTEGER, "status": _STRING, "migration_type": _STRING, "instance_uuid": _STRING},
    "id",
    "status",
)
INSTANCE_ACTION = _object(
    {
        "action": _STRING,
        "instance_uuid": _STRING,
        "request_id": _STRING,
        "user_id": _NULLABLE_STRING,
        "project_id": _NULLABLE_STRING,
        "start_time": _STRING,
        "message": _NULLABLE_STRING,
    },
    "action",
    "request_id",
)
FLOATING_IP = _object(
    {
        "id": _STRING,
        "ip": _STRING,
        "fixed_ip": _NULLABLE_STRING,
        "instance_id": _NULLABLE_STRING,
        "pool": _STRING,
    },
    "id",
    "ip",
)
SECURITY_GROUP_RULE = _object(
    {
        "id": _STRING,
        "parent_group_id": _STRING,
        "ip_protocol": _NULLABLE_STRING,
        "from_port": {"type": ["integer", "null"]},
        "to_port": {"type": ["integer", "null"]},
        "ip_range": _OBJECT,
        "group": _OBJECT,
    },
    "id",
    "parent_group_id",
)
SECURITY_GROUP = _object(
    {
        "id": _STRING,
        "name": _STRING,
        "description": _STRING,
        "tenant_id": _STRING,
        "rules": {"type": "array", "items": SECURITY_GROUP_RULE},
    },
    "id",
    "name",
    "rules",
)
METADATA = _one("metadata", {"type": "object", "additionalProperties": _STRING})

_SERVER = "/v2.1/servers/{server_id}"
_FLAVOR = "/v2.1/flavors/{flavor_id}"
_GROUP = "/v2.1/os-server-groups"
_AGGREGATE = "/v2.1/os-aggregates"
_QUOTA = "/v2.1/os-quota-sets/{tenant_id}"
_SECURITY_GROUPS = "/v2.1/os-security-groups"
_SECURITY_GROUP = f"{_SECURITY_GROUPS}/{{security_group_id}}"

REPLIES: Mapping[tuple[str, str], Reply] = {
    ("GET", "/v2.1/servers"): Reply(200, _listed("servers", SERVER_REFERENCE)),
    ("GET", "/v2.1/servers/detail"): Reply(200, _listed("servers", SERVER)),
    ("POST", "/v2.1/servers"): Reply(202, _one("server", SERVER_CREATED)),
    ("GET", _SERVER): Reply(200, _one("server", SERVER)),
    ("PUT", _SERVER): Reply(200, _one("server", SERVER)),
    ("DELETE", _SERVER): Reply(204, None),
    ("GET", f"{_SERVER}/metadata"): Reply(200, METADATA),
    ("PUT", f"{_SERVER}/metadata"): Reply(200, METADATA),
    ("POST", f"{_SERVER}/metadata"): Reply(200, METADATA),
    ("GET", f"{_SERVER}/tags"): Reply(200, _one("tags", _STRINGS)),
    ("PUT", f"{_SERVER}/tags"): Reply(200, _one("tags", _STRINGS)),
    ("GET", f"{_SERVER}/os-interface"): Reply(
        200, _one("interfaceAttachments", {"type": "array", "items": INTERFACE})
    ),
    ("GET", f"{_SERVER}/os-interface/{{port_id}}"): Reply(
        200, _one("interfaceAttachment", INTERFACE)
    ),
    ("POST", f"{_SERVER}/os-interface"): Reply(200, _one("interfaceAttachment", INTERFACE)),
    ("GET", f"{_SERVER}/os-instance-actions"): Reply(
        200, _one("instanceActions", {"type": "array", "items": INSTANCE_ACTION})
    ),
    ("GET", f"{_SERVER}/migrations"): Reply(200, _listed("migrations", MIGRATION)),
    ("GET", f"{_SERVER}/ips"): Reply(200, _one("addresses", _OBJECT)),
    ("GET", "/v2.1/os-migrations"): Reply(200, _listed("migrations", MIGRATION)),
    ("GET", "/v2.1/flavors"): Reply(200, _listed("flavors", FLAVOR_REFERENCE)),
    ("GET", "/v2.1/flavors/detail"): Reply(200, _listed("flavors", FLAVOR)),
    ("POST", "/v2.1/flavors"): Reply(200, _one("flavor", FLAVOR)),
    ("GET", _FLAVOR): Reply(200, _one("flavor", FLAVOR)),
    ("PUT", _FLAVOR): Reply(200, _one("flavor", FLAVOR)),
    ("GET", f"{_FLAVOR}/os-extra_specs"): Reply(
        200, _one("extra_specs", {"type": "object", "additionalProperties": _STRING})
    ),
    ("GET", "/v2.1/os-keypairs"): Reply(200, _listed("keypairs", _one("keypair", KEYPAIR))),
    ("POST", "/v2.1/os-keypairs"): Reply(201, _one("keypair", KEYPAIR)),
    ("GET", "/v2.1/os-keypairs/{keypair_name}"): Reply(200, _one("keypair", KEYPAIR)),
    ("GET", _GROUP): Reply(200, _one("server_groups", {"type": "array", "items": SERVER_GROUP})),
    ("POST", _GROUP): Reply(200, _one("server_group", SERVER_GROUP)),
    ("GET", f"{_GROUP}/{{group_id}}"): Reply(200, _one("server_group", SERVER_GROUP)),
    ("GET", _AGGREGATE): Reply(200, _one("aggregates", {"type": "array", "items": AGGREGATE})),
    ("POST", _AGGREGATE): Reply(200, _one("aggregate", AGGREGATE)),
    ("GET", f"{_AGGREGATE}/{{aggregate_id}}"): Reply(200, _one("aggregate", AGGREGATE)),
    ("PUT", f"{_AGGREGATE}/{{aggregate_id}}"): Reply(200, _one("aggregate", AGGREGATE)),
    ("POST", f"{_AGGREGATE}/{{aggregate_id}}/action"): Reply(200, _one("aggregate", AGGREGATE)),
    ("GET", "/v2.1/os-services"): Reply(200, _one("services", {"type": "array", "items": SERVICE})),
    ("PUT", "/v2.1/os-services/{service_id}"): Reply(200, _one("service", SERVICE)),
    ("GET", "/v2.1/os-hypervisors"): Reply(200, _listed("hypervisors", HYPERVISOR)),
    ("GET", "/v2.1/os-hypervisors/detail"): Reply(200, _listed("hypervisors", HYPERVISOR)),
    ("GET", "/v2.1/os-hypervisors/{hypervisor_id}"): Reply(200, _one("hypervisor", HYPERVISOR)),
    # Before 2.36 (a 404 from then).
    ("GET", _SECURITY_GROUPS): Reply(
        200, _one("security_groups", {"type": "array", "items": SECURITY_GROUP})
    ),
    ("POST", _SECURITY_GROUPS): Reply(200, _one("security_group", SECURITY_GROUP)),
    ("GET", _SECURITY_GROUP): Reply(200, _one("security_group", SECURITY_GROUP)),
    ("PUT", _SECURITY_GROUP): Reply(200, _one("security_group", SECURITY_GROUP)),
    ("DELETE", _SECURITY_GROUP): Reply(202, None),
    ("POST", "/v2.1/os-security-group-rules"): Reply(
        200, _one("security_group_rule", SECURITY_GROUP_RULE)
    ),
    ("DELETE", "/v2.1/os-security-group-rules/{security_group_rule_id}"): Reply(202, None),
    ("GET", f"{_SERVER}/os-security-groups"): Reply(
        200, _one("security_groups", {"type": "array", "items": SECURITY_GROUP})
    ),
    # Before 2.36 (a 404 from then).
    ("GET", "/v2.1/os-floating-ips"): Reply(
        200, _one("floating_ips", {"type": "array", "items": FLOATING_IP})
    ),
    ("POST", "/v2.1/os-floating-ips"): Reply(200, _one("floating_ip", FLOATING_IP)),
    ("GET", "/v2.1/os-floating-ips/{floating_ip_id}"): Reply(200, _one("floating_ip", FLOATING_IP)),
    ("DELETE", "/v2.1/os-floating-ips/{floating_ip_id}"): Reply(202, None),
    ("GET", _QUOTA): Reply(200, _one("quota_set", QUOTA_SET)),
    ("PUT", _QUOTA): Reply(200, _one("quota_set", QUOTA_SET)),
    ("GET", f"{_QUOTA}/defaults"): Reply(200, _one("quota_set", QUOTA_SET)),
    ("GET", f"{_QUOTA}/detail"): Reply(200, _one("quota_set", QUOTA_SET)),
    ("GET", "/v2.1/os-quota-class-sets/{class_name}"): Reply(
        200, _one("quota_class_set", QUOTA_SET)
    ),
    ("PUT", "/v2.1/os-quota-class-sets/{class_name}"): Reply(
        200, _one("quota_class_set", QUOTA_SET)
    ),
    ("GET", "/v2.1/limits"): Reply(
        200,
        _one(
            "limits",
            _object(
                {
                    "rate": {"type": "array"},
                    "absolute": {"type": "object", "additionalProperties": _INTEGER},
                },
                "absolute",
            ),
        ),
    ),
    ("GET", "/v2.1/os-availability-zone"): Reply(
        200,
        _one(
            "availabilityZoneInfo",
            {
                "type": "array",
                "items": _object(
                    {"zoneName": _STRING, "zoneState": _OBJECT}, "zoneName", "zoneState"
                ),
            },
        ),
    ),
}

_PAGE: dict[str, dict[str, Any]] = {"limit": _INTEGER, "marker": _STRING}
_SERVER_FILTERS: dict[str, dict[str, Any]] = {
    **_PAGE,
    **dict.fromkeys(
        (
            "name",
            "status",
            "host",
            "image",
            "flavor",
            "ip",
            "ip6",
            "tenant_id",
            "project_id",
            "user_id",
            "reservation_id",
            "changes-since",
            "changes-before",
            "tags",
            "tags-any",
            "not-tags",
            "not-tags-any",
            "sort_key",
            "availability_zone",
        ),
        _STRING,
    ),
    "sort_dir": {"enum": ["asc", "desc"]},
    "all_tenants": _STRING,
    "deleted": _STRING,
}
_FLAVOR_FILTERS: dict[str, dict[str, Any]] = {
    **_PAGE,
    "minRam": _INTEGER,
    "minDisk": _INTEGER,
    "is_public": _STRING,
    "sort_key": _STRING,
    "sort_dir": {"enum": ["asc", "desc"]},
}
_CHANGES: dict[str, dict[str, Any]] = {**_PAGE, "changes-since": _STRING}

QUERIES: Mapping[tuple[str, str], Mapping[str, Mapping[str, Any]]] = {
    ("GET", "/v2.1/servers"): _SERVER_FILTERS,
    ("GET", "/v2.1/servers/detail"): _SERVER_FILTERS,
    ("GET", "/v2.1/flavors"): _FLAVOR_FILTERS,
    ("GET", "/v2.1/flavors/detail"): _FLAVOR_FILTERS,
    ("GET", "/v2.1/os-keypairs"): {**_PAGE, "user_id": _STRING},
    ("GET", "/v2.1/os-keypairs/{keypair_name}"): {"user_id": _STRING},
    ("GET", "/v2.1/os-migrations"): {
        **_CHANGES,
        "host": _STRING,
        "status": _STRING,
        "migration_type": _STRING,
        "instance_uuid": _STRING,
        "changes-before": _STRING,
        "project_id": _STRING,
        "user_id": _STRING,
    },
    ("GET", f"{_SERVER}/os-instance-actions"): {**_CHANGES, "changes-before": _STRING},
    ("GET", _GROUP): {**_PAGE, "all_projects": _STRING, "offset": _INTEGER},
    ("GET", "/v2.1/os-services"): {"host": _STRING, "binary": _STRING},
    ("GET", "/v2.1/os-hypervisors"): {
        **_PAGE,
        "hypervisor_hostname_pattern": _STRING,
        "with_servers": _BOOLEAN,
    },
    ("GET", "/v2.1/os-hypervisors/detail"): {
        **_PAGE,
        "hypervisor_hostname_pattern": _STRING,
        "with_servers": _BOOLEAN,
    },
    ("GET", _QUOTA): {"user_id": _STRING},
    ("GET", f"{_QUOTA}/detail"): {"user_id": _STRING},
    ("PUT", _QUOTA): {"user_id": _STRING},
    ("DELETE", _QUOTA): {"user_id": _STRING},
    ("GET", _SECURITY_GROUPS): {"all_tenants": _STRING},
    ("GET", "/v2.1/limits"): {"tenant_id": _STRING},
    ("GET", "/v2.1/os-simple-tenant-usage"): {
        **_PAGE,
        "start": _STRING,
        "end": _STRING,
        "detailed": _STRING,
    },
}
