"""Images' scheduling metadata in the API database."""

from __future__ import annotations

import pytest

from berth.common.db import Database
from berth.compute.db import images
from berth.compute.db.errors import Duplicate

IMAGE = "1" * 36


def test_an_image_is_registered_with_defaults(api_db: Database) -> None:
    with api_db.write() as conn:
        made = images.create(conn, IMAGE, {"name": "cirros", "size": 16 * 2**30})
        with pytest.raises(Duplicate):
            images.create(conn, IMAGE, {"name": "again"})
    assert (made["status"], made["visibility"], made["disk_format"]) == ("active", "public", "raw")
    assert (made["min_disk"], made["min_ram"], made["properties"]) == (0, 0, {})
    assert made["size"] == 16 * 2**30
    with api_db.read() as conn:
        assert images.get(conn, IMAGE) == made
        assert images.get(conn, "2" * 36) is None


def test_images_are_listed_as_a_project_may_see_them(api_db: Database) -> None:
    with api_db.write() as conn:
        images.create(conn, "1" * 36, {"name": "a-public"})
        images.create(conn, "2" * 36, {"name": "b-mine", "visibility": "private", "owner": "me"})
        images.create(conn, "3" * 36, {"name": "c-theirs", "visibility": "private", "owner": "x"})
        images.create(conn, "4" * 36, {"name": "d-community", "visibility": "community"})
    with api_db.read() as conn:
        every = [i["name"] for i in images.list_images(conn)]
        mine = [i["name"] for i in images.list_images(conn, visible_to="me")]
    assert every == ["a-public", "b-mine", "c-theirs", "d-community"]
    assert mine == ["a-public", "b-mine", "d-community"]


def test_an_image_is_updated_and_deleted(api_db: Database) -> None:
    properties = {"hw_architecture": "x86_64", "trait:HW_CPU_X86_AVX2": "required"}
    with api_db.write() as conn:
        images.create(conn, IMAGE, {"name": "cirros", "properties": {"a": "b"}})
        assert images.update(conn, IMAGE, {"properties": properties, "min_ram": 256})
        assert images.update(conn, "2" * 36, {"name": "x"}) is False
        with pytest.raises(ValueError):
            images.update(conn, IMAGE, {"id": "other"})
    with api_db.read() as conn:
        image = images.get(conn, IMAGE)
    assert image is not None
    assert (image["properties"], image["min_ram"], image["name"]) == (properties, 256, "cirros")
    assert image["updated_at"] is not None
    with api_db.write() as conn:
        assert images.delete(conn, IMAGE) is True
        assert images.delete(conn, IMAGE) is False
