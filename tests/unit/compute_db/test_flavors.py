"""Flavors, extra specs and private flavors' projects in the API database."""

from __future__ import annotations

from typing import Any

import pytest

from berth.common.db import Database
from berth.compute.db import flavors
from berth.compute.db.errors import Duplicate


def test_a_flavor_is_created_with_defaults_and_found_by_its_flavor_id(api_db: Database) -> None:
    with api_db.write() as conn:
        made = flavors.create(conn, "1", "m1.tiny", vcpus=1, memory_mb=512, root_gb=1)
    assert isinstance(made["id"], int)
    assert (made["flavorid"], made["swap"], made["rxtx_factor"]) == ("1", 0, 1.0)
    assert (made["is_public"], made["disabled"], made["description"]) == (True, False, None)
    with api_db.read() as conn:
        assert flavors.get(conn, "1") == made
        assert flavors.get_by_name(conn, "m1.tiny") == made
        assert flavors.get(conn, "2") is None


def test_a_flavor_id_and_a_name_are_taken_once(api_db: Database) -> None:
    with api_db.write() as conn:
        flavors.create(conn, "1", "m1.tiny", vcpus=1, memory_mb=512)
        with pytest.raises(Duplicate) as id_taken:
            flavors.create(conn, "1", "other", vcpus=1, memory_mb=512)
        with pytest.raises(Duplicate) as name_taken:
            flavors.create(conn, "2", "m1.tiny", vcpus=1, memory_mb=512)
    assert (id_taken.value.what, name_taken.value.what) == ("flavor id", "flavor name")


def test_flavors_are_listed_as_a_project_may_see_them(api_db: Database) -> None:
    with api_db.write() as conn:
        flavors.create(conn, "1", "small", vcpus=1, memory_mb=512, root_gb=1)
        flavors.create(conn, "2", "large", vcpus=8, memory_mb=8192, root_gb=80)
        flavors.create(conn, "3", "private", vcpus=2, memory_mb=2048, is_public=False)
        flavors.create(conn, "4", "old", vcpus=2, memory_mb=2048, disabled=True)
        assert flavors.add_project(conn, "3", "mine") is True
        assert flavors.add_project(conn, "3", "mine") is False
        assert flavors.add_project(conn, "9", "mine") is False
    with api_db.read() as conn:

        def ids(**filters: Any) -> list[str]:
            return [f["flavorid"] for f in flavors.list_flavors(conn, **filters)]

        assert ids() == ["1", "2", "3"]
        assert ids(visible_to="mine") == ["1", "2", "3"]
        assert ids(visible_to="theirs") == ["1", "2"]
        assert ids(is_public=False) == ["3"]
        assert ids(min_memory_mb=2048) == ["2", "3"]
        assert ids(min_root_gb=10) == ["2"]
        assert ids(include_disabled=True) == ["1", "2", "3", "4"]
        assert flavors.projects_of(conn, "3") == ["mine"]
        assert flavors.is_visible_to(conn, "3", "mine") is True
        assert flavors.is_visible_to(conn, "3", "theirs") is False
        assert flavors.is_visible_to(conn, "1", "theirs") is True
    with api_db.write() as conn:
        assert flavors.remove_project(conn, "3", "mine") is True
        assert flavors.remove_project(conn, "3", "mine") is False


def test_extra_specs_are_set_replaced_and_deleted(api_db: Database) -> None:
    with api_db.write() as conn:
        flavors.create(conn, "1", "small", vcpus=1, memory_mb=512)
        assert flavors.set_extra_specs(conn, "1", {"hw:cpu_policy": "shared", "a": "1"})
        assert flavors.set_extra_specs(conn, "1", {"a": "2", "trait:CUSTOM_X": "required"})
        assert flavors.set_extra_specs(conn, "9", {"a": "1"}) is False
    with api_db.read() as conn:
        assert flavors.extra_specs(conn, "1") == {
            "a": "2",
            "hw:cpu_policy": "shared",
            "trait:CUSTOM_X": "required",
        }
        assert flavors.extra_specs(conn, "9") == {}
        assert flavors.with_extra_specs(conn, ["1", "9"]) == {
            "1": flavors.extra_specs(conn, "1"),
            "9": {},
        }
    with api_db.write() as conn:
        assert flavors.delete_extra_spec(conn, "1", "a") is True
        assert flavors.delete_extra_spec(conn, "1", "a") is False
    with api_db.read() as conn:
        assert set(flavors.extra_specs(conn, "1")) == {"hw:cpu_policy", "trait:CUSTOM_X"}


def test_deleting_a_flavor_takes_its_specs_and_access_with_it(api_db: Database) -> None:
    with api_db.write() as conn:
        flavors.create(conn, "1", "small", vcpus=1, memory_mb=512, is_public=False)
        flavors.set_extra_specs(conn, "1", {"a": "1"})
        flavors.add_project(conn, "1", "mine")
        assert flavors.update_description(conn, "1", "for tests") is True
        described = flavors.get(conn, "1")
        assert described is not None and described["description"] == "for tests"
        assert flavors.delete(conn, "1") is True
        assert flavors.delete(conn, "1") is False
        # The same ids may be used again: nothing of the old flavor is left.
        flavors.create(conn, "1", "small", vcpus=1, memory_mb=512)
        assert flavors.extra_specs(conn, "1") == {}
        assert flavors.projects_of(conn, "1") == []
