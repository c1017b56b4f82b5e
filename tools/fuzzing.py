"""What a fuzzing run over ``berth up``'s four APIs needs, shared by the CI test
(``tests/integration/test_fuzz_apis.py``) and the longer run from outside
(``python -m tools.fuzz_apis``): each API's OpenAPI document, the headers it is called with, and
one real resource of each kind for the operations' path parameters, so that generated bodies
reach the handlers' real work instead of a 404 for a random id."""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from typing import Any

import httpx
import schemathesis

from berth.common.openapi import ApiDescription, document
from berth.compute.api.openapi import DESCRIPTION as COMPUTE
from berth.image.api import PATCH_MEDIA_TYPE
from berth.image.openapi import DESCRIPTION as IMAGE
from berth.network.api.openapi import DESCRIPTION as NETWORKING
from berth.placement.api.openapi import DESCRIPTION as PLACEMENT

FLEET = {
    "cells": ["cell1"],
    "hosts": [{"name": "cn", "count": 2, "vcpus": 8, "memory_mb": 16384, "disk_gb": 100,
               "ovs": {"bridges": {"br-ex": {"physnets": ["public"], "egress_kbps": 1000000,
                                             "ingress_kbps": 1000000}}}}],
}  # fmt: skip
# By the prefix each API has under berth up.
DESCRIPTIONS: dict[str, ApiDescription] = {
    "placement": PLACEMENT,
    "compute": COMPUTE,
    "networking": NETWORKING,
    "image": IMAGE,
}
ADMIN = {"x-auth-token": "admin"}
# Per API: the newest microversion, so bodies are held to the schemas the documents show.
HEADERS = {
    "placement": {**ADMIN, "openstack-api-version": "placement latest"},
    "compute": {**ADMIN, "openstack-api-version": "compute latest"},
    "networking": ADMIN,
    "image": ADMIN,
}
# The image API's update is a JSON patch in its own media type.
schemathesis.serializer.alias(PATCH_MEDIA_TYPE, "application/json")


def operations() -> Iterator[tuple[str, Any]]:
    """Every operation of every API, from the documents the APIs serve (generated here, without
    a server), with the prefix of its API."""
    for api, description in DESCRIPTIONS.items():
        schema = schemathesis.openapi.from_dict(document(description, f"/{api}"))
        for result in schema.get_all_operations():
            yield api, result.ok()


def resources(client: httpx.Client) -> dict[str, str]:
    """One of each resource the operations take in their paths, by path parameter name."""

    def made(method: str, path: str, body: Any = None, **headers: str) -> Any:
        response = client.request(method, path, json=body, headers=headers)
        assert response.status_code < 300, (path, response.text)
        return response.json() if response.content else None

    latest = {"openstack-api-version": "placement latest"}
    provider = made("POST", "/placement/resource_providers", {"name": "fuzzed"}, **latest)
    made("PUT", "/placement/traits/CUSTOM_FUZZED", **latest)
    made("PUT", "/placement/resource_classes/CUSTOM_FUZZED", **latest)
    # Stock on the provider and a consumer of some of it, so the inventory, allocation and
    # usage reads answer something to check, and a delete of the stock meets its refusal.
    stock = f"/placement/resource_providers/{provider['uuid']}/inventories"
    made("POST", stock, {"resource_class": "CUSTOM_FUZZED", "total": 10}, **latest)
    consumer = str(uuid.uuid4())
    made("PUT", f"/placement/allocations/{consumer}", {
        "allocations": {provider["uuid"]: {"resources": {"CUSTOM_FUZZED": 1}}},
        "project_id": "admin", "user_id": "admin", "consumer_generation": None,
        "consumer_type": "INSTANCE"}, **latest)  # fmt: skip
    # On the hosts' physical network, so the server's port can be bound.
    network = made("POST", "/networking/v2.0/networks", {"network": {
        "name": "fuzzed", "provider:network_type": "flat",
        "provider:physical_network": "public"}})["network"]  # fmt: skip
    subnet = made("POST", "/networking/v2.0/subnets", {"subnet": {
        "network_id": network["id"], "cidr": "10.9.0.0/24", "ip_version": 4}})["subnet"]  # fmt: skip
    port = made("POST", "/networking/v2.0/ports", {"port": {"network_id": network["id"]}})["port"]
    segment = made("GET", f"/networking/v2.0/segments?network_id={network['id']}")["segments"][0]
    policy = made("POST", "/networking/v2.0/qos/policies", {"policy": {"name": "fuzzed"}})["policy"]
    rule = made("POST", f"/networking/v2.0/qos/policies/{policy['id']}/bandwidth_limit_rules",
                {"bandwidth_limit_rule": {"max_kbps": 1000}})["bandwidth_limit_rule"]  # fmt: skip
    rbac = made("POST", "/networking/v2.0/rbac-policies", {"rbac_policy": {
        "object_type": "network", "object_id": network["id"], "action": "access_as_shared",
        "target_tenant": "demo"}})["rbac_policy"]  # fmt: skip
    secgroup = made("POST", "/networking/v2.0/security-groups",
                    {"security_group": {"name": "fuzzed"}})["security_group"]  # fmt: skip
    secrule = made("POST", "/networking/v2.0/security-group-rules", {"security_group_rule": {
        "security_group_id": secgroup["id"], "direction": "ingress", "protocol": "tcp",
        "port_range_min": 22, "port_range_max": 22}})["security_group_rule"]  # fmt: skip
    agent = made("GET", "/networking/v2.0/agents")["agents"][0]
    external = made("POST", "/networking/v2.0/networks", {"network": {
        "name": "fuzzed-ext", "router:external": True}})["network"]  # fmt: skip
    made("POST", "/networking/v2.0/subnets", {"subnet": {
        "network_id": external["id"], "cidr": "10.8.0.0/24", "ip_version": 4}})  # fmt: skip
    router = made("POST", "/networking/v2.0/routers", {"router": {
        "name": "fuzzed", "external_gateway_info": {"network_id": external["id"]}}})["router"]  # fmt: skip
    floating = made("POST", "/networking/v2.0/floatingips", {"floatingip": {
        "floating_network_id": external["id"]}})["floatingip"]  # fmt: skip
    image = made("GET", "/image/v2/images")["images"][0]
    compute = {"openstack-api-version": "compute latest"}
    server = made("POST", "/compute/v2.1/servers", {"server": {
        "name": "fuzzed", "flavorRef": "1", "imageRef": image["id"],
        "networks": [{"uuid": network["id"]}], "metadata": {"fuzzed": "yes"}}}, **compute)["server"]  # fmt: skip
    wait_active(client, server["id"])
    made("PUT", f"/compute/v2.1/servers/{server['id']}/tags/fuzzed", **compute)
    keypair = made("POST", "/compute/v2.1/os-keypairs", {"keypair": {"name": "fuzzed"}}, **compute)
    group = made("POST", "/compute/v2.1/os-server-groups", {"server_group": {
        "name": "fuzzed", "policy": "anti-affinity"}}, **compute)["server_group"]  # fmt: skip
    aggregate = made("POST", "/compute/v2.1/os-aggregates", {"aggregate": {"name": "fuzzed"}})
    hypervisor = made("GET", "/compute/v2.1/os-hypervisors", **compute)["hypervisors"][0]
    service = made("GET", "/compute/v2.1/os-services", **compute)["services"][0]
    actions = made("GET", f"/compute/v2.1/servers/{server['id']}/os-instance-actions", **compute)
    return {
        # Placement
        "uuid": provider["uuid"],
        "resource_class": "CUSTOM_FUZZED",
        "name": "CUSTOM_FUZZED",
        "consumer_uuid": consumer,
        # Networking
        "network_id": network["id"],
        "subnet_id": subnet["id"],
        "port_id": port["id"],
        "segment_id": segment["id"],
        "policy_id": policy["id"],
        "rule_id": rule["id"],
        "rbac_policy_id": rbac["id"],
        "security_group_id": secgroup["id"],
        "security_group_rule_id": secrule["id"],
        "agent_id": agent["id"],
        "router_id": router["id"],
        "floatingip_id": floating["id"],
        "project_id": "admin",
        "host": "cn1",
        # Image
        "image_id": image["id"],
        # Compute
        "server_id": server["id"],
        "floating_ip_id": floating["id"],
        "flavor_id": "1",
        "key": "fuzzed",
        "tag": "fuzzed",
        "keypair_name": keypair["keypair"]["name"],
        "group_id": group["id"],
        "aggregate_id": str(aggregate["aggregate"]["id"]),
        "hypervisor_id": str(hypervisor["id"]),
        "hypervisor_hostname_pattern": "cn",
        "service_id": str(service["id"]),
        "request_id": actions["instanceActions"][0]["request_id"],
        "tenant_id": "admin",
        "class_name": "default",
        "host_name": "cn1",
        "alias": "os-hosts",
    }


def wait_active(client: httpx.Client, server_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = client.get(f"/compute/v2.1/servers/{server_id}").json()["server"]["status"]
        if status == "ACTIVE":
            return
        assert status == "BUILD", status
        time.sleep(0.2)
    raise AssertionError(f"server {server_id} did not become ACTIVE")


def real_ids(case: schemathesis.Case, resources: dict[str, str]) -> None:
    """The case's path parameters replaced by the fixture's resources, but for the resource a
    DELETE removes (the last parameter of its path)."""
    path = case.operation.path
    removed = path.rsplit("/", 1)[-1].strip("{}") if case.method == "DELETE" else None
    for name in case.path_parameters or {}:
        if name in resources and name != removed:
            case.path_parameters[name] = resources[name]
