"""Allocation candidates cannot take a worker down (issue 20): a request without a limit gets at
most ``max_allocation_candidates`` (1000 by default), and a search that passes its work budget
is stopped with a 400 that says why, while other clients' requests are served meanwhile."""

from __future__ import annotations

import threading
import time

import httpx
import pytest

from bench.reference_cloud import build
from berth.common.db import Database
from tests.conftest import make_service, wsgi_client

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement latest"}
# Five granular groups on one class: each of a tree's three NICs may serve each group, so every
# tree has 3**5 answers (the fuzzer's request that grew a worker to 3.7 GiB at 10,000 hosts).
FIVE_GROUPS = "resources=VCPU:1&group_policy=none" + "".join(
    f"&resources{k}=NET_BW_EGR_KILOBIT_PER_SEC:1" for k in range(1, 6)
)
# The same with a same_subtree no tree can meet (a public NIC and a physnet1 NIC are never one
# above the other): only complete answers are checked, so the search goes through every tree.
NOWHERE = (
    "resources=VCPU:1&group_policy=none"
    + "".join(f"&resources{k}=NET_BW_EGR_KILOBIT_PER_SEC:1" for k in range(1, 4))
    + "&resources4=NET_BW_EGR_KILOBIT_PER_SEC:1&required4=CUSTOM_PHYSNET_PUBLIC"
    + "&resources5=NET_BW_EGR_KILOBIT_PER_SEC:1&required5=CUSTOM_PHYSNET_PHYSNET1"
    + "&same_subtree=4,5"
)
HOSTS = 600


@pytest.fixture
def fleet(placement_db: Database) -> Database:
    build(placement_db, HOSTS, seed=1)
    return placement_db


def test_a_request_without_a_limit_gets_at_most_the_ceiling(fleet: Database) -> None:
    with wsgi_client(make_service(fleet, verify_index=False)) as client:
        client.headers.update(HEADERS)
        answer = client.get(f"/allocation_candidates?{FIVE_GROUPS}")
        assert answer.status_code == 200, answer.text
        assert len(answer.json()["allocation_requests"]) == 1000
        asked = client.get(f"/allocation_candidates?{FIVE_GROUPS}&limit=5000")
        assert len(asked.json()["allocation_requests"]) == 1000


def test_a_search_past_its_budget_is_stopped_while_others_are_served(fleet: Database) -> None:
    service = make_service(fleet, verify_index=False, allocation_candidates_budget=0.05)
    service.index.refresh()
    costly: list[httpx.Response] = []
    with wsgi_client(service) as client, wsgi_client(service) as other:
        client.headers.update(HEADERS)
        other.headers.update(HEADERS)

        def search() -> None:
            costly.append(client.get(f"/allocation_candidates?{NOWHERE}"))

        searching = threading.Thread(target=search)
        start = time.monotonic()
        searching.start()
        served = []
        while searching.is_alive():
            served.append(other.get("/resource_providers?name=nobody").status_code)
        searching.join()
        elapsed = time.monotonic() - start
    (answer,) = costly
    assert answer.status_code == 400, answer.text
    error = answer.json()["errors"][0]
    assert "work budget" in error["detail"] and error["code"] == "placement.undefined_code"
    # The other client was answered meanwhile, and the search ended long before the whole
    # search (about a second of processor time here) would have.
    assert served and set(served) == {200}
    assert elapsed < 5
