"""The provider list is written from a template: names must come out as JSON strings."""

from __future__ import annotations

import orjson

from berth.placement.api.resource_providers import serialize_listing
from berth.placement.candidates import ProviderHeaders
from berth.placement.microversion import negotiate

NAMES = ["plain", 'quote"d', "back\\slash", "tab\there", "ünïcode ☃", "line\u2028sep", "nl\n"]


def test_names_are_escaped_and_links_carry_the_uuid() -> None:
    uuids = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(len(NAMES))]
    headers = ProviderHeaders(
        uuids, NAMES, list(range(len(NAMES))), [None, *uuids[:-1]], [uuids[0]] * len(NAMES)
    )
    version = negotiate({"openstack-api-version": "placement 1.39"})
    listed = orjson.loads(serialize_listing(headers, version))["resource_providers"]
    assert [p["name"] for p in listed] == NAMES
    assert [p["parent_provider_uuid"] for p in listed] == [None, *uuids[:-1]]
    for p in listed:
        assert {link["href"].split("/")[2] for link in p["links"]} == {p["uuid"]}
        assert p["links"][0] == {"rel": "self", "href": f"/resource_providers/{p['uuid']}"}
