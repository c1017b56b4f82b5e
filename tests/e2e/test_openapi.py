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
from berth.compute.api.schemas import flavor, floating_ip, keypair, server, server_action
from berth.compute.host import fleet as fleets
from berth.image import schemas as image_schemas
from berth.image.api import ROUTES as IMAGE_ROUTES
from berth.network.api.routes import ROUTES as NETWORK_ROUTES
from berth.network.api.schemas import networks as network_schemas
from berth.placement.api.routes import ROUTES as PLACEMENT_ROUTES
from berth.placement.api.schemas import replies as placement_replies
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
    assert body("/v2.1/os-berth-what-if") == server.WHAT_IF_BY_VERSION[0][1]
    # The floating IP proxy (before 2.36) may go without a body; a server create may not.
    assert paths["/v2.1/os-floating-ips"]["post"]["requestBody"]["required"] is False
    assert body("/v2.1/os-floating-ips") == floating_ip.ALLOCATE
    assert paths["/v2.1/servers"]["post"]["requestBody"]["required"] is True


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


def test_placement_declares_its_replies_and_queries(documents: dict[str, dict[str, Any]]) -> None:
    # What Placement answers is checked against these by tests/functional/test_placement_replies.py
    # and by every gabbi story at the newest microversion.
    paths = documents["/placement"]["paths"]
    show = paths["/resource_providers/{uuid}"]["get"]["responses"]["200"]
    assert show["content"]["application/json"]["schema"] == placement_replies.RESOURCE_PROVIDER
    assert "content" not in paths["/allocations/{consumer_uuid}"]["put"]["responses"]["204"]
    usages = {p["name"]: p["required"] for p in paths["/usages"]["get"]["parameters"]}
    assert usages == {"project_id": True, "user_id": False, "consumer_type": False}
    candidates = {p["name"] for p in paths["/allocation_candidates"]["get"]["parameters"]}
    assert {"resources", "resources1", "limit", "group_policy", "same_subtree"} <= candidates
