"""/v2.0/qos/policies, their rules and /v2.0/qos/rule-types over HTTP, on every database backend."""

from __future__ import annotations

import uuid

import httpx
import pytest

from berth.common.timeutils import utcnow
from berth.network import qos
from berth.network.service import NetworkService
from berth.network.store import qos as store
from berth.network.store.schema import ports
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error

# Creating and changing QoS policies takes an admin (upstream's default): not even a manager.
MANAGER_ROLES = "manager,member,reader"

MISSING = "8c1a1f30-6b7a-4c55-9a39-2f1f0c7d7f11"


def _policy(client: httpx.Client, **policy: object) -> dict[str, object]:
    answer = client.post("/v2.0/qos/policies", json={"policy": policy})
    assert answer.status_code == 201, answer.text
    return answer.json()["policy"]  # type: ignore[no-any-return]


def _rule(client: httpx.Client, policy_id: object, kind: str, **rule: object) -> httpx.Response:
    return client.post(f"/v2.0/qos/policies/{policy_id}/{kind}_rules", json={f"{kind}_rule": rule})


def test_rule_types_are_listed(network_client: httpx.Client) -> None:
    answer = network_client.get("/v2.0/qos/rule-types")
    assert answer.status_code == 200
    assert answer.json() == {
        "rule_types": [
            {"type": "bandwidth_limit"},
            {"type": "minimum_bandwidth"},
            {"type": "minimum_packet_rate"},
        ]
    }


def test_rule_type_details_are_an_admin_s(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    answer = network_client.get("/v2.0/qos/rule-types/minimum_packet_rate")
    assert answer.status_code == 200, answer.text
    details = answer.json()["rule_type"]
    assert details["type"] == "minimum_packet_rate"
    assert [d["name"] for d in details["drivers"]] == ["openvswitch", "sriovnicswitch"]
    assert details["drivers"][0]["supported_parameters"] == [
        {
            "parameter_name": "min_kpps",
            "parameter_type": "range",
            "parameter_values": {"start": 0, "end": 2**31 - 1},
        },
        {
            "parameter_name": "direction",
            "parameter_type": "choices",
            "parameter_values": ["any", "egress", "ingress"],
        },
    ]
    neutron_error(network_client.get("/v2.0/qos/rule-types/dscp_marking"), 404, "NotFound")
    with network_client_for(network_service, "alice", roles=MANAGER_ROLES) as alice:
        neutron_error(alice.get("/v2.0/qos/rule-types/bandwidth_limit"), 403, "NotAuthorized")


def test_a_policy_is_created_shown_updated_and_deleted(network_client: httpx.Client) -> None:
    made = _policy(network_client, name="gold", description="fast")
    assert made["name"] == "gold" and made["description"] == "fast"
    assert made["project_id"] == made["tenant_id"] == "admin"
    assert (made["shared"], made["is_default"], made["rules"], made["tags"]) == (
        False, False, [], [],
    )  # fmt: skip
    assert made["revision_number"] == 0 and made["updated_at"] == made["created_at"]
    path = f"/v2.0/qos/policies/{made['id']}"
    shown = network_client.get(path, params={"fields": "name"}).json()["policy"]
    assert shown == {"name": "gold"}
    updated = network_client.put(path, json={"policy": {"name": "silver", "shared": True}})
    assert updated.status_code == 200, updated.text
    policy = updated.json()["policy"]
    assert (policy["name"], policy["shared"], policy["revision_number"]) == ("silver", True, 1)
    assert network_client.delete(path).status_code == 204
    neutron_error(network_client.get(path), 404, "QosPolicyNotFound")
    neutron_error(network_client.delete(path), 404, "QosPolicyNotFound")
    neutron_error(
        network_client.put(path, json={"policy": {"name": "x"}}), 404, "QosPolicyNotFound"
    )


def test_policy_lists_filter_sort_and_page(network_client: httpx.Client) -> None:
    for name in ("c", "a", "b"):
        _policy(network_client, name=name, shared=name == "b")
    listed = network_client.get(
        "/v2.0/qos/policies", params=[("sort_key", "name"), ("fields", "name")]
    ).json()
    assert listed["policies"] == [{"name": "a"}, {"name": "b"}, {"name": "c"}]
    shared = network_client.get("/v2.0/qos/policies", params={"shared": "true"}).json()
    assert [p["name"] for p in shared["policies"]] == ["b"]
    page = network_client.get(
        "/v2.0/qos/policies", params=[("sort_key", "name"), ("limit", "2")]
    ).json()
    assert [p["name"] for p in page["policies"]] == ["a", "b"]
    assert [link["rel"] for link in page["policies_links"]] == ["next"]
    unknown = network_client.get("/v2.0/qos/policies", params={"colour": "red"})
    neutron_error(unknown, 400, "BadRequest")


def test_a_marker_the_caller_does_not_see_still_places_the_page(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    made = {name: _policy(network_client, name=name, shared=name != "b") for name in "abcd"}
    params = [("sort_key", "name"), ("limit", "2"), ("marker", str(made["b"]["id"]))]
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        after = alice.get("/v2.0/qos/policies", params=params).json()
        assert [p["name"] for p in after["policies"]] == ["c", "d"]
        before = alice.get("/v2.0/qos/policies", params=[*params, ("page_reverse", "true")]).json()
        assert [p["name"] for p in before["policies"]] == ["a"]
        unknown = alice.get("/v2.0/qos/policies", params={"limit": 1, "marker": MISSING})
        neutron_error(unknown, 400, "BadRequest")


def test_projects_see_their_own_and_shared_policies_and_change_none(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    shared = _policy(network_client, name="shared", shared=True)
    hidden = _policy(network_client, name="hidden")
    _policy(network_client, name="bobs", project_id="bob")
    mine = _policy(network_client, name="mine", project_id="alice")
    with network_client_for(network_service, "alice", roles=MANAGER_ROLES) as alice:
        names = sorted(p["name"] for p in alice.get("/v2.0/qos/policies").json()["policies"])
        assert names == ["mine", "shared"]
        neutron_error(alice.get(f"/v2.0/qos/policies/{hidden['id']}"), 404, "QosPolicyNotFound")
        neutron_error(alice.delete(f"/v2.0/qos/policies/{hidden['id']}"), 404, "QosPolicyNotFound")
        for policy in (shared, mine):
            path = f"/v2.0/qos/policies/{policy['id']}"
            assert alice.get(path).status_code == 200
            neutron_error(alice.put(path, json={"policy": {"name": "x"}}), 403, "NotAuthorized")
            neutron_error(alice.delete(path), 403, "NotAuthorized")
            rule = _rule(alice, policy["id"], "bandwidth_limit", max_kbps=1)
            neutron_error(rule, 403, "NotAuthorized")
        # A rule's creation is judged before its policy is looked for (upstream's order), so
        # it is a 403 even on a policy alice cannot see; a change of its rules is a 404.
        neutron_error(
            _rule(alice, hidden["id"], "bandwidth_limit", max_kbps=1), 403, "NotAuthorized"
        )
        hidden_rule = _rule(network_client, hidden["id"], "bandwidth_limit", max_kbps=1).json()
        rule_path = (
            f"/v2.0/qos/policies/{hidden['id']}/bandwidth_limit_rules/"
            f"{hidden_rule['bandwidth_limit_rule']['id']}"
        )
        changed = alice.put(rule_path, json={"bandwidth_limit_rule": {"max_kbps": 2}})
        neutron_error(changed, 404, "QosPolicyNotFound")
        neutron_error(alice.delete(rule_path), 404, "QosPolicyNotFound")
        for body in ({"shared": True}, {"shared": False}, {"project_id": "bob"}):
            refused = alice.post("/v2.0/qos/policies", json={"policy": body})
            neutron_error(refused, 403, "NotAuthorized")
        # The body is checked first: a bad value is a 400 even where the caller would get a 404.
        too_long = alice.put(
            f"/v2.0/qos/policies/{hidden['id']}", json={"policy": {"name": "x" * 256}}
        )
        neutron_error(too_long, 400, "InvalidInput")
        too_long = alice.post("/v2.0/qos/policies", json={"policy": {"description": "x" * 256}})
        neutron_error(too_long, 400, "InvalidInput")


def test_policy_refusals(network_client: httpx.Client) -> None:
    bogus = network_client.post("/v2.0/qos/policies", json={"policy": {"colour": "red"}})
    neutron_error(bogus, 400, "BadRequest")
    neutron_error(
        network_client.post("/v2.0/qos/policies", json={"policies": {}}), 400, "BadRequest"
    )
    long_name = network_client.post("/v2.0/qos/policies", json={"policy": {"name": "x" * 256}})
    neutron_error(long_name, 400, "InvalidInput")
    shared = network_client.post("/v2.0/qos/policies", json={"policy": {"shared": "maybe"}})
    neutron_error(shared, 400, "InvalidInput")
    made = _policy(network_client)
    read_only = network_client.put(
        f"/v2.0/qos/policies/{made['id']}", json={"policy": {"project_id": "bob"}}
    )
    neutron_error(read_only, 400, "BadRequest")
    neutron_error(network_client.get("/v2.0/qos/policies/not-a-uuid"), 404, "QosPolicyNotFound")
    neutron_error(network_client.patch("/v2.0/qos/policies"), 405, "MethodNotAllowed")


def test_a_project_has_at_most_one_default_policy(network_client: httpx.Client) -> None:
    first = _policy(network_client, is_default=True)
    assert first["is_default"] is True
    again = network_client.post("/v2.0/qos/policies", json={"policy": {"is_default": True}})
    neutron_error(again, 409, "QoSPolicyDefaultAlreadyExists")
    other = _policy(network_client, project_id="bob", is_default=True)
    assert other["is_default"] is True
    second = _policy(network_client)
    path = f"/v2.0/qos/policies/{second['id']}"
    neutron_error(network_client.put(path, json={"policy": {"is_default": True}}), 409,
           "QoSPolicyDefaultAlreadyExists")  # fmt: skip
    off = network_client.put(f"/v2.0/qos/policies/{first['id']}",
                             json={"policy": {"is_default": False}})  # fmt: skip
    assert off.json()["policy"]["is_default"] is False
    assert network_client.put(path, json={"policy": {"is_default": True}}).status_code == 200


@pytest.mark.parametrize(
    ("kind", "rates", "changed"),
    [
        ("bandwidth_limit", {"max_kbps": 1000}, {"max_burst_kbps": 100}),
        ("minimum_bandwidth", {"min_kbps": 1000}, {"min_kbps": 2000}),
        ("minimum_packet_rate", {"min_kpps": 1000}, {"min_kpps": 2000}),
    ],
)
def test_each_rule_type_is_created_listed_shown_updated_and_deleted(
    network_client: httpx.Client, kind: str, rates: dict[str, int], changed: dict[str, int]
) -> None:
    policy = _policy(network_client)
    made = _rule(network_client, policy["id"], kind, **rates)
    assert made.status_code == 201, made.text
    rule = made.json()[f"{kind}_rule"]
    assert rule["direction"] == "egress" and all(rule[k] == v for k, v in rates.items())
    if kind == "bandwidth_limit":
        assert rule["max_burst_kbps"] == 0
    collection = f"/v2.0/qos/policies/{policy['id']}/{kind}_rules"
    listed = network_client.get(collection).json()[f"{kind}_rules"]
    assert listed == [rule]
    assert network_client.get(f"{collection}/{rule['id']}").json()[f"{kind}_rule"] == rule
    filtered = network_client.get(collection, params={"direction": "ingress"}).json()
    assert filtered[f"{kind}_rules"] == []
    shown = network_client.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"]
    assert shown["rules"] == [{**rule, "type": kind, "qos_policy_id": policy["id"]}]
    assert shown["revision_number"] == 1
    updated = network_client.put(
        f"{collection}/{rule['id']}", json={f"{kind}_rule": {**changed, "direction": "ingress"}}
    )
    assert updated.status_code == 200, updated.text
    body = updated.json()[f"{kind}_rule"]
    assert body["direction"] == "ingress" and all(body[k] == v for k, v in changed.items())
    assert network_client.delete(f"{collection}/{rule['id']}").status_code == 204
    neutron_error(network_client.get(f"{collection}/{rule['id']}"), 404, "QosRuleNotFound")
    neutron_error(network_client.delete(f"{collection}/{rule['id']}"), 404, "QosRuleNotFound")
    assert network_client.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"]["rules"] == []


def test_one_rule_per_type_and_direction(network_client: httpx.Client) -> None:
    policy = _policy(network_client)
    assert _rule(network_client, policy["id"], "bandwidth_limit", max_kbps=10).status_code == 201
    again = _rule(network_client, policy["id"], "bandwidth_limit", max_kbps=20)
    neutron_error(again, 409, "QosRuleConflict")
    ingress = _rule(network_client, policy["id"], "bandwidth_limit", max_kbps=20,
                    direction="ingress")  # fmt: skip
    assert ingress.status_code == 201
    rule_id = ingress.json()["bandwidth_limit_rule"]["id"]
    collection = f"/v2.0/qos/policies/{policy['id']}/bandwidth_limit_rules"
    turned = network_client.put(
        f"{collection}/{rule_id}", json={"bandwidth_limit_rule": {"direction": "egress"}}
    )
    neutron_error(turned, 409, "QosRuleConflict")
    other_type = _rule(network_client, policy["id"], "minimum_bandwidth", min_kbps=10)
    assert other_type.status_code == 201
    shown = network_client.get(f"/v2.0/qos/policies/{policy['id']}").json()["policy"]
    assert sorted((r["type"], r["direction"]) for r in shown["rules"]) == [
        ("bandwidth_limit", "egress"), ("bandwidth_limit", "ingress"),
        ("minimum_bandwidth", "egress"),
    ]  # fmt: skip


def test_packet_rate_any_direction_excludes_directed_rules(network_client: httpx.Client) -> None:
    policy = _policy(network_client)
    anyway = _rule(network_client, policy["id"], "minimum_packet_rate", min_kpps=10,
                   direction="any")  # fmt: skip
    assert anyway.status_code == 201
    directed = _rule(network_client, policy["id"], "minimum_packet_rate", min_kpps=10)
    neutron_error(directed, 409, "QosRuleConflict")
    other = _policy(network_client)
    assert _rule(network_client, other["id"], "minimum_packet_rate", min_kpps=1).status_code == 201
    ingress = _rule(network_client, other["id"], "minimum_packet_rate", min_kpps=1,
                    direction="ingress")  # fmt: skip
    assert ingress.status_code == 201
    neutron_error(
        _rule(network_client, other["id"], "minimum_packet_rate", min_kpps=1, direction="any"),
        409,
        "QosRuleConflict",
    )
    rule_id = ingress.json()["minimum_packet_rate_rule"]["id"]
    turned = network_client.put(
        f"/v2.0/qos/policies/{other['id']}/minimum_packet_rate_rules/{rule_id}",
        json={"minimum_packet_rate_rule": {"direction": "any"}},
    )
    neutron_error(turned, 409, "QosRuleConflict")


@pytest.mark.parametrize(
    ("kind", "rule", "status", "error"),
    [
        ("bandwidth_limit", {"max_kbps": -1}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": 1.5}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": None}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": True}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": 2**31}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": 1, "max_burst_kbps": -5}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_burst_kbps": 5}, 400, "BadRequest"),
        ("bandwidth_limit", {"max_kbps": 1, "direction": "any"}, 400, "InvalidInput"),
        ("bandwidth_limit", {"max_kbps": 1, "min_kbps": 1}, 400, "BadRequest"),
        ("minimum_bandwidth", {"min_kbps": "many"}, 400, "InvalidInput"),
        ("minimum_bandwidth", {}, 400, "BadRequest"),
        ("minimum_bandwidth", {"min_kbps": 1, "direction": "sideways"}, 400, "InvalidInput"),
        ("minimum_packet_rate", {"min_kpps": -1}, 400, "InvalidInput"),
        ("minimum_packet_rate", {"min_kbps": 1}, 400, "BadRequest"),
    ],
)
def test_bad_rules_are_refused(
    network_client: httpx.Client, kind: str, rule: dict[str, object], status: int, error: str
) -> None:
    policy = _policy(network_client)
    neutron_error(_rule(network_client, policy["id"], kind, **rule), status, error)


def test_rules_of_missing_policies_and_rules_of_another_type(network_client: httpx.Client) -> None:
    neutron_error(
        _rule(network_client, MISSING, "bandwidth_limit", max_kbps=1), 404, "QosPolicyNotFound"
    )
    neutron_error(network_client.get(f"/v2.0/qos/policies/{MISSING}/minimum_bandwidth_rules"), 404,
           "QosPolicyNotFound")  # fmt: skip
    policy = _policy(network_client)
    made = _rule(network_client, policy["id"], "bandwidth_limit", max_kbps=1)
    rule_id = made.json()["bandwidth_limit_rule"]["id"]
    base = f"/v2.0/qos/policies/{policy['id']}"
    neutron_error(
        network_client.get(f"{base}/minimum_bandwidth_rules/{rule_id}"), 404, "QosRuleNotFound"
    )
    neutron_error(network_client.get(f"{base}/bandwidth_limit_rules/nope"), 404, "QosRuleNotFound")
    other = _policy(network_client)
    neutron_error(network_client.get(f"/v2.0/qos/policies/{other['id']}/bandwidth_limit_rules/{rule_id}"),
           404, "QosRuleNotFound")  # fmt: skip
    bad_update = network_client.put(
        f"{base}/bandwidth_limit_rules/{rule_id}", json={"bandwidth_limit_rule": {"max_kbps": -2}}
    )
    neutron_error(bad_update, 400, "InvalidInput")
    read_only = network_client.put(
        f"{base}/bandwidth_limit_rules/{rule_id}", json={"bandwidth_limit_rule": {"id": "x"}}
    )
    neutron_error(read_only, 400, "BadRequest")


def test_rules_are_read_through_their_policy_s_project(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    shared = _policy(network_client, shared=True)
    hidden = _policy(network_client)
    mine = _policy(network_client, project_id="alice")
    for policy in (shared, hidden, mine):
        assert (
            _rule(network_client, policy["id"], "minimum_bandwidth", min_kbps=5).status_code == 201
        )
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        listed = alice.get(f"/v2.0/qos/policies/{mine['id']}/minimum_bandwidth_rules").json()
        assert [r["min_kbps"] for r in listed["minimum_bandwidth_rules"]] == [5]
        # Another project's shared policy: its rules are in the policy, not under it.
        path = f"/v2.0/qos/policies/{shared['id']}"
        assert [r["min_kbps"] for r in alice.get(path).json()["policy"]["rules"]] == [5]
        listed = alice.get(f"{path}/minimum_bandwidth_rules").json()
        assert listed["minimum_bandwidth_rules"] == []
        rule_id = network_client.get(path).json()["policy"]["rules"][0]["id"]
        neutron_error(
            alice.get(f"{path}/minimum_bandwidth_rules/{rule_id}"), 404, "QosRuleNotFound"
        )
        neutron_error(alice.get(f"/v2.0/qos/policies/{hidden['id']}/minimum_bandwidth_rules"), 404,
               "QosPolicyNotFound")  # fmt: skip


def test_a_policy_used_by_a_network_or_port_cannot_be_deleted(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    policy = _policy(network_client, shared=True)
    path = f"/v2.0/qos/policies/{policy['id']}"
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        net = alice.post("/v2.0/networks", json={"network": {"qos_policy_id": policy["id"]}})
        assert net.status_code == 201, net.text
    network_id = net.json()["network"]["id"]
    assert policy["id"] in neutron_error(network_client.delete(path), 409, "QosPolicyInUse")
    unshare = network_client.put(path, json={"policy": {"shared": False}})
    assert "alice" in neutron_error(unshare, 409, "RbacPolicyInUse")
    cleared = network_client.put(
        f"/v2.0/networks/{network_id}", json={"network": {"qos_policy_id": None}}
    )
    assert cleared.status_code == 200, cleared.text
    port_id = _insert_port(network_service, network_id, policy["id"])
    assert port_id in neutron_error(network_client.delete(path), 409, "QosPolicyInUse")
    with network_service.db.write() as conn:
        conn.execute(ports.update().values(qos_policy_id=None))
    assert network_client.delete(path).status_code == 204


def test_rules_of_and_ports_using_policy(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    policy = _policy(network_client)
    _rule(network_client, policy["id"], "minimum_bandwidth", min_kbps=100, direction="ingress")
    _rule(network_client, policy["id"], "bandwidth_limit", max_kbps=300, max_burst_kbps=30)
    _rule(network_client, policy["id"], "minimum_packet_rate", min_kpps=7, direction="any")
    other = _policy(network_client)
    on_network = network_client.post(
        "/v2.0/networks", json={"network": {"qos_policy_id": policy["id"]}}
    ).json()["network"]["id"]
    plain = network_client.post("/v2.0/networks", json={"network": {}}).json()["network"]["id"]
    inherits = _insert_port(network_service, on_network, None)
    overrides = _insert_port(network_service, on_network, other["id"])
    names_it = _insert_port(network_service, plain, policy["id"])
    _insert_port(network_service, plain, None)
    with network_service.db.read() as conn:
        assert qos.rules_of(conn, policy["id"]) == [
            qos.QosRule("bandwidth_limit", "egress", max_kbps=300, max_burst_kbps=30),
            qos.QosRule("minimum_bandwidth", "ingress", min_kbps=100),
            qos.QosRule("minimum_packet_rate", "any", min_kpps=7),
        ]
        assert qos.rules_of(conn, MISSING) == []
        assert store.ports_using_policy(conn, policy["id"]) == sorted([inherits, names_it])
        assert store.ports_using_policy(conn, other["id"]) == [overrides]
        assert store.ports_using_policy(conn, MISSING) == []


def _insert_port(service: NetworkService, network_id: str, policy_id: str | None) -> str:
    """A port row as the port code would write it (enough for the QoS checks)."""
    port_id = str(uuid.uuid4())
    with service.db.write() as conn:
        conn.execute(
            ports.insert().values(
                id=port_id, network_id=network_id, project_id="alice", name="", description="",
                mac_address=f"fa:16:3e:{port_id[:2]}:{port_id[2:4]}:{port_id[4:6]}",
                admin_state_up=True, status="DOWN", device_id="", device_owner="",
                qos_policy_id=policy_id, ip_allocation="immediate", binding_host="",
                binding_vnic_type="normal", binding_profile={}, binding_vif_type="unbound",
                binding_vif_details={}, revision_number=0, created_at=utcnow(),
            )
        )  # fmt: skip
    return port_id


def test_a_member_cannot_take_off_a_policy_not_shared_with_it(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    policy = _policy(network_client)
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        network = alice.post("/v2.0/networks", json={"network": {}}).json()["network"]
        path = f"/v2.0/networks/{network['id']}"
        put_on = network_client.put(path, json={"network": {"qos_policy_id": policy["id"]}})
        assert put_on.status_code == 200, put_on.text
        neutron_error(
            alice.put(path, json={"network": {"qos_policy_id": None}}), 403, "NotAuthorized"
        )
        renamed = alice.put(path, json={"network": {"name": "kept"}})
        assert renamed.status_code == 200, renamed.text
        network_client.put(f"/v2.0/qos/policies/{policy['id']}", json={"policy": {"shared": True}})
        taken_off = alice.put(path, json={"network": {"qos_policy_id": None}})
        assert taken_off.status_code == 200, taken_off.text
        assert taken_off.json()["network"]["qos_policy_id"] is None


def test_a_project_s_default_policy_goes_on_its_new_networks(
    network_client: httpx.Client,
) -> None:
    default = _policy(network_client, project_id="alice", is_default=True)
    other = _policy(network_client, project_id="alice")
    made = network_client.post("/v2.0/networks", json={"network": {"project_id": "alice"}})
    assert made.json()["network"]["qos_policy_id"] == default["id"]
    chosen = network_client.post(
        "/v2.0/networks", json={"network": {"project_id": "alice", "qos_policy_id": other["id"]}}
    )
    assert chosen.json()["network"]["qos_policy_id"] == other["id"]
    none = network_client.post(
        "/v2.0/networks", json={"network": {"project_id": "alice", "qos_policy_id": None}}
    )
    assert none.json()["network"]["qos_policy_id"] is None
    theirs = network_client.post("/v2.0/networks", json={"network": {"project_id": "bob"}})
    assert theirs.json()["network"]["qos_policy_id"] is None
