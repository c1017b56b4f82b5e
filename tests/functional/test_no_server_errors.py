"""No client mistake is a 500: random bodies, queries and ids against every route and method."""

from __future__ import annotations

import json
import uuid

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.common.body import MAX_BODY_BYTES
from berth.placement.api.routes import ROUTES
from berth.placement.service import PlacementService
from tests.conftest import wsgi_client

PROVIDER = "5f0b8a52-8f29-4a55-9d8c-3b4a3c2d1e0f"
CONSUMER = "7a1c3e52-1111-4a55-9d8c-3b4a3c2d1e0f"
# Field names and values a real body has, so that random bodies get past the first checks.
_fields = st.sampled_from(
    [
        "name", "uuid", "parent_provider_uuid", "resource_provider_generation", "inventories",
        "total", "reserved", "min_unit", "max_unit", "step_size", "allocation_ratio",
        "resource_class", "traits", "aggregates", "allocations", "resources", "project_id",
        "user_id", "consumer_generation", "consumer_type", "mappings", "resource_provider",
        PROVIDER, CONSUMER, "VCPU", "DISK_GB", "CUSTOM_A",
    ]
) | st.text(max_size=6)  # fmt: skip
_scalars = (
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats()
    | st.sampled_from(
        [PROVIDER, CONSUMER, "VCPU", "INSTANCE", "CUSTOM_A", "", "\u2603", "a\x00b", 3.4e38]
    )
    | st.text(max_size=8)
)
_json = st.recursive(
    _scalars,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_fields, inner, max_size=5),
    max_leaves=16,
)
_words = st.sampled_from(
    [
        "resources", "required", "member_of", "in_tree", "limit", "group_policy", "name", "uuid",
        "resources1", "required_X", "same_subtree", "root_required", "project_id", "user_id",
        "consumer_type", "associated", "allocations", "inventories", "traits", "aggregates",
    ]
)  # fmt: skip
_values = st.sampled_from(
    ["", "VCPU:1", "VCPU:-1", "in:", "!", "!in:a,b", "CUSTOM_X", "VCPU", ":", "1", "0", "-5",
     "isolate", "true", str(uuid.uuid4()), "HW_CPU_X86_AVX2,!HW_CPU_X86_SSE", "_X,_Y", "\u2603",
     "a\x00b", "99999999999999999999", "VCPU:99999999999999999999"]
)  # fmt: skip
_versions = st.sampled_from(["1.0", "1.10", "1.12", "1.20", "1.28", "1.33", "1.38", "latest"])
_keys = {"uuid", "resource_class", "name", "consumer_uuid"}


def _routes() -> list[tuple[str, str]]:
    return [(path, method) for path, methods in ROUTES.items() for method in methods]


@st.composite
def requests(draw: st.DrawFn) -> tuple[str, str, dict[str, str], list[tuple[str, str]], object]:
    path, method = draw(st.sampled_from(_routes()))
    for key in _keys:
        path = path.replace(
            "{" + key + "}",
            draw(st.sampled_from([PROVIDER, CONSUMER, str(uuid.uuid4()), "VCPU", "CUSTOM_A", "x"])),
        )
    headers = {"openstack-api-version": f"placement {draw(_versions)}"}
    query = draw(st.lists(st.tuples(_words, _values), max_size=4))
    body = draw(_json)
    return method, path, headers, query, body


def _seed(client: httpx.Client) -> None:
    """A provider with inventory and a consumer on it, so random requests meet real things."""
    client.post("/resource_providers", json={"name": "fuzz", "uuid": PROVIDER})
    client.put(
        f"/resource_providers/{PROVIDER}/inventories",
        # A ratio this large makes a capacity past 64 bits, which must still serialise.
        json={
            "resource_provider_generation": 0,
            "inventories": {"VCPU": {"total": 8, "allocation_ratio": 3.4e38}},
        },
    )
    client.put(
        f"/allocations/{CONSUMER}",
        json={
            "allocations": {PROVIDER: {"resources": {"VCPU": 1}}},
            "project_id": "p",
            "user_id": "u",
        },
        headers={"openstack-api-version": "placement 1.12"},
    )


@settings(
    max_examples=300,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(request=requests())
def test_nothing_a_client_sends_is_a_server_error(
    placement_service: PlacementService, request: tuple[str, str, dict[str, str], list, object]
) -> None:
    method, path, headers, query, body = request
    with wsgi_client(placement_service) as client:
        client.headers.update({"x-auth-token": "admin", "content-type": "application/json"})
        _seed(client)
        response: httpx.Response = client.request(
            method, path, params=query, headers=headers, content=json.dumps(body)
        )
    assert response.status_code < 500, (method, path, query, body, response.text)


def test_a_capacity_past_64_bits_is_answered(client: httpx.Client) -> None:
    _seed(client)
    response = client.get(
        "/allocation_candidates?resources=VCPU:1",
        headers={"openstack-api-version": "placement latest"},
    )
    assert response.status_code == 200
    summary = response.json()["provider_summaries"][PROVIDER]["resources"]["VCPU"]
    assert summary["capacity"] == int(8 * 3.4e38)


def test_an_amount_past_64_bits_fits_nowhere(client: httpx.Client) -> None:
    _seed(client)
    latest = {"openstack-api-version": "placement latest"}
    huge = "VCPU:99999999999999999999"
    found = client.get(f"/allocation_candidates?resources={huge}", headers=latest)
    assert found.status_code == 200 and found.json()["allocation_requests"] == []
    listed = client.get(f"/resource_providers?resources={huge}", headers=latest)
    assert listed.status_code == 200 and listed.json()["resource_providers"] == []


def test_a_value_the_database_cannot_store_is_a_bad_request(
    client: httpx.Client, placement_backend: str
) -> None:
    # PostgreSQL refuses NUL bytes in text; SQLite and MariaDB store them.
    response = client.post("/resource_providers", json={"name": "nul\x00name"})
    if placement_backend == "postgresql":
        assert response.status_code == 400
        assert "cannot store" in response.json()["errors"][0]["detail"]
    else:
        assert response.status_code == 201


# A value a thousand levels deep (a provider's name here) is a 500 without the depth limit.
DEEP = b'{"name": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1001


def test_a_body_nested_a_thousand_deep_is_a_bad_request(client: httpx.Client) -> None:
    answer = client.post(
        "/resource_providers",
        content=DEEP,
        headers={"content-type": "application/json", "openstack-api-version": "placement latest"},
    )
    assert answer.status_code == 400, answer.text
    error = answer.json()["errors"][0]
    assert "nested deeper" in error["detail"] and error["code"] == "placement.undefined_code"


def test_a_body_past_the_size_limit_is_too_large(client: httpx.Client) -> None:
    answer = client.post("/resource_providers", json={"name": "n" * MAX_BODY_BYTES})
    assert answer.status_code == 413, answer.text
    assert answer.json()["errors"][0]["status"] == 413


@pytest.mark.parametrize("key", ["vcpu", "a b", "", "VCPU\n", "V-CPU", "\u2603"])
@pytest.mark.parametrize("record", [{"total": 1}, 1, None, []])
def test_inventory_keys_that_are_not_class_names_are_bad_requests(
    client: httpx.Client, key: str, record: object
) -> None:
    _seed(client)
    # The reshaper is for services; an admin token with the service role passes its policy.
    latest = {"openstack-api-version": "placement latest", "x-roles": "admin,service"}
    generation = client.get(f"/resource_providers/{PROVIDER}", headers=latest).json()["generation"]
    inventories = {key: record}
    put = client.put(
        f"/resource_providers/{PROVIDER}/inventories",
        json={"resource_provider_generation": generation, "inventories": inventories},
        headers=latest,
    )
    assert put.status_code == 400, put.text
    assert put.json()["errors"][0]["code"].startswith("placement.")
    reshaped = client.post(
        "/reshaper",
        json={
            "inventories": {
                PROVIDER: {"resource_provider_generation": generation, "inventories": inventories}
            },
            "allocations": {},
        },
        headers=latest,
    )
    assert reshaped.status_code == 400, reshaped.text
    assert reshaped.json()["errors"][0]["code"].startswith("placement.")
