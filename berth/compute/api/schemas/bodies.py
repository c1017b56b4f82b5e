"""Which schema each Compute write's body is held to, per microversion (newest first): the
table the app checks bodies by (``berth.common.validation.guarded``) and the OpenAPI document
shows. A ``None`` schema is a microversion from which the route is gone (the handler's 404)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from berth.compute.api import microversion
from berth.compute.api.schemas import (
    aggregate,
    flavor,
    floating_ip,
    image_metadata,
    interface,
    keypair,
    os_host,
    quota,
    security_group,
    server,
    server_action,
    server_external_events,
    server_group,
    server_metadata,
    server_tags,
    service,
)

Versioned = list[tuple[tuple[int, int], dict[str, Any] | None]]


def _always(schema: dict[str, Any]) -> Versioned:
    return [((2, 1), schema)]


def _proxied(schema: dict[str, Any]) -> Versioned:
    """A proxy of the network's or the image service's, gone from 2.36."""
    return [(microversion.PROXIES_GONE, None), ((2, 1), schema)]


_SERVER = "/v2.1/servers/{server_id}"
_FLAVOR = "/v2.1/flavors/{flavor_id}"

BODIES: Mapping[tuple[str, str], Versioned] = {
    ("POST", "/v2.1/servers"): list(server.CREATE_BY_VERSION),
    ("POST", "/v2.1/os-berth-what-if"): list(server.WHAT_IF_BY_VERSION),
    ("PUT", _SERVER): list(server.UPDATE_BY_VERSION),
    ("POST", f"{_SERVER}/action"): list(server_action.ACTION_BY_VERSION),
    ("POST", f"{_SERVER}/os-interface"): list(interface.ATTACH_BY_VERSION),
    ("POST", "/v2.1/os-server-external-events"): list(server_external_events.BY_VERSION),
    ("POST", "/v2.1/os-security-groups"): _proxied(security_group.GROUP),
    ("PUT", "/v2.1/os-security-groups/{security_group_id}"): _proxied(security_group.GROUP),
    ("POST", "/v2.1/os-security-group-rules"): _proxied(security_group.RULE),
    ("POST", "/v2.1/os-floating-ips"): _proxied(floating_ip.ALLOCATE),
    ("PUT", "/v2.1/images/{image_id}/metadata"): _proxied(image_metadata.ALL),
    ("POST", "/v2.1/images/{image_id}/metadata"): _proxied(image_metadata.ALL),
    ("PUT", "/v2.1/images/{image_id}/metadata/{key}"): _proxied(image_metadata.ONE),
    ("PUT", f"{_SERVER}/metadata"): _always(server_metadata.ALL),
    ("POST", f"{_SERVER}/metadata"): _always(server_metadata.ALL),
    ("PUT", f"{_SERVER}/metadata/{{key}}"): _always(server_metadata.ONE),
    ("PUT", f"{_SERVER}/tags"): [(microversion.SERVER_TAGS, server_tags.REPLACE), ((2, 1), None)],
    ("POST", "/v2.1/flavors"): list(flavor.CREATE_BY_VERSION),
    ("PUT", _FLAVOR): [((2, 55), flavor.UPDATE), ((2, 1), None)],
    ("POST", f"{_FLAVOR}/action"): _always(flavor.ACTION),
    ("POST", f"{_FLAVOR}/os-extra_specs"): _always(flavor.CREATE_EXTRA_SPECS),
    ("PUT", f"{_FLAVOR}/os-extra_specs/{{key}}"): _always(flavor.UPDATE_EXTRA_SPEC),
    ("POST", "/v2.1/os-server-groups"): list(server_group.CREATE_BY_VERSION),
    ("POST", "/v2.1/os-aggregates"): _always(aggregate.CREATE),
    ("PUT", "/v2.1/os-aggregates/{aggregate_id}"): _always(aggregate.UPDATE),
    ("POST", "/v2.1/os-aggregates/{aggregate_id}/action"): _always(aggregate.ACTION),
    ("PUT", "/v2.1/os-hosts/{host_name}"): [((2, 43), None), ((2, 1), os_host.UPDATE)],
    ("PUT", "/v2.1/os-services/{service_id}"): list(service.UPDATE_BY_VERSION),
    ("POST", "/v2.1/os-keypairs"): list(keypair.CREATE_BY_VERSION),
    ("PUT", "/v2.1/os-quota-sets/{tenant_id}"): _always(quota.QUOTA_SET),
    ("PUT", "/v2.1/os-quota-class-sets/{class_name}"): _always(quota.QUOTA_CLASS_SET),
}


def newest(versioned: Versioned) -> dict[str, Any] | None:
    """The schema of the newest microversion that has the route, for the OpenAPI document."""
    return next((schema for _, schema in versioned if schema is not None), None)
