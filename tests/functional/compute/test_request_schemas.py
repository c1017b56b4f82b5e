"""Compute request bodies checked against their JSON schemas before the handler does anything
(so a malformed body is a 400 even for a server that does not exist), per microversion where
the shape changes, with Nova's wording: the field, the value, what is wrong."""

from __future__ import annotations

from typing import Any

import httpx
import pytest

from tests.functional.compute.conftest import version

MISSING = "/v2.1/servers/00000000-0000-4000-8000-00000000dead/action"


def _refusal(answer: httpx.Response) -> str:
    assert answer.status_code == 400, answer.text
    return str(answer.json()["badRequest"]["message"])


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"reboot": {"type": "SOFT"}, "os-stop": None}, "body"),
        ({}, "body"),
        ({"reboot": {"type": "GENTLE"}}, "reboot/type"),
        ({"reboot": {"type": "HARD", "force": True}}, "reboot"),
        ({"resize": {}}, "resize"),
        ({"resize": {"flavorRef": "x" * 256}}, "resize/flavorRef"),
        ({"os-stop": {"now": True}}, "os-stop"),
    ],
)
def test_a_malformed_action_is_a_400_before_the_server_is_looked_up(
    compute: httpx.Client, body: dict[str, Any], field: str
) -> None:
    message = _refusal(compute.post(MISSING, json=body))
    assert message.startswith(f"Invalid input for field/attribute {field}. Value: ")


def test_a_well_formed_action_reaches_the_handler(compute: httpx.Client) -> None:
    assert compute.post(MISSING, json={"reboot": {"type": "soft"}}).status_code == 404
    # An action Berth does not have is refused by name, by the handler, once the server is
    # found: on a missing server it is a 404 too (as Nova answers for the actions it has).
    assert compute.post(MISSING, json={"no-such-action": {}}).status_code == 404


FLAVOR = {"name": "small", "ram": 512, "vcpus": 1, "disk": 1}


@pytest.mark.parametrize(
    ("flavor", "field"),
    [
        ({"name": "small", "ram": 512, "vcpus": 1}, "flavor"),
        ({**FLAVOR, "colour": "blue"}, "flavor"),
        ({**FLAVOR, "ram": 2**31}, "flavor/ram"),
        ({**FLAVOR, "vcpus": 0}, "flavor/vcpus"),
        ({**FLAVOR, "disk": "-1"}, "flavor/disk"),
        ({**FLAVOR, "name": "n" * 256}, "flavor/name"),
        ({**FLAVOR, "rxtx_factor": 0}, "flavor/rxtx_factor"),
    ],
)
def test_a_malformed_flavor_is_a_400_naming_the_field(
    compute: httpx.Client, flavor: dict[str, Any], field: str
) -> None:
    message = _refusal(compute.post("/v2.1/flavors", json={"flavor": flavor}))
    assert message.startswith(f"Invalid input for field/attribute {field}. Value: ")


def test_a_flavor_description_needs_2_55(compute: httpx.Client) -> None:
    described = {"flavor": {**FLAVOR, "description": "for tests"}}
    message = _refusal(compute.post("/v2.1/flavors", json=described, headers=version(54)))
    assert "description" in message
    made = compute.post("/v2.1/flavors", json=described, headers=version(55))
    assert made.status_code == 200, made.text
    assert made.json()["flavor"]["description"] == "for tests"


def test_amounts_may_be_strings_of_digits(compute: httpx.Client) -> None:
    flavor = {"name": "strings", "ram": "512", "vcpus": "1", "disk": "0", "swap": ""}
    made = compute.post("/v2.1/flavors", json={"flavor": flavor})
    assert made.status_code == 200, made.text
    assert (made.json()["flavor"]["ram"], made.json()["flavor"]["swap"]) == (512, "")


SERVER = {"name": "web", "flavorRef": "1", "imageRef": "i", "networks": "none"}


@pytest.mark.parametrize(
    ("minor", "server", "wrong"),
    [
        (37, {"flavorRef": "1", "networks": "none"}, "'name' is a required property"),
        (37, {**SERVER, "name": "n" * 256}, "field/attribute server/name."),
        (37, {**SERVER, "colour": "blue"}, "'colour' was unexpected"),
        (18, {**SERVER, "description": "d"}, "'description' was unexpected"),
        (37, {**SERVER, "description": "d" * 256}, "field/attribute server/description."),
        (37, {"name": "web", "flavorRef": "1"}, "'networks' is a required property"),
        (51, {**SERVER, "tags": ["a"]}, "'tags' was unexpected"),
    ],
)
def test_a_malformed_server_is_a_400_per_microversion(
    compute: httpx.Client, minor: int, server: dict[str, Any], wrong: str
) -> None:
    answer = compute.post("/v2.1/servers", json={"server": server}, headers=version(minor))
    assert wrong in _refusal(answer)
