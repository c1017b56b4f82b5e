"""The one mechanism every API checks request bodies with (``berth.common.validation``), and
the tables of schemas each API keeps: every schema valid, every route real, and the boundaries
of a few (a string one past its column, an integer one past its range, a wrong type, an unknown
key where upstream refuses one, and what upstream takes)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest

from berth.common.validation import BOOLEAN, MAX_INT, first_error, guarded, integer
from berth.compute.api.routes import ROUTES as COMPUTE_ROUTES
from berth.compute.api.schemas import (
    floating_ip,
    image_metadata,
    keypair,
    quota,
    security_group,
    server,
    server_action,
    server_external_events,
    server_group,
)
from berth.compute.api.schemas.bodies import BODIES as COMPUTE_BODIES
from berth.image import schemas as image
from berth.image.api import ROUTES as IMAGE_ROUTES
from berth.network.api.routes import ROUTES as NETWORK_ROUTES
from berth.network.api.schemas import (
    networks,
    ports,
    qos,
    quotas,
    routers,
    security_groups,
    subnets,
)
from berth.network.api.schemas.bodies import BODIES as NETWORK_BODIES
from berth.network.qos import BANDWIDTH_LIMIT

# A server action's body at the newest microversion, and at each where an argument changes.
ACTION = server_action.ACTION_BY_VERSION[0][1]
ACTION_AT = dict(server_action.ACTION_BY_VERSION)
WHAT_IF_AT = dict(server.WHAT_IF_BY_VERSION)


def _schemas() -> list[tuple[str, tuple[str, str], Mapping[str, Any]]]:
    found: list[tuple[str, tuple[str, str], Mapping[str, Any]]] = []
    for route, versioned in COMPUTE_BODIES.items():
        found += [("compute", route, schema) for _, schema in versioned if schema is not None]
    found += [("network", route, schema) for route, schema in NETWORK_BODIES.items()]
    found += [("image", route, body.schema) for route, body in image.BODIES.items()]
    return found


ROUTES = {"compute": COMPUTE_ROUTES, "network": NETWORK_ROUTES, "image": IMAGE_ROUTES}


@pytest.mark.parametrize(("api", "route", "schema"), _schemas())
def test_every_schema_is_valid_and_its_route_is_real(
    api: str, route: tuple[str, str], schema: Mapping[str, Any]
) -> None:
    jsonschema.Draft202012Validator.check_schema(schema)
    method, path = route
    assert method in ROUTES[api][path], route


def test_a_failure_says_where_and_why_and_shows_the_value_cut_short() -> None:
    schema = {
        "type": "object",
        "properties": {"server": server.CREATE_V2_1["properties"]["server"]},
    }
    invalid = first_error({"server": {"name": "n" * 300}}, schema)
    assert invalid is not None
    assert (invalid.field, invalid.attribute) == ("server/name", "name")
    assert invalid.shown == '"' + "n" * 199 + "..."
    # The library quotes the whole value; a long one is named, not repeated.
    assert invalid.reason == "the value is too long"
    assert first_error({"server": {"name": "web"}}, schema) is None


def test_integers_may_be_strings_of_digits_but_never_booleans() -> None:
    amount = integer(0, MAX_INT)
    assert first_error(MAX_INT, amount) is None
    assert first_error("1500", amount) is None
    assert first_error(MAX_INT + 1, amount) is not None
    assert first_error(-1, amount) is not None
    assert first_error(True, amount) is not None
    assert first_error("15OO", amount) is not None
    assert first_error("1500", integer(0, 10, text=False)) is not None


def test_booleans_may_be_their_strings_in_any_case() -> None:
    assert [first_error(value, BOOLEAN) is None for value in (True, "TRUE", "false", "yes", 1)] == [
        True, True, True, False, False]  # fmt: skip


def test_guarded_checks_only_the_routes_with_a_body_and_before_the_handler() -> None:
    calls: list[str] = []

    def create(request: str) -> str:
        """Make one."""
        calls.append(f"create {request}")
        return "made"

    def show(request: str) -> str:
        return "shown"

    def check(request: str, schema: str) -> None:
        calls.append(f"check {request} against {schema}")

    table = guarded({"/things": {"POST": create, "GET": show}}, {("POST", "/things"): "S"}, check)
    assert table["/things"]["GET"] is show
    assert table["/things"]["POST"]("r") == "made"
    assert calls == ["check r against S", "create r"]
    assert table["/things"]["POST"].__doc__ == "Make one."


CASES: list[tuple[Mapping[str, Any], Any, bool]] = [
    # Compute
    (keypair.CREATE_V2_10, {"keypair": {"name": "k" * 255}}, True),
    (keypair.CREATE_V2_10, {"keypair": {"name": "k" * 256}}, False),
    (keypair.CREATE_V2_10, {"keypair": {"name": "k", "colour": "blue"}}, False),
    (keypair.CREATE_V2_1, {"keypair": {"name": "k", "type": "ssh"}}, False),
    (server.UPDATE_V2_19, {"server": {"description": None, "OS-DCF:diskConfig": "AUTO"}}, True),
    (server.UPDATE_V2_1, {"server": {"description": "d"}}, False),
    (server_group.CREATE_V2_64, {"server_group": {"name": "g", "policy": "affinity"}}, True),
    (server_group.CREATE_V2_64, {"server_group": {"name": "g", "policies": ["affinity"]}}, False),
    (
        server_group.CREATE_V2_1,
        {"server_group": {"name": "g", "policies": ["soft-affinity"]}},
        False,
    ),
    (quota.QUOTA_SET, {"quota_set": {"cores": MAX_INT, "force": "yes"}}, True),
    (quota.QUOTA_SET, {"quota_set": {"cores": MAX_INT + 1}}, False),
    (quota.QUOTA_SET, {"quota_set": {"cores": -2}}, False),
    (quota.QUOTA_SET, {"quota_set": {"cores": [1]}}, False),
    (security_group.GROUP, {"security_group": {"name": "g" * 255, "description": ""}}, True),
    (security_group.GROUP, {"security_group": {"name": "g" * 256, "description": ""}}, False),
    (security_group.GROUP, {"security_group": {"name": 1, "description": ""}}, False),
    (
        security_group.RULE,
        {"security_group_rule": {"parent_group_id": "p", "from_port": "22", "to_port": 22}},
        True,
    ),
    (security_group.RULE, {"security_group_rule": {"from_port": [22]}}, False),
    (security_group.RULE, {"security_group_rule": {"cidr": "1" * 65}}, False),
    (image_metadata.ALL, {"metadata": {"k" * 255: "v" * 255, "os/distro": "x"}}, True),
    (image_metadata.ALL, {"metadata": {"k" * 256: "v"}}, False),
    (image_metadata.ONE, {"meta": {"a": "1", "b": "2"}}, False),
    (image_metadata.ONE, {"meta": {"a": 1}}, False),
    (ACTION, {"addFloatingIp": {"address": "203.0.113.5"}}, True),
    (ACTION, {"addFloatingIp": {"address": "1" * 65}}, False),
    (ACTION, {"addFloatingIp": {"fixed_address": "10.0.0.5"}}, False),
    (ACTION, {"removeFloatingIp": {"address": 5}}, False),
    (ACTION, {"addSecurityGroup": {"name": "web"}}, True),
    (ACTION, {"addSecurityGroup": {"name": ""}}, False),
    (ACTION, {"removeSecurityGroup": {"name": "w" * 256}}, False),
    (ACTION, {"removeSecurityGroup": None}, False),
    (ACTION, {"changePassword": {"adminPass": "p" * 256}}, False),
    (ACTION, {"os-getConsoleOutput": {"length": -2}}, False),
    (ACTION, {"createImage": {"name": "i" * 256}}, False),
    (ACTION, {"restore": {"now": True}}, False),
    # A host is a name, not blanks (the handlers do not check it again).
    (ACTION_AT[(2, 56)], {"migrate": {"host": "cn1"}}, True),
    (ACTION_AT[(2, 56)], {"migrate": {"host": " "}}, False),
    (ACTION_AT[(2, 1)], {"migrate": {"host": "cn1"}}, False),
    (ACTION, {"os-migrateLive": {"host": "\t", "block_migration": "auto"}}, False),
    (ACTION, {"evacuate": {"host": ""}}, False),
    # A rebuild's certificates from 2.63: null, or 1 to 50 distinct non-empty strings.
    (ACTION_AT[(2, 57)], {"rebuild": {"imageRef": "i", "trusted_image_certificates": None}}, False),
    (ACTION_AT[(2, 63)], {"rebuild": {"imageRef": "i", "trusted_image_certificates": None}}, True),
    (ACTION, {"rebuild": {"imageRef": "i", "trusted_image_certificates": ["c"]}}, True),
    (ACTION, {"rebuild": {"imageRef": "i", "trusted_image_certificates": []}}, False),
    (ACTION, {"rebuild": {"imageRef": "i", "trusted_image_certificates": ["c", "c"]}}, False),
    (ACTION, {"rebuild": {"imageRef": "i", "trusted_image_certificates": ["c"] * 51}}, False),
    # Its metadata as a server's, its user data as long as a create's.
    (ACTION, {"rebuild": {"imageRef": "i", "metadata": {"k": "v"}}}, True),
    (ACTION, {"rebuild": {"imageRef": "i", "metadata": {"k": 1}}}, False),
    (ACTION, {"rebuild": {"imageRef": "i", "metadata": {"k/l": "v"}}}, False),
    (ACTION, {"rebuild": {"imageRef": "i", "user_data": None}}, True),
    (ACTION, {"rebuild": {"imageRef": "i", "user_data": "e" * 65536}}, False),
    # The floating IP proxy's allocation may go without a body (null).
    (floating_ip.ALLOCATE, None, True),
    (floating_ip.ALLOCATE, {"pool": "public"}, True),
    (floating_ip.ALLOCATE, {"pool": "p" * 256}, False),
    (floating_ip.ALLOCATE, [], False),
    # A what-if: the create of the same microversion, and a count.
    (WHAT_IF_AT[(2, 1)], {"server": {"name": "s"}, "count": 1000}, True),
    (WHAT_IF_AT[(2, 1)], {"server": {"name": "s"}, "count": 1001}, False),
    (WHAT_IF_AT[(2, 1)], {"server": {"name": "s"}, "count": "2"}, False),
    (WHAT_IF_AT[(2, 37)], {"server": {"name": "s"}}, False),
    (WHAT_IF_AT[(2, 57)], {"server": {"name": "s", "networks": "none", "personality": []}}, False),
    (server_external_events.BY_VERSION[1][1], {"events": [{"name": "volume-extended"}]}, False),
    (
        server_external_events.BY_VERSION[0][1],
        {"events": [{"name": "volume-extended", "server_uuid": "u", "tag": "t" * 256}]},
        False,
    ),
    # Networking: unknown attributes pass, for the domain to name.
    (networks.CREATE, {"network": {"name": "n" * 255, "colour": "blue"}}, True),
    (networks.CREATE, {"network": {"name": "n" * 256}}, False),
    (networks.CREATE, {"network": {"mtu": None}}, False),
    (networks.CREATE, {"networks": [{"name": "a"}, {"mtu": "9000"}]}, True),
    (networks.CREATE, {"networks": []}, False),
    (networks.CREATE, {"networks": [{"shared": "nope"}]}, False),
    (subnets.CREATE, {"subnet": {"ip_version": "4"}}, False),
    (subnets.UPDATE, {"subnet": {"gateway_ip": None, "allocation_pools": None}}, True),
    (ports.UPDATE, {"port": {"binding:host_id": None, "binding:profile": None}}, True),
    (ports.UPDATE, {"port": {"device_id": "d" * 256}}, False),
    (qos.rule(BANDWIDTH_LIMIT), {"bandwidth_limit_rule": {"max_kbps": 2**31 - 1}}, True),
    (qos.rule(BANDWIDTH_LIMIT), {"bandwidth_limit_rule": {"max_kbps": 2**31}}, False),
    (qos.rule(BANDWIDTH_LIMIT), {"bandwidth_limit_rule": {"direction": "any"}}, False),
    (quotas.UPDATE, {"quota": {"port": -1, "check_limit": "True"}}, True),
    (quotas.UPDATE, {"quota": {"port": 2**31}}, False),
    (
        security_groups.GROUP_CREATE,
        {"security_group": {"name": "s" * 255, "stateful": "false"}},
        True,
    ),
    (security_groups.GROUP_CREATE, {"security_group": {"name": "s" * 256}}, False),
    (security_groups.GROUP_UPDATE, {"security_group": {"description": "d" * 256}}, False),
    (security_groups.GROUP_UPDATE, {"security_group": {"stateful": "maybe"}}, False),
    (
        security_groups.RULE_CREATE,
        {"security_group_rule": {"protocol": 6, "port_range_min": "22", "port_range_max": None}},
        True,
    ),
    # Out of range ports and protocols are the domain's, in Neutron's words.
    (security_groups.RULE_CREATE, {"security_group_rule": {"port_range_max": 65536}}, True),
    (security_groups.RULE_CREATE, {"security_group_rule": {"protocol": "p" * 41}}, False),
    (security_groups.RULE_CREATE, {"security_group_rule": {"port_range_min": [1]}}, False),
    (security_groups.RULE_CREATE, {"security_group_rule": {"remote_ip_prefix": "1" * 65}}, False),
    (security_groups.RULE_CREATE, {"security_group_rule": {"description": "d" * 256}}, False),
    (security_groups.RULE_CREATE, {"security_group_rule": {"remote_group_id": 5}}, False),
    (routers.ROUTER_CREATE, {"router": {"name": "r" * 255, "admin_state_up": "true"}}, True),
    (routers.ROUTER_CREATE, {"router": {"name": "r" * 256}}, False),
    (routers.ROUTER_CREATE, {"router": {"external_gateway_info": {"enable_snat": "no"}}}, False),
    (routers.ROUTER_UPDATE, {"router": {"routes": None, "external_gateway_info": None}}, True),
    (routers.ROUTER_UPDATE, {"router": {"routes": [{"destination": "1" * 65}]}}, False),
    (routers.ROUTER_UPDATE, {"router": {"routes": {"destination": "10.0.0.0/8"}}}, False),
    (routers.INTERFACE, {"subnet_id": "s"}, True),
    (routers.INTERFACE, {"port_id": 7}, False),
    (
        routers.FLOATINGIP_CREATE,
        {"floatingip": {"floating_network_id": "n", "port_id": None}},
        True,
    ),
    (routers.FLOATINGIP_CREATE, {"floatingip": {"floating_ip_address": "1" * 65}}, False),
    (routers.FLOATINGIP_UPDATE, {"floatingip": {"description": "d" * 256}}, False),
    (routers.FLOATINGIP_UPDATE, {"floatingip": {"fixed_ip_address": 10}}, False),
    # Image: any other key is a string property.
    (image.CREATE, {"name": None, "min_ram": 0, "hw_architecture": "x86_64"}, True),
    (image.CREATE, {"min_ram": "512"}, False),
    (image.CREATE, {"hw_architecture": 64}, False),
    (image.CREATE, {"size": 10}, True),
    (image.PATCH, [{"op": "add", "path": "/a~1b", "value": "x"}], True),
    (image.PATCH, [{"op": "add", "path": "/a/b", "value": "x"}], False),
    (image.PATCH, {"op": "add"}, False),
]


@pytest.mark.parametrize(("schema", "body", "valid"), CASES)
def test_boundaries(schema: Mapping[str, Any], body: Any, valid: bool) -> None:
    assert (first_error(body, schema) is None) == valid


def test_a_disk_config_is_auto_or_manual() -> None:
    # A list here reached a dictionary lookup and was a 500 (found by the fuzz test).
    update = {"server": {"OS-DCF:diskConfig": [[1], 2]}}
    assert first_error(update, server.UPDATE_V2_19) is not None
    assert first_error({"server": {"OS-DCF:diskConfig": "AUTO"}}, server.UPDATE_V2_19) is None
