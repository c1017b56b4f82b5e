"""Schemathesis against every API of a real ``berth up``: requests generated from each API's own
OpenAPI document (``<prefix>/openapi.json``), with a fixed seed and a few examples per operation.
No response may be a 5xx, every refusal must be in the API's documented error document, and
every success the document describes must match its schema.

Path parameters are mostly real (``tools.fuzzing``): the fixture makes one of each resource (a
provider, a server, a network, a port, an image...) and every operation is called on it, so the
generated bodies reach the handlers' real work instead of a 404 for a random id. A DELETE of the
resource itself keeps its random id, so the resource stays there for the operations after it.
``python -m tools.fuzz_apis`` runs the same with many more examples and counts what it finds.
"""

from __future__ import annotations

import os
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

from berth.common.openapi import document
from tests.integration.server import running_berth_up
from tools.fuzzing import ADMIN, DESCRIPTIONS, FLEET, HEADERS, operations, real_ids, resources

# Few examples per operation, so the four APIs (about 200 operations) take a few minutes;
# BERTH_FUZZ_EXAMPLES asks for more (and BERTH_FUZZ_SEED for another seed) when hunting.
FUZZ = settings(
    max_examples=int(os.environ.get("BERTH_FUZZ_EXAMPLES", "8")),
    deadline=None,
    database=None,
    suppress_health_check=list(HealthCheck),
)
SEED = int(os.environ.get("BERTH_FUZZ_SEED", "20"))


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
        yield url, resources(client)


def _check(case: schemathesis.Case, url: str, made: dict[str, str], api: str) -> None:
    real_ids(case, made)
    response = case.call(base_url=f"{url}/{api}", headers=HEADERS[api])
    checks = [response_schema_conformance]
    # A 5xx is a bug, unless the operation documents it: a 501 for what Berth does not do.
    if str(response.status_code) not in case.operation.definition.raw["responses"]:
        checks.append(not_a_server_error)
    case.validate_response(response, checks=checks)


@pytest.mark.parametrize(
    ("api", "operation"),
    [
        pytest.param(api, operation, id=f"{api} {operation.label}")
        for api, operation in operations()
    ],
)
def test_no_server_error_and_documented_answers(
    berth: tuple[str, dict[str, str]], api: str, operation: Any
) -> None:
    url, made = berth
    cases = st.one_of(
        operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
        operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
    )

    @fixed_seed(SEED)
    @FUZZ
    @given(case=cases)
    def fuzz(case: schemathesis.Case) -> None:
        _check(case, url, made, api)

    fuzz()
