"""Every API of ``berth up`` serves its OpenAPI 3.1 document at ``<prefix>/openapi.json``,
without a token, and the document describes every route of the API's route table."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx
import jsonschema
import pytest
from openapi_spec_validator import OpenAPIV31SpecValidator, validate

from berth import config
from berth.allinone.stack import PREFIXES, Stack
from berth.common.inprocess import InProcessTransport
from berth.compute.api.routes import ROUTES as COMPUTE_ROUTES
from berth.compute.api.schemas import flavor, keypair, server_action
from berth.compute.host import fleet as fleets
from berth.image import schemas as image_schemas
from berth.image.api import ROUTES as IMAGE_ROUTES
from berth.network.api.routes import ROUTES as NETWORK_ROUTES
from berth.network.api.schemas import networks as network_schemas
from berth.placement.api.routes import ROUTES as PLACEMENT_ROUTES
from berth.placement.api.schemas import resource_provider
from tests.e2e.conftest import StackFactory

FLEET = {"cells": ["cell1"], "hosts": [{"name": "cn", "count": 1}]}

ROUTE_TABLES: dict[str, Mapping[str, Mapping[str, Any]]] = {
    PREFIXES["placement"]: PLACEMENT_ROUTES,
    PREFIXES["compute"]: COMPUTE_ROUTES,
    PREFIXES["network"]: NETWORK_ROUTES,
    "/image": IMAGE_ROUTES,
}


@pytest.fixture(scope="module")
def documents(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """Each API's document by prefix, fetched without a token from one stack."""
    settings = config.Settings(data_dir=tmp_path_factory.mktemp("openapi"))
    stack = Stack(settings, fleets.parse(FLEET), heartbeat_seconds=5)
    stack.start()
    try:
        with httpx.Client(
            transport=InProcessTransport(stack.app()), base_url="http://berth", timeout=60
        ) as client:
            found = {}
            for prefix in ROUTE_TABLES:
                response = client.get(f"{prefix}/openapi.json")
                assert response.status_code == 200, (prefix, response.text)
                assert response.headers["content-type"] == "application/json"
                found[prefix] = response.json()
            return found
    finally:
        stack.stop()


@pytest.mark.parametrize("prefix", list(ROUTE_TABLES))
def test_each_document_is_valid_openapi_3_1(
    documents: dict[str, dict[str, Any]], prefix: str
) -> None:
    document = documents[prefix]
    assert document["openapi"] == "3.1.0"
    validate(document, cls=OpenAPIV31SpecValidator)
    # Relative to the prefix the API is mounted under, so a client can call what it reads.
    assert document["servers"] == [{"url": prefix}]


@pytest.mark.parametrize("prefix", list(ROUTE_TABLES))
def test_every_route_is_described(documents: dict[str, dict[str, Any]], prefix: str) -> None:
    paths = documents[prefix]["paths"]
    for path, methods in ROUTE_TABLES[prefix].items():
        assert path in paths, path
        assert set(paths[path]) == {method.lower() for method in methods}, path
        for operation in paths[path].values():
            described = {p["name"] for p in operation.get("parameters", []) if p["in"] == "path"}
            assert described == set(path.replace("}", "{").split("{")[1::2]), path
            assert operation["responses"]["4XX"] == {"$ref": "#/components/responses/Error"}


def test_placement_bodies_are_its_newest_schemas(documents: dict[str, dict[str, Any]]) -> None:
    create = documents["/placement"]["paths"]["/resource_providers"]["post"]
    schema = create["requestBody"]["content"]["application/json"]["schema"]
    assert schema == resource_provider.POST_V1_14
    # A bodiless write has no request body.
    assert "requestBody" not in documents["/placement"]["paths"]["/traits/{name}"]["put"]


def test_compute_bodies_are_its_newest_schemas(documents: dict[str, dict[str, Any]]) -> None:
    paths = documents["/compute"]["paths"]

    def body(path: str) -> Any:
        return paths[path]["post"]["requestBody"]["content"]["application/json"]["schema"]

    assert body("/v2.1/flavors") == flavor.CREATE_V2_55
    assert body("/v2.1/servers/{server_id}/action") == server_action.ACTION_BY_VERSION[0][1]
    assert body("/v2.1/os-keypairs") == keypair.CREATE_V2_10


def test_networking_and_image_bodies_are_their_schemas(
    documents: dict[str, dict[str, Any]],
) -> None:
    create = documents["/networking"]["paths"]["/v2.0/networks"]["post"]
    assert create["requestBody"]["content"]["application/json"]["schema"] == network_schemas.CREATE
    image = documents["/image"]["paths"]["/v2/images"]["post"]
    assert image["requestBody"]["content"]["application/json"]["schema"] == image_schemas.CREATE


def test_main_operations_describe_their_answers_and_queries(
    documents: dict[str, dict[str, Any]],
) -> None:
    listing = documents["/networking"]["paths"]["/v2.0/ports"]["get"]
    assert (
        "ports"
        in listing["responses"]["200"]["content"]["application/json"]["schema"]["properties"]
    )
    queries = {p["name"] for p in listing["parameters"] if p["in"] == "query"}
    assert {"network_id", "device_id", "limit", "marker", "fields"} <= queries
    created = documents["/compute"]["paths"]["/v2.1/servers"]["post"]["responses"]
    assert created["202"]["content"]["application/json"]["schema"]["required"] == ["server"]
    assert "204" in documents["/image"]["paths"]["/v2/images/{image_id}"]["delete"]["responses"]


def test_each_error_schema_describes_a_real_refusal(
    documents: dict[str, dict[str, Any]], start_stack: StackFactory
) -> None:
    _, client = start_stack(FLEET)
    missing = {
        "/placement": "/placement/resource_providers/nothing-here",
        "/compute": "/compute/v2.1/servers/nothing-here",
        "/networking": "/networking/v2.0/networks/nothing-here",
        "/image": "/image/v2/images/nothing-here",
    }
    for prefix, url in missing.items():
        response = client.get(url)
        assert response.status_code == 404, url
        jsonschema.validate(response.json(), documents[prefix]["components"]["schemas"]["Error"])


def test_the_document_needs_no_token_but_the_api_does(start_stack: StackFactory) -> None:
    _, client = start_stack(FLEET)
    del client.headers["x-auth-token"]
    assert client.get("/compute/openapi.json").status_code == 200
    assert client.get("/compute/v2.1/flavors").status_code == 401


def test_placement_replies_match_their_schemas(
    documents: dict[str, dict[str, Any]], start_stack: StackFactory
) -> None:
    """Every Placement operation that answers a body, called at the newest microversion on a
    small tree of providers with inventory, traits, aggregates and an allocation: each answer
    is valid against the reply its document declares."""
    _, client = start_stack(FLEET)
    client.headers["openstack-api-version"] = "placement latest"
    paths = documents["/placement"]["paths"]

    # The real values of the path parameters.
    ids = {"resource_class": "VCPU", "name": "CUSTOM_E2E"}

    def answered(method: str, path: str, status: int, body: Any = None, **query: str) -> Any:
        """The answer to ``method path``, with ``status``, checked against its reply."""
        response = client.request(
            method, f"/placement{path.format_map(ids)}", json=body, params=query
        )
        assert response.status_code == status, (method, path, response.text)
        responses = paths[path][method.lower()]["responses"]
        reply = responses.get(str(status), responses["2XX"])
        if "content" not in reply:
            assert not response.content, (method, path)
            return None
        jsonschema.validate(
            response.json(),
            reply["content"]["application/json"]["schema"],
            cls=jsonschema.Draft202012Validator,
            format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER,
        )
        return response.json()

    answered("GET", "/", 200)
    parent = answered("POST", "/resource_providers", 200, {"name": "e2e-root"})["uuid"]
    ids["uuid"] = parent
    child = answered(
        "POST", "/resource_providers", 200, {"name": "e2e-child", "parent_provider_uuid": parent}
    )["uuid"]
    answered("PUT", "/resource_providers/{uuid}", 200, {"name": "e2e-root-renamed"})
    answered("GET", "/resource_providers/{uuid}", 200)
    assert (
        len(answered("GET", "/resource_providers", 200, in_tree=parent)["resource_providers"]) == 2
    )
    stock = {"VCPU": {"total": 8, "allocation_ratio": 2.0}, "MEMORY_MB": {"total": 4096}}
    answered(
        "PUT",
        "/resource_providers/{uuid}/inventories",
        200,
        {"resource_provider_generation": 0, "inventories": stock},
    )
    # The disk is the child's.
    ids["uuid"] = child
    answered(
        "POST",
        "/resource_providers/{uuid}/inventories",
        201,
        {"resource_class": "DISK_GB", "total": 100},
    )
    ids["uuid"] = parent
    answered("GET", "/resource_providers/{uuid}/inventories", 200)
    shown = answered("GET", "/resource_providers/{uuid}/inventories/{resource_class}", 200)
    answered(
        "PUT",
        "/resource_providers/{uuid}/inventories/{resource_class}",
        200,
        {"resource_provider_generation": shown["resource_provider_generation"], "total": 16},
    )
    aggregate = "5a4e8a2b-7d5c-4f0e-9d1a-2b3c4d5e6f70"
    generation = answered("GET", "/resource_providers/{uuid}/aggregates", 200)[
        "resource_provider_generation"
    ]
    answered(
        "PUT",
        "/resource_providers/{uuid}/aggregates",
        200,
        {"aggregates": [aggregate], "resource_provider_generation": generation},
    )
    answered("PUT", "/traits/{name}", 201)
    answered("GET", "/traits", 200, name="startswith:CUSTOM_")
    generation = answered("GET", "/resource_providers/{uuid}/traits", 200)[
        "resource_provider_generation"
    ]
    answered(
        "PUT",
        "/resource_providers/{uuid}/traits",
        200,
        {"traits": ["CUSTOM_E2E"], "resource_provider_generation": generation},
    )
    answered("PUT", "/resource_classes/{name}", 201)
    answered("GET", "/resource_classes", 200)
    answered("GET", "/resource_classes/{name}", 200)
    # Two groups on two providers of one tree, so the answers carry mappings and parents.
    found = answered(
        "GET",
        "/allocation_candidates",
        200,
        resources1="VCPU:2,MEMORY_MB:512",
        required1="CUSTOM_E2E",
        resources2="DISK_GB:10",
        member_of1=aggregate,
        group_policy="none",
    )
    assert len(found["allocation_requests"]) == 1
    assert set(found["provider_summaries"]) == {parent, child}
    answered("GET", "/allocation_candidates/explain", 200, resources="VCPU:1000")
    ids["consumer_uuid"] = "0d5f1c3e-2a4b-4c6d-8e9f-0a1b2c3d4e5f"
    answered("GET", "/allocations/{consumer_uuid}", 200)
    allocation = {
        **found["allocation_requests"][0],
        "project_id": "admin",
        "user_id": "admin",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    answered("PUT", "/allocations/{consumer_uuid}", 204, allocation)
    answered("GET", "/allocations/{consumer_uuid}", 200)
    answered("GET", "/resource_providers/{uuid}/allocations", 200)
    answered("GET", "/resource_providers/{uuid}/usages", 200)
    usages = answered("GET", "/usages", 200, project_id="admin")["usages"]
    assert usages["INSTANCE"]["consumer_count"] == 1
