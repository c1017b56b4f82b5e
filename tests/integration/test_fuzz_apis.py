"""Schemathesis against every API of a real ``berth up``: requests generated from each API's own
OpenAPI document (``<prefix>/openapi.json``), with a fixed seed and a few examples per operation.
No response may be a 5xx, and every refusal must be in the API's documented error document.

Path parameters are mostly real: the fixture makes one of each resource (a provider, a server, a
network, a port, an image...) and every operation is called on it, so the generated bodies reach
the handlers' real work instead of a 404 for a random id. A DELETE of the resource itself keeps
its random id, so the resource stays there for the operations after it.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterator
from typing import Any

import httpx
import pytest
import schemathesis
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import seed as fixed_seed
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error, response_schema_conformance

from berth.common.openapi import ApiDescription, document
from berth.compute.api.openapi import DESCRIPTION as COMPUTE
from berth.image.api import PATCH_MEDIA_TYPE
from berth.image.openapi import DESCRIPTION as IMAGE
from berth.network.api.openapi import DESCRIPTION as NETWORKING
from berth.placement.api.openapi import DESCRIPTION as PLACEMENT
from tests.integration.server import running_berth_up

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
# Few examples per operation, so the four APIs (about 200 operations) take a minute or two;
# BERTH_FUZZ_EXAMPLES asks for more (and BERTH_FUZZ_SEED for another seed) when hunting.
FUZZ = settings(
    max_examples=int(os.environ.get("BERTH_FUZZ_EXAMPLES", "8")),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
SEED = int(os.environ.get("BERTH_FUZZ_SEED", "20"))

# The image API's update is a JSON patch in its own media type.
schemathesis.serializer.alias(PATCH_MEDIA_TYPE, "application/json")


@pytest.fixture(scope="module")
def berth(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, dict[str, str]]]:
    """The base URL of a ``berth up`` and the ids of one real resource of each kind."""
    work = tmp_path_factory.mktemp("fuzz")
    fleet = work / "fleet.yaml"
    fleet.write_text(yaml.safe_dump(FLEET))
    with (
        running_berth_up(str(work / "data"), str(fleet)) as url,
        httpx.Client(base_url=url, headers=ADMIN, timeout=60) as client,
    ):
        # The operations below come from the same generator; the documents served (without a
        # token) are these.
        for api, description in DESCRIPTIONS.items():
            served = httpx.get(f"{url}/{api}/openapi.json", timeout=60)
            assert served.json() == document(description, f"/{api}"), api
        yield url, _resources(client)


def _resources(client: httpx.Client) -> dict[str, str]:
    """One of each resource the operations take in their paths, by path parameter name."""

    def made(method: str, path: str, body: Any = None, **headers: str) -> Any:
        response = client.request(method, path, json=body, headers=headers)
        assert response.status_code < 300, (path, response.text)
        return response.json() if response.content else None

    latest = {"openstack-api-version": "placement latest"}
    provider = made("POST", "/placement/resource_providers", {"name": "fuzzed"}, **latest)
    made("PUT", "/placement/traits/CUSTOM_FUZZED", **latest)
    made("PUT", "/placement/resource_classes/CUSTOM_FUZZED", **latest)
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
    _wait_active(client, server["id"])
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
        # Networking
        "network_id": network["id"],
        "subnet_id": subnet["id"],
        "port_id": port["id"],
        "segment_id": segment["id"],
        "policy_id": policy["id"],
        "rule_id": rule["id"],
        "rbac_policy_id": rbac["id"],
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


def _wait_active(client: httpx.Client, server_id: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        status = client.get(f"/compute/v2.1/servers/{server_id}").json()["server"]["status"]
        if status == "ACTIVE":
            return
        assert status == "BUILD", status
        time.sleep(0.2)
    raise AssertionError(f"server {server_id} did not become ACTIVE")


def _real_ids(case: schemathesis.Case, resources: dict[str, str]) -> None:
    """The case's path parameters replaced by the fixture's resources, but for the resource a
    DELETE removes (the last parameter of its path)."""
    path = case.operation.path
    removed = path.rsplit("/", 1)[-1].strip("{}") if case.method == "DELETE" else None
    for name in case.path_parameters or {}:
        if name in resources and name != removed:
            case.path_parameters[name] = resources[name]


def _check(case: schemathesis.Case, url: str, resources: dict[str, str], api: str) -> None:
    _real_ids(case, resources)
    response = case.call(base_url=f"{url}/{api}", headers=HEADERS[api])
    checks = [response_schema_conformance]
    # A 5xx is a bug, unless the operation documents it: a 501 for what Berth does not do.
    if str(response.status_code) not in case.operation.definition.raw["responses"]:
        checks.append(not_a_server_error)
    case.validate_response(response, checks=checks)


def _operations() -> list[Any]:
    """Every operation of every API, from the documents the APIs serve (generated here, without
    a server, so that each is a test of its own)."""
    found = []
    for api, description in DESCRIPTIONS.items():
        schema = schemathesis.openapi.from_dict(document(description, f"/{api}"))
        for result in schema.get_all_operations():
            operation = result.ok()
            found.append(pytest.param(api, operation, id=f"{api} {operation.label}"))
    return found


@pytest.mark.parametrize(("api", "operation"), _operations())
def test_no_server_error_and_documented_refusals(
    berth: tuple[str, dict[str, str]], api: str, operation: Any
) -> None:
    url, resources = berth
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @fixed_seed(SEED)
    @FUZZ
    @given(case=cases)
    def fuzz(case: schemathesis.Case) -> None:
        _check(case, url, resources, api)

    fuzz()
