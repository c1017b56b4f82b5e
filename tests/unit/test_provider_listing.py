"""The provider list is written from a template and kept per row: names must come out as JSON
strings, and a changed provider must not be shown as it was."""

from __future__ import annotations

import numpy as np
import orjson

from berth.placement.api.resource_providers import serialize_listing
from berth.placement.candidates import Provider, ProviderIndex
from berth.placement.candidates.index import Usage
from berth.placement.microversion import negotiate

NAMES = ["plain", 'quote"d', "back\\slash", "tab\there", "ünïcode ☃", "line\u2028sep", "nl\n"]
UUIDS = [f"00000000-0000-0000-0000-00000000000{i}" for i in range(len(NAMES))]


def _index() -> ProviderIndex:
    providers = [Provider(uuid=UUIDS[0], name=NAMES[0], root_uuid=UUIDS[0])]
    providers += [
        Provider(uuid=u, name=n, parent_uuid=UUIDS[0], root_uuid=UUIDS[0])
        for u, n in zip(UUIDS[1:], NAMES[1:], strict=True)
    ]
    return ProviderIndex.build(providers, ["VCPU"], [])


def _listed(index: ProviderIndex, minor: int = 39) -> list[dict]:
    version = negotiate({"openstack-api-version": f"placement 1.{minor}"})
    rows = np.arange(index.size)
    return orjson.loads(serialize_listing(index, rows, version))["resource_providers"]  # type: ignore[no-any-return]


def test_names_are_escaped_and_links_carry_the_uuid() -> None:
    listed = _listed(_index())
    assert [p["name"] for p in listed] == NAMES
    assert [p["parent_provider_uuid"] for p in listed] == [None] + [UUIDS[0]] * (len(NAMES) - 1)
    for p in listed:
        assert {link["href"].split("/")[2] for link in p["links"]} == {p["uuid"]}
        assert p["links"][0] == {"rel": "self", "href": f"/resource_providers/{p['uuid']}"}


def test_kept_items_follow_changes_and_versions() -> None:
    index = _index()
    assert _listed(index)[1]["generation"] == 0
    index.apply_usage([Usage(id=1, generation=5, modified=None, used={})])
    index.apply([Provider(uuid=UUIDS[2], name="renamed", parent_uuid=UUIDS[0], root_uuid=UUIDS[0])])
    listed = _listed(index)
    assert (listed[1]["generation"], listed[2]["name"]) == (5, "renamed")
    # Before 1.14 there is no tree in an item; the kept 1.39 items are not reused for it.
    assert "root_provider_uuid" not in _listed(index, 10)[0]
