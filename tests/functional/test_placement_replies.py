"""Placement's answers at the newest microversion match the reply schemas its OpenAPI document
publishes (``berth/placement/api/schemas/replies.py``), through a story that reaches every
operation with a body: providers in a tree, inventories, aggregates, traits, a consumer's
allocations, usages, candidates (and why none were found) and resource classes."""

from __future__ import annotations

import uuid
from typing import Any

import httpx
import jsonschema
import pytest

from berth.placement.api.schemas.replies import REPLIES

LATEST = {"openstack-api-version": "placement latest", "x-auth-token": "admin"}
PROVIDER = "/resource_providers/{uuid}"


class Story:
    """Calls that each check their answer against the reply documented for their route."""

    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.checked: set[tuple[str, str]] = set()

    def call(self, method: str, route: str, path: str, **kwargs: Any) -> httpx.Response:
        answer = self.client.request(method, path, headers=LATEST, **kwargs)
        reply = REPLIES[(method, route)]
        assert answer.status_code == reply.status, (method, path, answer.text)
        if reply.schema is not None:
            # Uuids are held to their format too.
            validator = jsonschema.Draft202012Validator(
                reply.schema, format_checker=jsonschema.Draft202012Validator.FORMAT_CHECKER
            )
            validator.validate(answer.json())
        self.checked.add((method, route))
        return answer

    def generation(self, provider: str) -> int:
        found = self.client.get(f"/resource_providers/{provider}", headers=LATEST).json()
        return int(found["generation"])


def test_every_documented_reply_is_what_placement_answers(client: httpx.Client) -> None:
    story = Story(client)
    root, child, consumer = (str(uuid.uuid4()) for _ in range(3))
    story.call("GET", "/", "/")
    story.call(
        "POST", "/resource_providers", "/resource_providers", json={"name": "root", "uuid": root}
    )
    child_body = {"name": "child", "uuid": child, "parent_provider_uuid": root}
    story.call("POST", "/resource_providers", "/resource_providers", json=child_body)
    story.call("GET", "/resource_providers", "/resource_providers")
    story.call("GET", PROVIDER, f"/resource_providers/{child}")
    story.call(
        "PUT",
        PROVIDER,
        f"/resource_providers/{child}",
        json={"name": "c2", "parent_provider_uuid": root},
    )
    at = f"/resource_providers/{root}"
    new = {"resource_class": "VCPU", "total": 8, "resource_provider_generation": 0}
    story.call("POST", f"{PROVIDER}/inventories", f"{at}/inventories", json=new)
    inventories = {"VCPU": {"total": 8}, "MEMORY_MB": {"total": 1024}}
    body = {"inventories": inventories, "resource_provider_generation": story.generation(root)}
    story.call("PUT", f"{PROVIDER}/inventories", f"{at}/inventories", json=body)
    story.call("GET", f"{PROVIDER}/inventories", f"{at}/inventories")
    one = f"{PROVIDER}/inventories/{{resource_class}}"
    story.call("GET", one, f"{at}/inventories/VCPU")
    body = {"total": 16, "resource_provider_generation": story.generation(root)}
    story.call("PUT", one, f"{at}/inventories/VCPU", json=body)
    body = {
        "aggregates": [str(uuid.uuid4())],
        "resource_provider_generation": story.generation(root),
    }
    story.call("PUT", f"{PROVIDER}/aggregates", f"{at}/aggregates", json=body)
    story.call("GET", f"{PROVIDER}/aggregates", f"{at}/aggregates")
    body = {"traits": ["HW_CPU_X86_AVX"], "resource_provider_generation": story.generation(root)}
    story.call("PUT", f"{PROVIDER}/traits", f"{at}/traits", json=body)
    story.call("GET", f"{PROVIDER}/traits", f"{at}/traits")
    allocations = {
        "allocations": {root: {"resources": {"VCPU": 1}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }
    story.call("PUT", "/allocations/{consumer_uuid}", f"/allocations/{consumer}", json=allocations)
    story.call("GET", "/allocations/{consumer_uuid}", f"/allocations/{consumer}")
    # A consumer with nothing: the empty allocations alone.
    story.call("GET", "/allocations/{consumer_uuid}", f"/allocations/{uuid.uuid4()}")
    story.call("GET", f"{PROVIDER}/allocations", f"{at}/allocations")
    story.call("GET", f"{PROVIDER}/usages", f"{at}/usages")
    story.call("GET", "/usages", "/usages?project_id=p")
    # Disk on the child, so an answer can span the tree and a summary names its parent.
    disk = {
        "inventories": {"DISK_GB": {"total": 100}},
        "resource_provider_generation": story.generation(child),
    }
    client.put(
        f"/resource_providers/{child}/inventories", json=disk, headers=LATEST
    ).raise_for_status()
    for query in (
        "resources=VCPU:1&required=HW_CPU_X86_AVX",
        "resources1=VCPU:1&group_policy=none",
    ):
        story.call("GET", "/allocation_candidates", f"/allocation_candidates?{query}")
    spanning = story.call(
        "GET",
        "/allocation_candidates",
        "/allocation_candidates?resources1=VCPU:1&resources2=DISK_GB:10&group_policy=none",
    ).json()
    assert spanning["allocation_requests"][0]["mappings"] == {"1": [root], "2": [child]}
    assert spanning["provider_summaries"][child]["parent_provider_uuid"] == root
    story.call(
        "GET", "/allocation_candidates/explain", "/allocation_candidates/explain?resources=VCPU:99"
    )
    story.call("GET", "/traits", "/traits")
    story.call("GET", "/resource_classes", "/resource_classes")
    story.call("GET", "/resource_classes/{name}", "/resource_classes/VCPU")
    story.call("POST", "/resource_classes", "/resource_classes", json={"name": "CUSTOM_X"})
    story.call("DELETE", "/allocations/{consumer_uuid}", f"/allocations/{consumer}")
    story.call("DELETE", PROVIDER, f"/resource_providers/{child}")
    with_body = {route for route, reply in REPLIES.items() if reply.schema is not None}
    assert with_body <= story.checked, sorted(with_body - story.checked)


def test_a_reply_that_strays_from_its_schema_is_caught() -> None:
    # The check above can fail: a provider without its root is not a provider.
    provider = {"uuid": str(uuid.uuid4()), "name": "p", "generation": 0, "links": []}
    with pytest.raises(jsonschema.ValidationError, match="root_provider_uuid"):
        jsonschema.validate(provider, REPLIES[("GET", PROVIDER)].schema)
