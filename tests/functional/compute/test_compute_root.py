"""The Compute API's version documents, microversion negotiation and error documents."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from a2wsgi import ASGIMiddleware

from berth.common.db import Database
from berth.compute.api.app import build_app
from berth.compute.service import ComputeService
from berth.config import ComputeSettings
from tests.rpc_fakes import NoMessages


@pytest.fixture
def compute(tmp_path: Path) -> Iterator[httpx.Client]:
    service = ComputeService(
        ComputeSettings(),
        Database(f"sqlite:///{tmp_path / 'api.db'}"),
        NoMessages(),
        NoMessages(),
    )
    app = ASGIMiddleware(build_app(service))  # type: ignore[arg-type]
    with httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://compute") as client:
        client.headers["x-auth-token"] = "admin"
        yield client


def test_version_documents(compute: httpx.Client) -> None:
    v20, v21 = compute.get("/", headers={"x-auth-token": ""}).json()["versions"]
    assert (v20["id"], v20["status"], v20["version"]) == ("v2.0", "SUPPORTED", "")
    assert (v21["id"], v21["min_version"], v21["version"]) == ("v2.1", "2.1", "2.64")
    assert "media-types" not in v21
    # Each self link leads to a document of its own version (anonymous, as a discovery's).
    for listed in (v20, v21):
        (link,) = listed["links"]
        answer = compute.get(link["href"], headers={"x-auth-token": ""})
        assert answer.status_code == 200, answer.text
        shown = answer.json()["version"]
        assert (shown["id"], shown["links"]) == (listed["id"], listed["links"])
        assert shown["media-types"][0]["base"] == "application/json"
    assert compute.get("/v2.1").json()["version"]["status"] == "CURRENT"


def test_the_legacy_extensions_listing(compute: httpx.Client) -> None:
    extensions = compute.get("/v2.1/extensions").json()["extensions"]
    by_alias = {extension["alias"]: extension for extension in extensions}
    assert len(by_alias) == len(extensions)
    assert by_alias["os-hosts"]["name"] == "Hosts"
    assert set(by_alias["os-hosts"]) == {
        "alias", "name", "description", "links", "namespace", "updated",
    }  # fmt: skip
    shown = compute.get("/v2.1/extensions/os-consoles")
    assert shown.status_code == 200 and shown.json()["extension"] == by_alias["os-consoles"]
    missing = compute.get("/v2.1/extensions/os-nothing")
    assert missing.status_code == 404 and "os-nothing" in missing.json()["itemNotFound"]["message"]


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({}, "compute 2.1"),
        ({"openstack-api-version": "compute 2.37"}, "compute 2.37"),
        ({"x-openstack-nova-api-version": "2.47"}, "compute 2.47"),
        ({"openstack-api-version": "compute latest"}, "compute 2.64"),
    ],
)
def test_microversions_are_negotiated(
    compute: httpx.Client, headers: dict[str, str], expected: str
) -> None:
    answer = compute.get("/v2.1", headers=headers)
    assert answer.headers["openstack-api-version"] == expected


def test_refusals_are_compute_error_documents(compute: httpx.Client) -> None:
    too_new = compute.get("/v2.1", headers={"openstack-api-version": "compute 2.99"})
    assert too_new.status_code == 406 and too_new.json()["notAcceptable"]["code"] == 406
    bad = compute.get("/v2.1", headers={"openstack-api-version": "compute two"})
    assert bad.status_code == 400 and "badRequest" in bad.json()
    missing = compute.get("/v2.1/nowhere")
    assert missing.status_code == 404 and missing.json()["itemNotFound"]["code"] == 404
    wrong = compute.delete("/v2.1")
    assert wrong.status_code == 405 and wrong.headers["allow"] == "GET"
