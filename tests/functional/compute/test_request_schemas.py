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
        ({"addSecurityGroup": {"name": "g" * 256}}, "addSecurityGroup/name"),
        ({"removeSecurityGroup": {}}, "removeSecurityGroup"),
        ({"changePassword": {"adminPass": 7}}, "changePassword/adminPass"),
        ({"createBackup": {"name": "b", "backup_type": "daily"}}, "createBackup"),
        ({"rescue": {"rescue_image_ref": "i", "colour": "blue"}}, "rescue"),
    ],
)
def test_a_malformed_action_is_a_400_before_the_server_is_looked_up(
    compute: httpx.Client, body: dict[str, Any], field: str
) -> None:
    message = _refusal(compute.post(MISSING, json=body))
    assert message.startswith(f"Invalid input for field/attribute {field}. Value: ")


TAKING_NOTHING = (
    "confirmResize", "revertResize", "os-stop", "os-start", "pause", "unpause", "suspend",
    "resume", "lock", "unlock", "shelve", "shelveOffload", "injectNetworkInfo", "restore",
    "forceDelete", "unrescue",
)  # fmt: skip


@pytest.mark.parametrize("action", TAKING_NOTHING)
def test_an_action_that_takes_nothing_takes_null_or_an_empty_object_only(
    compute: httpx.Client, action: str
) -> None:
    # The schema alone decides: its handler never sees anything else.
    for argument in ({"x": 1}, "now", 0, []):
        message = _refusal(compute.post(MISSING, json={action: argument}))
        assert message.startswith(f"Invalid input for field/attribute {action}. Value: ")
    for argument in (None, {}):
        assert compute.post(MISSING, json={action: argument}).status_code == 404


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


SERVER_PATH = "/v2.1/servers/00000000-0000-4000-8000-00000000dead"
FLAVOR_PATH = "/v2.1/flavors/1"


@pytest.mark.parametrize(
    ("minor", "method", "path", "body", "field"),
    [
        (64, "POST", "/v2.1/os-keypairs", {"keypair": {"name": "k" * 256}}, "keypair/name"),
        (1, "POST", "/v2.1/os-keypairs", {"keypair": {"name": "k", "type": "ssh"}}, "keypair"),
        (64, "POST", "/v2.1/os-keypairs", {"keypair": {"name": "k", "type": "pgp"}}, "keypair/type"),
        (64, "POST", "/v2.1/os-aggregates", {"aggregate": {"name": "a" * 256}}, "aggregate/name"),
        (64, "PUT", "/v2.1/os-aggregates/1", {"aggregate": {}}, "aggregate"),
        (64, "POST", "/v2.1/os-aggregates/1/action",
         {"set_metadata": {"metadata": {"k": "v" * 256}}}, "set_metadata/metadata/k"),
        (64, "POST", "/v2.1/os-server-groups",
         {"server_group": {"name": "g", "policy": "anti-affinity",
                           "rules": {"max_server_per_host": 0}}},
         "server_group/rules/max_server_per_host"),
        (63, "POST", "/v2.1/os-server-groups",
         {"server_group": {"name": "g", "policy": "affinity"}}, "server_group"),
        (64, "PUT", f"{SERVER_PATH}/metadata", {"metadata": {"k": "v" * 256}}, "metadata/k"),
        (64, "PUT", f"{SERVER_PATH}/metadata/k", {"meta": {"k": "v", "l": "w"}}, "meta"),
        (64, "PUT", f"{SERVER_PATH}/tags", {"tags": ["t" * 61]}, "tags/0"),
        (64, "PUT", SERVER_PATH, {"server": {"name": "n" * 256}}, "server/name"),
        (18, "PUT", SERVER_PATH, {"server": {"description": "d"}}, "server"),
        (64, "POST", f"{SERVER_PATH}/os-interface",
         {"interfaceAttachment": {"tag": "t" * 61}}, "interfaceAttachment/tag"),
        (48, "POST", f"{SERVER_PATH}/os-interface",
         {"interfaceAttachment": {"tag": "t"}}, "interfaceAttachment"),
        (64, "PUT", "/v2.1/os-quota-sets/demo", {"quota_set": {"cores": 2**31}},
         "quota_set/cores"),
        (64, "PUT", "/v2.1/os-quota-class-sets/default", {"quota_class_set": {"ram": -2}},
         "quota_class_set/ram"),
        (64, "PUT", "/v2.1/os-services/00000000-0000-4000-8000-00000000dead",
         {"status": "disabled", "disabled_reason": "r" * 256}, "disabled_reason"),
        (64, "POST", f"{FLAVOR_PATH}/os-extra_specs", {"extra_specs": {"k": "v" * 256}},
         "extra_specs/k"),
        (64, "PUT", f"{FLAVOR_PATH}/os-extra_specs/k", {"k": "v", "l": "w"}, "body"),
        (64, "POST", f"{FLAVOR_PATH}/action", {"addTenantAccess": {"tenant": ""}},
         "addTenantAccess/tenant"),
        (64, "PUT", FLAVOR_PATH, {"flavor": {"description": 5}}, "flavor/description"),
    ],
)  # fmt: skip
def test_a_malformed_body_is_a_400_naming_its_field(
    compute: httpx.Client, minor: int, method: str, path: str, body: Any, field: str
) -> None:
    answer = compute.request(method, path, json=body, headers=version(minor))
    message = _refusal(answer)
    assert message.startswith(f"Invalid input for field/attribute {field}. Value: "), message


def test_a_route_gone_at_a_microversion_is_not_judged_by_a_schema(compute: httpx.Client) -> None:
    # PUT /flavors/{id} exists from 2.55: before, whatever the body, the route is not there.
    answer = compute.put(FLAVOR_PATH, json={"flavor": {"description": 5}}, headers=version(54))
    assert answer.status_code == 404, answer.text


def test_what_upstream_accepts_still_passes(compute: httpx.Client) -> None:
    force = {"quota_set": {"cores": "40", "force": "True"}}
    assert compute.put("/v2.1/os-quota-sets/demo", json=force).status_code == 200
    made = compute.post("/v2.1/flavors", json={"flavor": {**FLAVOR, "name": "specs"}})
    specs = {"extra_specs": {"hw:numa_nodes": 1, "quota:cpu_shares": "10"}}
    path = f"/v2.1/flavors/{made.json()['flavor']['id']}/os-extra_specs"
    assert compute.post(path, json=specs).status_code == 200
    # Ignored, as upstream ignores it.
    disk = {"server": {"name": "n", "OS-DCF:diskConfig": "AUTO"}}
    assert compute.put(SERVER_PATH, json=disk).status_code == 404


MISSING_GROUP = "/v2.1/os-security-groups/00000000-0000-4000-8000-00000000dead"


@pytest.mark.parametrize(
    ("method", "path", "body", "field"),
    [
        ("POST", "/v2.1/os-security-groups", {"security_group": {"name": "g" * 256}}, "name"),
        ("PUT", MISSING_GROUP, {"security_group": {"description": ["d"]}}, "description"),
        (
            "POST",
            "/v2.1/os-security-group-rules",
            {"security_group_rule": {"to_port": [1]}},
            "to_port",
        ),
        (
            "POST",
            "/v2.1/os-security-group-rules",
            {"security_group_rule": {"cidr": "1" * 65}},
            "cidr",
        ),
    ],
)
def test_the_security_group_proxies_bodies_are_held_to_their_schema_until_2_36(
    compute: httpx.Client, method: str, path: str, body: dict[str, Any], field: str
) -> None:
    answer = compute.request(method, path, json=body, headers=version(35))
    member = next(iter(body))
    assert _refusal(answer).startswith(f"Invalid input for field/attribute {member}/{field}.")
    # From 2.36 the proxies are gone: a 404 whatever the body.
    assert compute.request(method, path, json=body, headers=version(36)).status_code == 404


def test_an_external_event_is_held_to_its_microversion(compute: httpx.Client) -> None:
    event = {"name": "volume-extended", "server_uuid": "00000000-0000-4000-8000-00000000dead"}
    path = "/v2.1/os-server-external-events"
    message = _refusal(compute.post(path, json={"events": [event]}, headers=version(50)))
    assert message.startswith("Invalid input for field/attribute events/0/name.")
    tagged = {"events": [{**event, "tag": "t" * 256}]}
    message = _refusal(compute.post(path, json=tagged, headers=version(51)))
    assert message.startswith("Invalid input for field/attribute events/0/tag.")


def _live(block: object, **more: object) -> dict[str, object]:
    """An os-migrateLive argument."""
    return {"host": None, "block_migration": block, **more}


@pytest.mark.parametrize(
    ("minor", "body", "wrong"),
    [
        # A cold migration names its host from 2.56.
        (55, {"migrate": {"host": "cn1"}}, "from microversion 2.56"),
        (56, {"migrate": {"host": "h" * 256}}, "field/attribute migrate/host."),
        (56, {"migrate": {"host": "cn1", "force": True}}, "'force' was unexpected"),
        (56, {"migrate": {"host": " "}}, "is not null or a host name of 1 to 255 characters"),
        # Live migration: disk_over_commit until 2.25, "auto" from 2.25, force from 2.30.
        (24, {"os-migrateLive": {"host": None, "block_migration": False}}, "disk_over_commit"),
        (24, {"os-migrateLive": _live("auto", disk_over_commit=False)}, "migrateLive/block_"),
        (25, {"os-migrateLive": _live(False, disk_over_commit=False)}, "'disk_over_commit' was"),
        (29, {"os-migrateLive": _live("auto", force=True)}, "'force' was unexpected"),
        (30, {"os-migrateLive": _live("auto", force="maybe")}, "os-migrateLive/force."),
        # Nova's words for a flag, in its three casings only.
        (24, {"os-migrateLive": _live("tRue", disk_over_commit=False)}, "/block_migration."),
        (25, {"os-migrateLive": _live("always")}, "os-migrateLive/block_migration."),
        (30, {"os-migrateLive": {"block_migration": "auto"}}, "'host' is a required property"),
        # Evacuate: onSharedStorage until 2.14 (required then), force from 2.29.
        (13, {"evacuate": {"host": "cn1"}}, "'onSharedStorage' is a required property"),
        (14, {"evacuate": {"onSharedStorage": False}}, "'onSharedStorage' was unexpected"),
        (28, {"evacuate": {"host": "cn1", "force": True}}, "'force' was unexpected"),
        (29, {"evacuate": {"host": "cn1", "force": "maybe"}}, "field/attribute evacuate/force."),
        (29, {"evacuate": {"adminPass": 7}}, "field/attribute evacuate/adminPass."),
        # Rebuild: description from 2.19, key_name from 2.54, user_data for personality 2.57.
        (18, {"rebuild": {"imageRef": "i", "description": "d"}}, "'description' was unexpected"),
        (53, {"rebuild": {"imageRef": "i", "key_name": "k"}}, "'key_name' was unexpected"),
        (56, {"rebuild": {"imageRef": "i", "user_data": "eA=="}}, "'user_data' was unexpected"),
        (57, {"rebuild": {"imageRef": "i", "personality": []}}, "'personality' was unexpected"),
        (57, {"rebuild": {"name": "n"}}, "'imageRef' is a required property"),
        (57, {"rebuild": {"imageRef": "i", "name": "n" * 256}}, "field/attribute rebuild/name."),
        (64, {"rebuild": {"imageRef": "i", "preserve_ephemeral": "maybe"}}, "rebuild/preserve_"),
        (64, {"rebuild": {"imageRef": "i", "preserve_ephemeral": 1}}, "rebuild/preserve_"),
        (64, {"rebuild": {"imageRef": "i", "metadata": {"k": 1}}}, "rebuild/metadata/k."),
        # Trusted image certificates from 2.63: null, or 1 to 50 distinct strings.
        (62, {"rebuild": {"imageRef": "i", "trusted_image_certificates": None}}, "'trusted_"),
        (63, {"rebuild": {"imageRef": "i", "trusted_image_certificates": []}}, "rebuild/trusted"),
        # Unshelve takes nothing before 2.77, past Berth's newest microversion.
        (64, {"unshelve": {"availability_zone": "az1"}}, "from microversion 2.77"),
        (1, {"os-resetState": {"state": "deleted"}}, "field/attribute os-resetState/state."),
        (1, {"os-resetState": {}}, "'state' is a required property"),
    ],
)
def test_an_actions_argument_is_held_to_its_microversion(
    compute: httpx.Client, minor: int, body: dict[str, Any], wrong: str
) -> None:
    assert wrong in _refusal(compute.post(MISSING, json=body, headers=version(minor)))


@pytest.mark.parametrize(
    ("minor", "body"),
    [
        (1, {"migrate": None}),
        (1, {"migrate": {}}),
        (56, {"migrate": {"host": None}}),
        (24, {"os-migrateLive": _live(True, disk_over_commit=False)}),
        (24, {"os-migrateLive": _live("True", disk_over_commit="0")}),
        (25, {"os-migrateLive": _live("NO")}),
        (30, {"os-migrateLive": _live("auto", force="yes")}),
        (64, {"rebuild": {"imageRef": "i", "preserve_ephemeral": "Off"}}),
        (30, {"os-migrateLive": _live("auto", force=False)}),
        (1, {"evacuate": {"onSharedStorage": "False"}}),
        (29, {"evacuate": {"host": "cn1", "force": "true", "adminPass": "p"}}),
        (2, {"rebuild": {"imageRef": "i", "personality": [], "preserve_ephemeral": True}}),
        (64, {"rebuild": {"imageRef": "i", "description": None, "key_name": None}}),
        (63, {"rebuild": {"imageRef": "i", "trusted_image_certificates": None}}),
        (64, {"unshelve": None}),
        (64, {"unshelve": {}}),
        (1, {"os-resetState": {"state": "error"}}),
    ],
)
def test_an_actions_argument_upstream_accepts_reaches_the_handler(
    compute: httpx.Client, minor: int, body: dict[str, Any]
) -> None:
    # The server does not exist: the handler's answer, past the schema.
    assert compute.post(MISSING, json=body, headers=version(minor)).status_code == 404


def test_a_floating_ip_is_allocated_with_no_body_or_a_pool_until_2_36(
    compute: httpx.Client,
) -> None:
    path = "/v2.1/os-floating-ips"
    refusal = _refusal(compute.post(path, json={"pool": 7}, headers=version(35)))
    assert "field/attribute pool." in refusal
    assert "field/attribute body." in _refusal(compute.post(path, json=[], headers=version(35)))
    # From 2.36 the proxy is gone: its 404, whatever the body.
    assert compute.post(path, json={"pool": 7}, headers=version(36)).status_code == 404


def test_a_what_if_is_held_to_the_create_schema_of_its_microversion_and_a_count(
    compute: httpx.Client,
) -> None:
    path = "/v2.1/os-berth-what-if"
    server = {"name": "web", "flavorRef": "1", "networks": "none"}
    too_many = {"server": server, "count": 0}
    assert "field/attribute count." in _refusal(compute.post(path, json=too_many))
    described = {"server": {**server, "description": "d"}}
    assert "'description' was unexpected" in _refusal(
        compute.post(path, json=described, headers=version(18))
    )


def test_a_rebuild_with_certificates_to_verify_is_refused(compute: httpx.Client) -> None:
    # Past the schema, the handler's refusal (before the server is looked up): Berth verifies
    # no image signatures, as Nova refuses when it is not configured to.
    certified = {"rebuild": {"imageRef": "i", "trusted_image_certificates": ["cert-1"]}}
    message = _refusal(compute.post(MISSING, json=certified, headers=version(63)))
    assert "trusted_image_certificates must be null" in message


def test_a_floating_ip_allocation_may_go_without_a_body(compute: httpx.Client) -> None:
    # Past the schema without one, to the handler: there is no network service to ask here.
    answer = compute.post("/v2.1/os-floating-ips", headers=version(35))
    assert answer.status_code == 503, answer.text
    assert "no network service" in answer.json()["serviceUnavailable"]["message"]


def test_a_create_takes_trusted_image_certificates_from_2_63_and_null_only(
    compute: httpx.Client,
) -> None:
    server = {"name": "web", "flavorRef": "1", "imageRef": "i", "networks": "none"}
    path = "/v2.1/servers"
    # Before 2.63 the key is unknown to the schema.
    before = {"server": {**server, "trusted_image_certificates": None}}
    assert "'trusted_image_certificates' was unexpected" in _refusal(
        compute.post(path, json=before, headers=version(62))
    )
    # From 2.63 its shape is checked: null, or 1 to 50 distinct strings.
    empty = {"server": {**server, "trusted_image_certificates": []}}
    assert "trusted_image_certificates" in _refusal(
        compute.post(path, json=empty, headers=version(63))
    )
    # A list passes the schema and is refused: Berth verifies no image signatures.
    certified = {"server": {**server, "trusted_image_certificates": ["cert-1"]}}
    message = _refusal(compute.post(path, json=certified, headers=version(63)))
    assert "trusted_image_certificates must be null" in message
    # Null passes both, to the create's own checks (here: the flavor does not exist).
    unset = {"server": {**server, "trusted_image_certificates": None}}
    answer = compute.post(path, json=unset, headers=version(63))
    assert answer.status_code == 400, answer.text
    assert "flavor 1 could not be found" in answer.text
