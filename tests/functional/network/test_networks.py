"""/v2.0/networks and /v2.0/segments over HTTP, on every database backend."""

from __future__ import annotations

from typing import Any

import httpx
import pytest
from sqlalchemy import event

from berth.common.db import Database
from berth.network.service import NetworkService
from tests.conftest import MEMBER_ROLES, network_client_for
from tests.functional.network.calls import neutron_error, two_racks


def _create(client: httpx.Client, **network: object) -> dict[str, object]:
    answer = client.post("/v2.0/networks", json={"network": network})
    assert answer.status_code == 201, answer.text
    return answer.json()["network"]  # type: ignore[no-any-return]


def test_a_network_without_provider_attributes_gets_the_lowest_free_vni(
    network_client: httpx.Client,
) -> None:
    first = _create(network_client, name="one")
    second = _create(network_client, name="two")
    assert (first["provider:network_type"], first["provider:segmentation_id"]) == ("vxlan", 1)
    assert second["provider:segmentation_id"] == 2
    assert first["mtu"] == 1450 and first["status"] == "ACTIVE" and first["subnets"] == []
    assert first["project_id"] == first["tenant_id"] == "admin"
    network_client.delete(f"/v2.0/networks/{first['id']}")
    assert _create(network_client, name="three")["provider:segmentation_id"] == 1


def test_provider_networks_and_their_segment_conflicts(network_client: httpx.Client) -> None:
    flat = _create(
        network_client,
        name="public",
        **{"provider:network_type": "flat", "provider:physical_network": "public"},
    )
    assert flat["mtu"] == 1500 and flat["provider:segmentation_id"] is None
    again = network_client.post(
        "/v2.0/networks",
        json={"network": {"provider:network_type": "flat", "provider:physical_network": "public"}},
    )
    assert "physical network public" in neutron_error(again, 409, "SegmentationIdInUse")
    vlan = {"provider:network_type": "vlan", "provider:physical_network": "physnet1"}
    missing = network_client.post("/v2.0/networks", json={"network": vlan})
    neutron_error(missing, 400, "InvalidInput")
    out_of_range = network_client.post(
        "/v2.0/networks", json={"network": {**vlan, "provider:segmentation_id": 4095}}
    )
    neutron_error(out_of_range, 400, "InvalidInput")
    assert _create(network_client, **vlan, **{"provider:segmentation_id": 100})["mtu"] == 1500


def test_a_multi_segment_network_shows_its_segments(network_client: httpx.Client) -> None:
    routed = _create(
        network_client,
        name="routed",
        segments=[
            {"provider:network_type": "vlan", "provider:physical_network": "rack1",
             "provider:segmentation_id": 10},
            {"provider:network_type": "vlan", "provider:physical_network": "rack2",
             "provider:segmentation_id": 10},
        ],
    )  # fmt: skip
    assert "provider:network_type" not in routed
    assert [s["provider:physical_network"] for s in routed["segments"]] == ["rack1", "rack2"]
    listed = network_client.get("/v2.0/segments", params={"network_id": routed["id"]}).json()
    assert sorted(s["physical_network"] for s in listed["segments"]) == ["rack1", "rack2"]
    both = network_client.post(
        "/v2.0/networks",
        json={"network": {"segments": [], "provider:network_type": "vxlan"}},
    )
    neutron_error(both, 400, "InvalidInput")


def test_segments_can_be_added_renamed_and_deleted_but_not_the_last(
    network_client: httpx.Client,
) -> None:
    net = _create(network_client)
    added = network_client.post(
        "/v2.0/segments",
        json={"segment": {"network_id": net["id"], "network_type": "vlan",
                          "physical_network": "rack9", "segmentation_id": 7, "name": "s9"}},
    )  # fmt: skip
    assert added.status_code == 201, added.text
    segment = added.json()["segment"]
    assert segment["name"] == "s9" and segment["segmentation_id"] == 7
    renamed = network_client.put(f"/v2.0/segments/{segment['id']}", json={"segment": {"name": "x"}})
    assert renamed.json()["segment"]["name"] == "x"
    assert "segments" in network_client.get(f"/v2.0/networks/{net['id']}").json()["network"]
    assert network_client.delete(f"/v2.0/segments/{segment['id']}").status_code == 204
    only = network_client.get("/v2.0/segments", params={"network_id": net["id"]}).json()
    last = network_client.delete(f"/v2.0/segments/{only['segments'][0]['id']}")
    neutron_error(last, 409, "SegmentInUse")
    neutron_error(network_client.get("/v2.0/segments/nope"), 404, "SegmentNotFound")


def test_projects_see_their_own_and_shared_networks_without_provider_details(
    network_service: NetworkService, network_client: httpx.Client
) -> None:
    mine = network_client.post(
        "/v2.0/networks", json={"network": {"name": "mine", "project_id": "alice"}}
    ).json()["network"]
    shared = _create(network_client, name="shared", shared=True)
    _create(network_client, name="other", project_id="bob")
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        names = sorted(n["name"] for n in alice.get("/v2.0/networks").json()["networks"])
        assert names == ["mine", "shared"]
        shown = alice.get(f"/v2.0/networks/{mine['id']}").json()["network"]
        assert "provider:network_type" not in shown
        assert alice.get(f"/v2.0/networks/{shared['id']}").status_code == 200
        neutron_error(alice.delete(f"/v2.0/networks/{shared['id']}"), 403, "NotAuthorized")
        provider = alice.post(
            "/v2.0/networks", json={"network": {"provider:network_type": "vxlan"}}
        )
        neutron_error(provider, 403, "NotAuthorized")
        neutron_error(alice.get("/v2.0/segments"), 403, "NotAuthorized")
        other = alice.post("/v2.0/networks", json={"network": {"project_id": "bob"}})
        neutron_error(other, 403, "NotAuthorized")


def test_updates_and_refusals(network_client: httpx.Client) -> None:
    net = _create(network_client, name="a")
    updated = network_client.put(
        f"/v2.0/networks/{net['id']}", json={"network": {"name": "b", "mtu": 1400}}
    ).json()["network"]
    assert (updated["name"], updated["mtu"], updated["revision_number"]) == ("b", 1400, 1)
    back = network_client.put(f"/v2.0/networks/{net['id']}", json={"network": {"mtu": 1450}})
    assert back.json()["network"]["mtu"] == 1450
    too_big = network_client.put(f"/v2.0/networks/{net['id']}", json={"network": {"mtu": 1451}})
    neutron_error(too_big, 400, "InvalidInput")
    provider = network_client.put(
        f"/v2.0/networks/{net['id']}", json={"network": {"provider:segmentation_id": 5}}
    )
    neutron_error(provider, 400, "InvalidInput")
    neutron_error(
        network_client.post("/v2.0/networks", json={"network": {"bogus": 1}}), 400, "BadRequest"
    )
    neutron_error(network_client.post("/v2.0/networks", content=b"{nope"), 400, "BadRequest")
    neutron_error(network_client.post("/v2.0/networks", json={"networks": 1}), 400, "BadRequest")
    neutron_error(network_client.get("/v2.0/networks/missing"), 404, "NetworkNotFound")
    neutron_error(network_client.patch("/v2.0/networks"), 405, "MethodNotAllowed")
    bad_qos = network_client.post(
        "/v2.0/networks",
        json={"network": {"qos_policy_id": "8c1a1f30-6b7a-4c55-9a39-2f1f0c7d7f11"}},
    )
    neutron_error(bad_qos, 404, "QosPolicyNotFound")


def test_lists_filter_select_fields_sort_and_page(network_client: httpx.Client) -> None:
    for name in ("c", "a", "b", "d"):
        _create(network_client, name=name, admin_state_up=name != "d")
    listed = network_client.get(
        "/v2.0/networks", params=[("sort_key", "name"), ("sort_dir", "desc"), ("fields", "name")]
    ).json()["networks"]
    assert listed == [{"name": "d"}, {"name": "c"}, {"name": "b"}, {"name": "a"}]
    down = network_client.get("/v2.0/networks", params={"admin_state_up": "false"}).json()
    assert [n["name"] for n in down["networks"]] == ["d"]
    either = network_client.get("/v2.0/networks", params=[("name", "a"), ("name", "b")]).json()
    assert sorted(n["name"] for n in either["networks"]) == ["a", "b"]
    neutron_error(network_client.get("/v2.0/networks", params={"colour": "red"}), 400, "BadRequest")
    neutron_error(
        network_client.get("/v2.0/networks", params={"sort_key": "colour"}), 400, "BadRequest"
    )
    neutron_error(network_client.get("/v2.0/networks", params={"limit": "x"}), 400, "BadRequest")
    page = network_client.get(
        "/v2.0/networks", params=[("sort_key", "name"), ("limit", "2")]
    ).json()
    assert [n["name"] for n in page["networks"]] == ["a", "b"]
    (following,) = [link for link in page["networks_links"] if link["rel"] == "next"]
    second = network_client.get(following["href"]).json()
    assert [n["name"] for n in second["networks"]] == ["c", "d"]
    # A full page links on even when nothing follows: the page after it is empty.
    following, previous = second["networks_links"]
    assert (following["rel"], previous["rel"]) == ("next", "previous")
    last = network_client.get(following["href"]).json()
    assert last["networks"] == []
    # From past the end, the way back is to the last page.
    (back_to_last,) = last["networks_links"]
    assert back_to_last["rel"] == "previous" and "marker" not in back_to_last["href"]
    before = network_client.get(back_to_last["href"]).json()
    assert [n["name"] for n in before["networks"]] == ["c", "d"]
    back = network_client.get(previous["href"]).json()
    assert [n["name"] for n in back["networks"]] == ["a", "b"]


@pytest.mark.parametrize("path", ["/", "/v2.0", "/v2.0/extensions", "/v2.0/extensions/qos"])
def test_discovery_documents(network_client: httpx.Client, path: str) -> None:
    assert network_client.get(path).status_code == 200


def test_unknown_extension_and_missing_token(network_service: NetworkService) -> None:
    with network_client_for(network_service) as client:
        neutron_error(client.get("/v2.0/extensions/nope"), 404, "NotFound")
        del client.headers["x-auth-token"]
        neutron_error(client.get("/v2.0/networks"), 401, "Unauthorized")


def test_timestamps_are_utc_with_a_z(network_client: httpx.Client) -> None:
    created = _create(network_client)
    assert str(created["created_at"]).endswith("Z") and len(str(created["created_at"])) == 20


@pytest.mark.parametrize("attribute", ["name", "description"])
def test_strings_over_255_characters_are_a_400_whoever_asks(
    network_service: NetworkService, network_client: httpx.Client, attribute: str
) -> None:
    network = _create(network_client, name="admin's")
    subnet = network_client.post(
        "/v2.0/subnets",
        json={"subnet": {"network_id": network["id"], "cidr": "10.0.0.0/24", "ip_version": 4}},
    ).json()["subnet"]
    port = network_client.post("/v2.0/ports", json={"port": {"network_id": network["id"]}})
    too_long = {attribute: "x" * 256}
    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        # alice sees none of these: the body is still checked first, as upstream.
        for kind, found in (
            ("network", network),
            ("subnet", subnet),
            ("port", port.json()["port"]),
        ):
            answer = alice.put(f"/v2.0/{kind}s/{found['id']}", json={kind: too_long})
            assert attribute in neutron_error(answer, 400, "InvalidInput")
        refused = alice.post("/v2.0/networks", json={"network": too_long})
        neutron_error(refused, 400, "InvalidInput")
    fits = network_client.put(
        f"/v2.0/networks/{network['id']}", json={"network": {attribute: "x" * 255}}
    )
    assert fits.status_code == 200, fits.text
    device = network_client.post(
        "/v2.0/ports", json={"port": {"network_id": network["id"], "device_owner": "x" * 256}}
    )
    neutron_error(device, 400, "InvalidInput")


def test_a_show_reads_grants_and_subnets_once_and_says_what_a_listing_says(
    network_service: NetworkService, network_client: httpx.Client, network_db: Database
) -> None:
    """A network's show reads the caller's grants of both actions in one statement, for its
    check and its view alike, and its subnets (their ids and whether one is on a segment) in
    one; it says what the listing says of the network."""
    net, racks = two_racks(
        network_client, 11, name="racks", project_id="bob", shared=True,
        **{"router:external": True},
    )  # fmt: skip
    made = [
        network_client.post("/v2.0/subnets", json={"subnet": subnet}).json()["subnet"]["id"]
        for subnet in (
            {"network_id": net["id"], "ip_version": 4, "cidr": "10.1.0.0/24",
             "segment_id": racks["rack1"]},
            {"network_id": net["id"], "ip_version": 4, "cidr": "10.2.0.0/24",
             "segment_id": racks["rack1"]},
        )
    ]  # fmt: skip
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        event.listen(network_db.engine, "before_cursor_execute", record)
        try:
            shown = alice.get(f"/v2.0/networks/{net['id']}").json()["network"]
        finally:
            event.remove(network_db.engine, "before_cursor_execute", record)
        (listed,) = alice.get("/v2.0/networks", params={"id": net["id"]}).json()["networks"]
    assert shown == listed
    assert (shown["shared"], shown["router:external"], shown["l2_adjacency"]) == (
        True, True, False
    )  # fmt: skip
    assert sorted(shown["subnets"]) == sorted(made)
    # Besides the revisions' one statement (a show's reads are recalled while they hold).
    reads = [s for s in statements if "UNION ALL" not in s]
    assert sum("FROM rbac_policies" in s for s in reads) == 1, statements
    assert sum("FROM subnets" in s for s in reads) == 1, statements


def test_a_show_recalls_the_one_before_while_the_network_is_unchanged(
    network_db: Database, network_service: NetworkService, network_client: httpx.Client
) -> None:
    """A show keeps what it read with the network's revisions: the next show for the same
    project reads only the revisions while they hold, and what changed after they do not."""
    net = network_client.post("/v2.0/networks", json={"network": {"name": "n", "shared": True}})
    net = net.json()["network"]
    statements: list[str] = []

    def record(*args: object) -> None:
        statements.append(str(args[2]))

    def show(client: httpx.Client) -> dict[str, Any]:
        statements.clear()
        event.listen(network_db.engine, "before_cursor_execute", record)
        try:
            answer = client.get(f"/v2.0/networks/{net['id']}")
        finally:
            event.remove(network_db.engine, "before_cursor_execute", record)
        assert answer.status_code == 200, answer.text
        return answer.json()["network"]  # type: ignore[no-any-return]

    with network_client_for(network_service, "alice", roles=MEMBER_ROLES) as alice:
        first = show(alice)
        assert len(statements) > 1
        assert show(alice) == first
        assert len(statements) == 1 and "UNION ALL" in statements[0], statements
        subnet = network_client.post("/v2.0/subnets", json={"subnet": {
            "network_id": net["id"], "ip_version": 4, "cidr": "10.0.0.0/24"}}).json()["subnet"]  # fmt: skip
        assert show(alice)["subnets"] == [subnet["id"]]
        network_client.put(
            f"/v2.0/networks/{net['id']}", json={"network": {"name": "renamed"}}
        ).raise_for_status()
        assert show(alice)["name"] == "renamed"
        network_client.put(
            f"/v2.0/networks/{net['id']}", json={"network": {"shared": False}}
        ).raise_for_status()
        hidden = alice.get(f"/v2.0/networks/{net['id']}")
        assert hidden.status_code == 404, hidden.text
    # Another project's show reads for itself.
    statements.clear()
    assert show(network_client)["shared"] is False
    assert len(statements) > 1
