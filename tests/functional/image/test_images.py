"""The Image v2 API: version documents, create (properties included), lists with filters and
pages, JSON-patch updates, who sees and changes what, and image data: upload, download, the
status lifecycle, the size cap, deactivation."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from a2wsgi import ASGIMiddleware

from berth.common.body import MAX_BODY_BYTES
from berth.common.db import Database
from berth.compute.db import api_schema, migrate
from berth.compute.db import images as store
from berth.image.api import PATCH_MEDIA_TYPE
from berth.image.app import build_app
from berth.image.data import FileStore
from tests import dbs
from tests.functional.asgi_calls import (
    call,
    check_failure_is_one_error_line,
    check_hang_up_is_one_debug_line,
)

PATCH = {"content-type": "application/openstack-images-v2.1-json-patch"}
IMAGE = "70a599e0-31e7-49b7-b260-868f441e862b"
SIZE_CAP = 1024 * 1024


@pytest.fixture(scope="session", params=dbs.backends())
def backend(request: pytest.FixtureRequest) -> str:
    return str(request.param)


@pytest.fixture
def api_db(backend: str, request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[Database]:
    worker = str(getattr(request.config, "workerinput", {}).get("workerid", "main"))
    db = dbs.fresh_migrated_database(
        backend, worker, tmp_path, "_capi", migrate.sync_api, api_schema.metadata
    )
    yield db
    db.dispose()


@pytest.fixture
def data_store(tmp_path: Path) -> FileStore:
    return FileStore(tmp_path / "images")


def _client(
    db: Database, token: str | None, data: FileStore, size_cap: int = SIZE_CAP
) -> httpx.Client:
    app = ASGIMiddleware(build_app(db, data, size_cap=size_cap))  # type: ignore[arg-type]
    client = httpx.Client(transport=httpx.WSGITransport(app=app), base_url="http://image")
    if token is not None:
        client.headers["x-auth-token"] = token
    return client


@pytest.fixture
def admin(api_db: Database, data_store: FileStore) -> Iterator[httpx.Client]:
    with _client(api_db, "admin", data_store) as client:
        yield client


@pytest.fixture
def alice(api_db: Database, data_store: FileStore) -> Iterator[httpx.Client]:
    with _client(api_db, "alice", data_store) as client:
        yield client


@pytest.fixture
def bob(api_db: Database, data_store: FileStore) -> Iterator[httpx.Client]:
    with _client(api_db, "bob", data_store) as client:
        yield client


def _create(client: httpx.Client, **image: Any) -> Any:
    answer = client.post("/v2/images", json=image)
    assert answer.status_code == 201, answer.text
    return answer.json()


def _names(answer: httpx.Response) -> list[str]:
    assert answer.status_code == 200, answer.text
    return [image["name"] for image in answer.json()["images"]]


def test_version_documents_need_no_token(api_db: Database, data_store: FileStore) -> None:
    with _client(api_db, None, data_store) as anonymous:
        versions = anonymous.get("/versions")
        assert versions.status_code == 200
        current = [v for v in versions.json()["versions"] if v["status"] == "CURRENT"]
        assert len(current) == 1 and current[0]["id"].startswith("v2.")
        assert current[0]["links"] == [{"rel": "self", "href": "http://image/v2/"}]
        root = anonymous.get("/")
        assert root.status_code == 300 and root.json() == versions.json()
        refused = anonymous.get("/v2/images")
        assert refused.status_code == 401
        assert refused.json()["code"] == "401 Unauthorized"


def test_create_keeps_properties_and_is_queued(alice: httpx.Client, api_db: Database) -> None:
    image = _create(
        alice,
        id=IMAGE,
        name="cirros",
        min_ram=256,
        min_disk=1,
        disk_format="qcow2",
        container_format="bare",
        hw_architecture="x86_64",
        **{"trait:CUSTOM_FAST": "required"},
    )
    assert image["id"] == IMAGE
    assert (image["status"], image["visibility"], image["owner"]) == ("queued", "shared", "alice")
    assert (image["min_ram"], image["min_disk"], image["disk_format"]) == (256, 1, "qcow2")
    assert image["hw_architecture"] == "x86_64" and image["trait:CUSTOM_FAST"] == "required"
    assert image["self"] == f"/v2/images/{IMAGE}" and image["file"] == f"/v2/images/{IMAGE}/file"
    assert image["tags"] == [] and image["protected"] is False
    assert alice.get(f"/v2/images/{IMAGE}").json() == image
    # The compute side reads the same row.
    with api_db.read() as conn:
        row = store.get(conn, IMAGE)
    assert row is not None and row["properties"]["trait:CUSTOM_FAST"] == "required"
    made = _create(alice)
    assert len(made["id"]) == 36 and made["name"] is None
    assert made["disk_format"] == "raw" and made["container_format"] == "bare"


@pytest.mark.parametrize(
    ("image", "status"),
    [
        ({"id": "not-a-uuid"}, 400),
        ({"min_ram": "512"}, 400),
        ({"min_disk": -1}, 400),
        ({"visibility": "everyone"}, 400),
        ({"disk_format": "floppy"}, 400),
        ({"hw_architecture": 64}, 400),
        ({"tags": ["x"]}, 400),
        ({"protected": True}, 400),
        ({"status": "queued"}, 403),
        ({"size": 10}, 403),
        ({"deleted": False}, 403),
        ({"visibility": "public"}, 403),
        ({"owner": "bob"}, 403),
    ],
)
def test_bad_images_are_refused(alice: httpx.Client, image: dict[str, Any], status: int) -> None:
    answer = alice.post("/v2/images", json=image)
    assert answer.status_code == status, answer.text
    body = answer.json()
    assert set(body) == {"message", "code", "title"} and body["code"].startswith(str(status))


def test_duplicate_ids_conflict(alice: httpx.Client) -> None:
    _create(alice, id=IMAGE)
    answer = alice.post("/v2/images", json={"id": IMAGE})
    assert answer.status_code == 409 and answer.json()["title"] == "Conflict"
    assert alice.post("/v2/images", json=[]).status_code == 400


def test_who_sees_what(admin: httpx.Client, alice: httpx.Client, bob: httpx.Client) -> None:
    public = _create(admin, name="public", visibility="public")
    private = _create(alice, name="alice-private", visibility="private")
    _create(alice, name="alice-shared")
    _create(bob, name="bob-community", visibility="community")
    assert sorted(_names(alice.get("/v2/images"))) == ["alice-private", "alice-shared", "public"]
    assert sorted(_names(bob.get("/v2/images"))) == ["bob-community", "public"]
    community = alice.get("/v2/images", params={"visibility": "community"})
    assert _names(community) == ["bob-community"]
    assert len(_names(alice.get("/v2/images", params={"visibility": "all"}))) == 4
    assert len(_names(admin.get("/v2/images"))) == 4
    assert alice.get("/v2/images", params={"visibility": "secret"}).status_code == 400
    assert bob.get(f"/v2/images/{private['id']}").status_code == 404
    assert admin.get(f"/v2/images/{private['id']}").status_code == 200
    assert bob.get(f"/v2/images/{public['id']}").status_code == 200
    missing = bob.get(f"/v2/images/{IMAGE}")
    assert missing.status_code == 404
    assert missing.json() == {
        "message": f"No image found with ID {IMAGE}",
        "code": "404 Not Found",
        "title": "Not Found",
    }


def test_filters_sorting_and_pages(alice: httpx.Client) -> None:
    for name, arch in (("a", "x86_64"), ("b", "aarch64"), ("c", "x86_64")):
        _create(alice, name=name, hw_architecture=arch)
    assert _names(alice.get("/v2/images", params={"name": "b"})) == ["b"]
    either = {"name": "in:a,c", "sort_key": "name"}
    assert _names(alice.get("/v2/images", params=either)) == ["c", "a"]
    assert _names(alice.get("/v2/images", params={"status": "active"})) == []
    by_arch = alice.get("/v2/images", params={"hw_architecture": "x86_64", "sort_key": "name"})
    assert _names(by_arch) == ["c", "a"]
    ascending = {"sort_key": "name", "sort_dir": "asc"}
    first = alice.get("/v2/images", params={**ascending, "limit": 2})
    assert _names(first) == ["a", "b"]
    body = first.json()
    assert body["first"] == "/v2/images?sort_key=name&sort_dir=asc&limit=2"
    assert body["schema"] == "/v2/schemas/images"
    assert body["next"].startswith("/v2/images?") and "marker=" in body["next"]
    rest = alice.get(body["next"])
    assert _names(rest) == ["c"] and "next" not in rest.json()
    for bad in ({"limit": "many"}, {"limit": -1}, {"marker": IMAGE}, {"sort_key": "colour"}):
        assert alice.get("/v2/images", params=bad).status_code == 400, bad


def test_patch(alice: httpx.Client) -> None:
    image = _create(alice, id=IMAGE, name="cirros", hw_architecture="x86_64")
    path = f"/v2/images/{IMAGE}"
    operations = [
        {"op": "replace", "path": "/name", "value": "cirros-0.6"},
        {"op": "replace", "path": "/min_ram", "value": 512},
        {"op": "add", "path": "/trait:CUSTOM_FAST", "value": "required"},
        {"op": "add", "path": "/img~1type", "value": "slashed"},
        {"op": "remove", "path": "/hw_architecture"},
        {"op": "replace", "path": "/visibility", "value": "community"},
    ]
    patched = alice.patch(path, json=operations, headers=PATCH)
    assert patched.status_code == 200, patched.text
    changed = patched.json()
    assert (changed["name"], changed["min_ram"], changed["visibility"]) == (
        "cirros-0.6",
        512,
        "community",
    )
    assert changed["trait:CUSTOM_FAST"] == "required" and changed["img/type"] == "slashed"
    assert "hw_architecture" not in changed
    assert changed["created_at"] == image["created_at"]
    assert alice.get(path).json() == changed


@pytest.mark.parametrize(
    ("operations", "status"),
    [
        ([{"op": "replace", "path": "/hw_disk_bus", "value": "virtio"}], 409),
        ([{"op": "remove", "path": "/hw_disk_bus"}], 409),
        ([{"op": "replace", "path": "/status", "value": "killed"}], 403),
        ([{"op": "remove", "path": "/name"}], 403),
        ([{"op": "replace", "path": "/visibility", "value": "public"}], 403),
        ([{"op": "add", "path": "/a/b", "value": "x"}], 400),
        ([{"op": "move", "path": "/name", "value": "x"}], 400),
        ([{"op": "add", "path": "/name"}], 400),
        ([{"op": "add", "path": "/min_disk", "value": "1"}], 400),
        ({"op": "add", "path": "/name", "value": "x"}, 400),
    ],
)
def test_bad_patches_are_refused(alice: httpx.Client, operations: Any, status: int) -> None:
    _create(alice, id=IMAGE, name="cirros")
    answer = alice.patch(f"/v2/images/{IMAGE}", json=operations, headers=PATCH)
    assert answer.status_code == status, answer.text
    # Nothing of a refused patch is kept.
    assert alice.get(f"/v2/images/{IMAGE}").json()["name"] == "cirros"


def test_patch_needs_its_media_type(alice: httpx.Client) -> None:
    _create(alice, id=IMAGE)
    operations = [{"op": "replace", "path": "/name", "value": "x"}]
    answer = alice.patch(f"/v2/images/{IMAGE}", json=operations)
    assert answer.status_code == 415
    assert "openstack-images-v2.1-json-patch" in answer.json()["message"]


def test_only_the_owner_changes_and_deletes(
    admin: httpx.Client, alice: httpx.Client, bob: httpx.Client
) -> None:
    public = _create(admin, name="public", visibility="public")
    operations = [{"op": "replace", "path": "/name", "value": "mine"}]
    refused = bob.patch(f"/v2/images/{public['id']}", json=operations, headers=PATCH)
    assert refused.status_code == 403
    assert bob.delete(f"/v2/images/{public['id']}").status_code == 403
    own = _create(alice, name="own")
    assert bob.delete(f"/v2/images/{own['id']}").status_code == 404
    assert admin.delete(f"/v2/images/{own['id']}").status_code == 204
    assert alice.get(f"/v2/images/{own['id']}").status_code == 404
    assert alice.delete(f"/v2/images/{own['id']}").status_code == 404


OCTETS = {"content-type": "application/octet-stream"}
OCTET_STREAM = b"application/octet-stream"


def _upload(client: httpx.Client, image_id: str, data: bytes) -> httpx.Response:
    return client.put(f"/v2/images/{image_id}/file", content=data, headers=OCTETS)


def test_data_goes_up_in_chunks_and_comes_down_whole_or_in_ranges(
    alice: httpx.Client, bob: httpx.Client, data_store: FileStore
) -> None:
    _create(alice, id=IMAGE, disk_format="raw", container_format="bare")
    assert alice.get(f"/v2/images/{IMAGE}/file").status_code == 204  # queued: no data yet
    data = bytes(range(256)) * 1200
    assert bob.put(f"/v2/images/{IMAGE}/file", content=data, headers=OCTETS).status_code == 404
    plain = alice.put(
        f"/v2/images/{IMAGE}/file", content=data, headers={"content-type": "text/plain"}
    )
    assert plain.status_code == 415
    assert _upload(alice, IMAGE, data).status_code == 204
    image = alice.get(f"/v2/images/{IMAGE}").json()
    assert (image["status"], image["size"]) == ("active", len(data))
    assert image["checksum"] == hashlib.md5(data).hexdigest()
    assert image["os_hash_algo"] == "sha512"
    assert image["os_hash_value"] == hashlib.sha512(data).hexdigest()
    assert (data_store.root / IMAGE).read_bytes() == data
    whole = alice.get(f"/v2/images/{IMAGE}/file")
    assert whole.status_code == 200 and whole.content == data
    assert whole.headers["content-length"] == str(len(data))
    assert whole.headers["content-md5"] == image["checksum"]
    assert whole.headers["content-type"] == "application/octet-stream"
    part = alice.get(f"/v2/images/{IMAGE}/file", headers={"range": "bytes=10-19"})
    assert part.status_code == 206 and part.content == data[10:20]
    assert part.headers["content-range"] == f"bytes 10-19/{len(data)}"
    tail = alice.get(f"/v2/images/{IMAGE}/file", headers={"range": "bytes=-5"})
    assert tail.status_code == 206 and tail.content == data[-5:]
    for bad in (f"bytes={len(data)}-", "bytes=5-2", "pages=1-2", "bytes=-"):
        refused = alice.get(f"/v2/images/{IMAGE}/file", headers={"range": bad})
        assert refused.status_code == 416, bad
    # Data is uploaded once.
    again = _upload(alice, IMAGE, b"other")
    assert again.status_code == 409 and "queued" in again.json()["message"]
    # A client can filter on the digest, as on Glance.
    assert _names(alice.get("/v2/images", params={"checksum": image["checksum"]})) == [None]
    # The digests are the data's: no client sets them.
    change = [{"op": "replace", "path": "/checksum", "value": "0" * 32}]
    assert alice.patch(f"/v2/images/{IMAGE}", json=change, headers=PATCH).status_code == 403
    renamed = [{"op": "add", "path": "/name", "value": "kept"}]
    patched = alice.patch(f"/v2/images/{IMAGE}", json=renamed, headers=PATCH).json()
    assert patched["checksum"] == image["checksum"] and patched["status"] == "active"


def test_data_is_kept_as_it_arrives_and_a_hang_up_leaves_the_image_queued(
    api_db: Database, data_store: FileStore, alice: httpx.Client
) -> None:
    """Raw ASGI calls: the body comes in several messages (a client streaming a large image),
    and a client that goes away halfway leaves nothing behind."""
    app = build_app(api_db, data_store)
    _create(alice, id=IMAGE)
    path = f"/v2/images/{IMAGE}/file"
    gone = call(app, "PUT", path, [b"half"], hang_up=True, content_type=OCTET_STREAM)
    assert gone["status"] == 499
    assert alice.get(f"/v2/images/{IMAGE}").json()["status"] == "queued"
    assert list(data_store.root.iterdir()) == []
    parts = [b"a" * 70000, b"b" * 70000, b"c" * 10]
    done = call(app, "PUT", path, parts, hang_up=False, content_type=OCTET_STREAM)
    assert done["status"] == 204
    assert alice.get(f"/v2/images/{IMAGE}/file").content == b"".join(parts)


def test_data_past_the_size_cap_is_too_large_and_leaves_the_image_queued(
    api_db: Database, data_store: FileStore
) -> None:
    with _client(api_db, "alice", data_store, size_cap=1000) as alice:
        _create(alice, id=IMAGE)
        refused = _upload(alice, IMAGE, b"x" * 1200)
        assert refused.status_code == 413, refused.text
        assert refused.json()["code"] == "413 Request Entity Too Large"
        assert alice.get(f"/v2/images/{IMAGE}").json()["status"] == "queued"
        assert list(data_store.root.iterdir()) == []
        assert _upload(alice, IMAGE, b"x" * 1000).status_code == 204
        assert alice.get(f"/v2/images/{IMAGE}").json()["size"] == 1000


def test_deleting_an_image_deletes_its_data(alice: httpx.Client, data_store: FileStore) -> None:
    _create(alice, id=IMAGE)
    assert _upload(alice, IMAGE, b"disk").status_code == 204
    assert (data_store.root / IMAGE).exists()
    assert alice.delete(f"/v2/images/{IMAGE}").status_code == 204
    assert not (data_store.root / IMAGE).exists()
    assert alice.get(f"/v2/images/{IMAGE}/file").status_code == 404


def test_deactivated_images_keep_their_data_from_all_but_admins(
    alice: httpx.Client, admin: httpx.Client
) -> None:
    _create(alice, id=IMAGE)
    deactivate, reactivate = (
        f"/v2/images/{IMAGE}/actions/{a}" for a in ("deactivate", "reactivate")
    )
    assert alice.post(deactivate).status_code == 409  # queued: nothing to deactivate
    assert _upload(alice, IMAGE, b"disk").status_code == 204
    assert alice.post(deactivate).status_code == 204
    assert alice.get(f"/v2/images/{IMAGE}").json()["status"] == "deactivated"
    assert alice.get(f"/v2/images/{IMAGE}/file").status_code == 403
    assert admin.get(f"/v2/images/{IMAGE}/file").content == b"disk"
    assert alice.post(reactivate).status_code == 204
    assert alice.get(f"/v2/images/{IMAGE}/file").content == b"disk"
    assert alice.get(f"/v2/images/{IMAGE}/tasks").json() == {"tasks": []}


def test_an_image_registered_without_data_downloads_nothing(
    api_db: Database, alice: httpx.Client
) -> None:
    # What `berth up` seeds: an active image made by metadata alone.
    with api_db.write() as conn:
        store.create(conn, IMAGE, {"name": "seed", "status": "active", "owner": "alice"})
    assert alice.get(f"/v2/images/{IMAGE}/file").status_code == 204


def test_unknown_paths_and_methods(alice: httpx.Client) -> None:
    assert alice.get("/v2/nothing").status_code == 404
    wrong = alice.post(f"/v2/images/{IMAGE}")
    assert wrong.status_code == 405 and "GET" in wrong.headers["allow"]


# A value a thousand levels deep (an image property here) is a 500 without the depth limit.
DEEP = b'{"name": "deep", "prop": ' + b'{"a": ' * 1000 + b"1" + b"}" * 1001


def test_a_body_nested_a_thousand_deep_is_a_bad_request(alice: httpx.Client) -> None:
    answer = alice.post("/v2/images", content=DEEP, headers={"content-type": "application/json"})
    assert answer.status_code == 400, answer.text
    assert "nested deeper" in answer.json()["message"]
    patch = b'[{"op": "add", "path": "/prop", "value": ' + b"[" * 1000 + b"]" * 1000 + b"}]"
    image = _create(alice, name="shallow")
    answer = alice.patch(f"/v2/images/{image['id']}", content=patch, headers=PATCH)
    assert answer.status_code == 400, answer.text


def test_a_body_past_the_size_limit_is_too_large(alice: httpx.Client) -> None:
    answer = alice.post("/v2/images", json={"name": "n" * MAX_BODY_BYTES})
    assert answer.status_code == 413, answer.text
    assert answer.json()["code"] == "413 Request Entity Too Large"


@pytest.mark.parametrize("name", ["min_ram", "min_disk"])
@pytest.mark.parametrize("value", [2**31, 2**63, 2**64])
def test_minimums_past_the_column_range_are_bad_requests(
    alice: httpx.Client, name: str, value: int
) -> None:
    assert alice.post("/v2/images", json={"name": "big", name: value}).status_code == 400
    image = _create(alice, name="small")
    change = [{"op": "replace", "path": f"/{name}", "value": value}]
    assert alice.patch(f"/v2/images/{image['id']}", json=change, headers=PATCH).status_code == 400
    assert alice.get(f"/v2/images?{name}={value}&limit={value}").status_code == 200


def test_a_client_that_hangs_up_mid_request_is_one_debug_line(
    api_db: Database, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    check_hang_up_is_one_debug_line(
        build_app(api_db, FileStore(tmp_path)), "POST", "/v2/images", caplog
    )


def test_a_server_error_is_one_error_line_with_the_request_id(
    api_db: Database, caplog: pytest.LogCaptureFixture, tmp_path: Path
) -> None:
    app = build_app(api_db, FileStore(tmp_path))
    check_failure_is_one_error_line(app, app.threads, "POST", "/v2/images", caplog)


@pytest.mark.parametrize(
    ("image", "field"),
    [
        ({"name": "n" * 256}, "name"),
        ({"min_ram": 2**31}, "min_ram"),
        ({"owner": "o" * 256}, "owner"),
        ({"hw_architecture": "x" * 65536}, "hw_architecture"),
        ({"p" * 256: "x"}, "body"),
    ],
)
def test_values_past_their_columns_are_refused_by_the_schema(
    alice: httpx.Client, image: dict[str, Any], field: str
) -> None:
    answer = alice.post("/v2/images", json=image)
    assert answer.status_code == 400, answer.text
    assert answer.json()["message"].startswith(f"Invalid value for {field}: ")


def test_a_malformed_patch_is_refused_before_the_image_is_looked_up(alice: httpx.Client) -> None:
    missing = "/v2/images/00000000-0000-4000-8000-00000000dead"
    patch = {"content-type": PATCH_MEDIA_TYPE}
    moved = alice.patch(missing, json=[{"op": "move", "path": "/name"}], headers=patch)
    assert moved.status_code == 400, moved.text
    assert moved.json()["message"].startswith("Invalid value for 0/op: ")
    # The media type is judged first, as Glance does.
    plain = alice.patch(
        missing, json=[{"op": "move"}], headers={"content-type": "application/json"}
    )
    assert plain.status_code == 415, plain.text
    fine = alice.patch(
        missing, json=[{"op": "replace", "path": "/name", "value": "x"}], headers=patch
    )
    assert fine.status_code == 404, fine.text
