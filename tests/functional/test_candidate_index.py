"""Each worker's candidate index follows every write made through any worker (read-your-writes),
by updates where it can and rebuilds where it must; the verify mode catches an unlogged write."""

from __future__ import annotations

import logging
import uuid
from collections.abc import Iterator

import httpx
import pytest
import sqlalchemy as sa

from berth.common import change_log
from berth.common.db import Database
from berth.placement.candidates.live import IndexMismatch
from berth.placement.service import PlacementService
from berth.placement.store import changes, schema
from tests.conftest import make_service, wsgi_client

HEADERS = {"x-auth-token": "admin", "openstack-api-version": "placement 1.39"}
QUERY = "/allocation_candidates?resources=VCPU:2"


Workers = tuple[PlacementService, httpx.Client, httpx.Client]


@pytest.fixture
def workers(placement_db: Database) -> Iterator[Workers]:
    """Two services over one database, as two API worker processes would be; the second one's
    index is what the tests watch."""
    writer, reader = make_service(placement_db), make_service(placement_db)
    with wsgi_client(writer) as w, wsgi_client(reader) as r:
        w.headers.update(HEADERS)
        r.headers.update(HEADERS)
        yield reader, w, r


def _provider(client: httpx.Client, name: str, vcpu: int = 8) -> str:
    rp = client.post("/resource_providers", json={"name": name}).json()
    inventory = {"inventories": {"VCPU": {"total": vcpu}}, "resource_provider_generation": 0}
    assert client.put(f"/resource_providers/{rp['uuid']}/inventories", json=inventory).is_success
    return str(rp["uuid"])


def _hosts(client: httpx.Client) -> set[str]:
    body = client.get(QUERY).json()
    return {rp for areq in body["allocation_requests"] for rp in areq["allocations"]}


def _all_vcpus(provider: str) -> dict[str, object]:
    """A new consumer's claim of the 8 VCPU a ``_provider`` has by default."""
    return {
        "allocations": {provider: {"resources": {"VCPU": 8}}},
        "project_id": "p",
        "user_id": "u",
        "consumer_generation": None,
        "consumer_type": "INSTANCE",
    }


def test_writes_on_one_worker_are_seen_by_the_next_query_on_another(workers: Workers) -> None:
    reader, writer, read = workers
    assert _hosts(read) == set()
    first = _provider(writer, "cn1")
    assert _hosts(read) == {first}
    second = _provider(writer, "cn2", vcpu=1)  # too small for VCPU:2
    assert _hosts(read) == {first}
    consumer = str(uuid.uuid4())
    assert writer.put(f"/allocations/{consumer}", json=_all_vcpus(first)).status_code == 204
    assert _hosts(read) == set()
    summary = read.get(f"/resource_providers?in_tree={first}").json()["resource_providers"]
    assert summary[0]["generation"] == 2
    assert writer.delete(f"/allocations/{consumer}").status_code == 204
    assert _hosts(read) == {first}
    assert writer.delete(f"/resource_providers/{second}").status_code == 204
    names = {p["name"] for p in read.get("/resource_providers").json()["resource_providers"]}
    assert names == {"cn1"}
    assert reader.index.rebuilds == 1 and reader.index.updates >= 5


def test_a_quiet_index_that_only_peeks_still_sees_the_next_write(workers: Workers) -> None:
    """After a query that found nothing new, the next one only reads the sequence's number
    before trusting the index: a write on another worker must still be in its answer."""
    reader, writer, read = workers
    first = _provider(writer, "cn1")
    for _ in range(3):  # the second and third find nothing new: the third only peeks
        assert _hosts(read) == {first}
    updates = reader.index.updates
    second = _provider(writer, "cn2")
    assert _hosts(read) == {first, second}
    assert reader.index.updates == updates + 1
    assert _hosts(read) == {first, second}
    assert writer.put(f"/allocations/{uuid.uuid4()}", json=_all_vcpus(second)).status_code == 204
    assert _hosts(read) == {first}


def test_a_provider_recreated_with_the_same_uuid_is_a_new_row(workers: Workers) -> None:
    _, writer, read = workers
    rp = _provider(writer, "cn1")
    assert _hosts(read) == {rp}
    assert writer.delete(f"/resource_providers/{rp}").status_code == 204
    writer.post("/resource_providers", json={"name": "again", "uuid": rp})
    assert _hosts(read) == set()
    assert [p["name"] for p in read.get("/resource_providers").json()["resource_providers"]] == [
        "again"
    ]


def test_new_names_are_taken_in_and_a_renamed_class_in_use_rebuilds(workers: Workers) -> None:
    reader, writer, read = workers
    rp = _provider(writer, "cn1")
    _hosts(read)
    assert writer.put("/traits/CUSTOM_NEW").status_code == 201
    assert read.get(QUERY + "&required=CUSTOM_NEW").json()["allocation_requests"] == []
    assert writer.put(
        f"/resource_providers/{rp}/traits",
        json={"traits": ["CUSTOM_NEW"], "resource_provider_generation": 1},
    ).is_success
    assert len(read.get(QUERY + "&required=CUSTOM_NEW").json()["allocation_requests"]) == 1
    assert reader.index.rebuilds == 1
    old = {"OpenStack-API-Version": "placement 1.2"}
    assert writer.post("/resource_classes", json={"name": "CUSTOM_A"}, headers=old).is_success
    inventory = {"inventories": {"CUSTOM_A": {"total": 4}}, "resource_provider_generation": 2}
    assert writer.put(f"/resource_providers/{rp}/inventories", json=inventory).is_success
    assert (
        len(read.get("/allocation_candidates?resources=CUSTOM_A:1").json()["allocation_requests"])
        == 1
    )
    assert reader.index.rebuilds == 1
    renamed = writer.put("/resource_classes/CUSTOM_A", json={"name": "CUSTOM_B"}, headers=old)
    assert renamed.is_success
    assert (
        len(read.get("/allocation_candidates?resources=CUSTOM_B:1").json()["allocation_requests"])
        == 1
    )
    assert reader.index.rebuilds == 2


def test_the_change_log_is_ordered_and_a_reader_far_behind_reloads(placement_db: Database) -> None:
    with placement_db.read() as conn:
        start = changes.current(conn)
    for _ in range(3):
        with placement_db.write() as conn:
            changes.touch(conn, [7])
    with placement_db.write() as conn:
        changes.touch_names(conn)
    with placement_db.read() as conn:
        now = changes.current(conn)
        assert now == start + 4
        assert changes.since(conn, start) == changes.Changes(now, frozenset({7}), names=True)
        assert changes.since(conn, start + 3) == changes.Changes(now, names=True)
        assert changes.since(conn, now) == changes.Changes(now)
        assert changes.since(conn, now - change_log.KEEP).everything


def test_a_claim_logs_usage_apart_from_whole_provider_changes(placement_db: Database) -> None:
    with placement_db.read() as conn:
        start = changes.current(conn)
    with placement_db.write() as conn:
        changes.touch_usage(conn, [7, 8])
    with placement_db.write() as conn:
        changes.touch_usage(conn, [9])
        changes.touch(conn, [9])
    with placement_db.read() as conn:
        found = changes.since(conn, start)
    assert (found.providers, found.usage) == ({9}, {7, 8})


def test_a_write_that_touches_nothing_publishes_nothing(placement_db: Database) -> None:
    with placement_db.read() as conn:
        start = changes.current(conn)
    with placement_db.write():
        pass
    with placement_db.read() as conn:
        assert changes.current(conn) == start


def test_touching_outside_a_placement_write_is_refused(placement_db: Database) -> None:
    with placement_db.engine.connect() as conn, pytest.raises(RuntimeError):
        changes.touch(conn, [1])


def test_verify_catches_a_write_that_did_not_log_its_change(
    workers: Workers, placement_db: Database, caplog: pytest.LogCaptureFixture
) -> None:
    _, writer, read = workers
    rp = _provider(writer, "cn1")
    _hosts(read)
    with placement_db.write() as conn:
        # Shrink the inventory behind the store's back, logging some other provider instead.
        conn.execute(sa.update(schema.inventories).values(total=1))
        changes.touch(conn, [-1])
    with caplog.at_level(logging.DEBUG):
        assert read.get(QUERY).status_code == 500
    assert any(
        isinstance(r.exc_info[1], IndexMismatch) and rp in str(r.exc_info[1])
        for r in caplog.records
        if r.exc_info
    )


def test_max_allocation_candidates_caps_every_answer(placement_db: Database) -> None:
    with wsgi_client(make_service(placement_db, max_allocation_candidates=2)) as client:
        client.headers.update(HEADERS)
        for name in ("cn1", "cn2", "cn3"):
            _provider(client, name)
        for query in (QUERY, QUERY + "&limit=5"):
            assert len(client.get(query).json()["allocation_requests"]) == 2
        assert len(client.get(QUERY + "&limit=1").json()["allocation_requests"]) == 1


@pytest.mark.parametrize("version", ["1.0", "1.14", "1.39"])
def test_a_listed_provider_is_shown_as_by_itself(placement_db: Database, version: str) -> None:
    """The list is written from a template; it must say exactly what GET of one provider says."""
    with wsgi_client(make_service(placement_db)) as client:
        client.headers.update(HEADERS)
        root = client.post("/resource_providers", json={"name": 'odd "name" \\ é ✓'}).json()
        client.post(
            "/resource_providers", json={"name": "child", "parent_provider_uuid": root["uuid"]}
        )
        _provider(client, "with inventory")
        client.headers["openstack-api-version"] = f"placement {version}"
        listed = client.get("/resource_providers").json()["resource_providers"]
        assert len(listed) == 3
        for provider in listed:
            assert provider == client.get(f"/resource_providers/{provider['uuid']}").json()


def test_a_deleted_provider_whose_id_is_reused_is_gone(workers: Workers) -> None:
    """SQLite gives the id of a deleted last row to the next one; the index must not keep the
    deleted provider alive under the new one's id, and it needs no rebuild for that."""
    reader, writer, read = workers
    first = _provider(writer, "cn1")
    last = _provider(writer, "cn2")
    assert _hosts(read) == {first, last}
    assert writer.delete(f"/resource_providers/{last}").status_code == 204
    again = _provider(writer, "cn3")
    assert _hosts(read) == {first, again}
    assert reader.index.rebuilds == 1
