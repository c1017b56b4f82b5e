"""Read-your-writes across real worker processes: once a write has answered, the next candidates
query sees it, whichever worker serves either request."""

from __future__ import annotations

import httpx

from berth.common.db import Database
from tests.integration.server import running_placement

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}


def test_every_write_is_seen_by_the_next_query_on_any_worker(placement_db: Database) -> None:
    with running_placement(placement_db.url, workers=2) as base:
        made: set[str] = set()
        for i in range(30):
            # A new connection per request, so the kernel spreads them over both workers.
            rp = httpx.post(
                base + "/resource_providers", json={"name": f"cn{i}"}, headers=HEADERS
            ).json()["uuid"]
            inventory = {"inventories": {"VCPU": {"total": 4}}, "resource_provider_generation": 0}
            httpx.put(
                f"{base}/resource_providers/{rp}/inventories", json=inventory, headers=HEADERS
            ).raise_for_status()
            made.add(rp)
            found = httpx.get(
                base + "/allocation_candidates?resources=VCPU:1", headers=HEADERS
            ).json()
            assert {rp for a in found["allocation_requests"] for rp in a["allocations"]} == made
            if i % 3 == 0:
                claim = {
                    "allocations": {rp: {"resources": {"VCPU": 4}}},
                    "project_id": "p",
                    "user_id": "u",
                    "consumer_generation": None,
                    "consumer_type": "INSTANCE",
                }
                answer = httpx.put(f"{base}/allocations/{rp}", json=claim, headers=HEADERS)
                assert answer.status_code == 204
                made.discard(rp)
