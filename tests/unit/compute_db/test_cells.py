"""Cell, host and instance mappings in the API database."""

from __future__ import annotations

import uuid

import pytest

from berth.common.db import Database
from berth.compute.db import cells
from berth.compute.db.errors import Duplicate, InUse
from tests.unit.compute_db.racing import race


def _cell(db: Database, name: str = "cell1") -> int:
    with db.write() as conn:
        cell = cells.create_cell(conn, str(uuid.uuid4()), name, f"sqlite:///{name}", "memory://")
    return int(cell["id"])


def test_cells_are_created_listed_updated_and_deleted(api_db: Database) -> None:
    with api_db.write() as conn:
        cell0 = cells.create_cell(conn, cells.CELL0_UUID, cells.CELL0_NAME, "sqlite://", "none:///")
        cell1 = cells.create_cell(conn, "c1" * 18, "cell1", "sqlite:///c1", "memory://")
    assert cell0["disabled"] is False
    assert cell0["created_at"] is not None
    with api_db.write() as conn:
        assert cells.update_cell(conn, cell1["uuid"], {"disabled": True, "name": "one"})
        assert not cells.update_cell(conn, "missing", {"disabled": True})
    with api_db.read() as conn:
        assert [c["name"] for c in cells.list_cells(conn)] == ["cell0", "one"]
        assert [c["name"] for c in cells.list_cells(conn, include_cell0=False)] == ["one"]
        one = cells.get_cell_by_name(conn, "one")
        assert one is not None and one["disabled"] is True and one["updated_at"] is not None
        assert cells.get_cell_by_id(conn, cell0["id"]) == cells.get_cell(conn, cells.CELL0_UUID)
    with api_db.write() as conn:
        assert cells.delete_cell(conn, cell1["uuid"]) is True
        assert cells.delete_cell(conn, cell1["uuid"]) is False


def test_a_cell_name_or_uuid_is_taken_once(api_db: Database) -> None:
    with api_db.write() as conn:
        first = cells.create_cell(conn, "a" * 36, "cell1", "sqlite://", "memory://")
        with pytest.raises(Duplicate) as name_taken:
            cells.create_cell(conn, "b" * 36, "cell1", "sqlite://", "memory://")
        with pytest.raises(Duplicate) as uuid_taken:
            cells.create_cell(conn, "a" * 36, "cell2", "sqlite://", "memory://")
        cells.create_cell(conn, "c" * 36, "cell3", "sqlite://", "memory://")
        with pytest.raises(Duplicate):
            cells.update_cell(conn, "c" * 36, {"name": "cell1"})
        # The transaction survives each refusal.
        assert cells.get_cell(conn, first["uuid"]) is not None
    assert name_taken.value.what == "cell name"
    assert uuid_taken.value.what == "cell uuid"


def test_many_hosts_are_mapped_at_once_and_none_moves(api_db: Database) -> None:
    cell1, cell2 = _cell(api_db, "cell1"), _cell(api_db, "cell2")
    with api_db.write() as conn:
        cells.map_host(conn, "host1", cell1)
        cells.map_hosts(conn, {"host1": cell2, "host2": cell2, "host3": cell1})
        cells.map_hosts(conn, {"host2": cell1})
    with api_db.read() as conn:
        assert cells.host_cells(conn) == {"host1": cell1, "host2": cell2, "host3": cell1}


def test_hosts_mapped_meanwhile_are_left_where_they_are(
    api_db: Database, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One of the hosts was mapped after the mappings were read: each is then mapped in turn."""
    cell1, cell2 = _cell(api_db, "cell1"), _cell(api_db, "cell2")
    with api_db.write() as conn:
        cells.map_host(conn, "host2", cell1)
        with monkeypatch.context() as patched:
            patched.setattr(cells, "host_cells", lambda conn: {})
            cells.map_hosts(conn, {"host1": cell2, "host2": cell2})
    with api_db.read() as conn:
        assert cells.host_cells(conn) == {"host1": cell2, "host2": cell1}


def test_a_cell_with_hosts_or_instances_is_not_deleted(api_db: Database) -> None:
    cell_id = _cell(api_db)
    with api_db.write() as conn:
        cell = cells.get_cell_by_id(conn, cell_id)
        assert cell is not None
        cells.map_host(conn, "host1", cell_id)
        with pytest.raises(InUse):
            cells.delete_cell(conn, cell["uuid"])
        cells.unmap_host(conn, "host1")
        cells.create_instance_mapping(conn, "i" * 36, "p", "u")
        cells.set_instance_cell(conn, "i" * 36, cell_id)
        with pytest.raises(InUse):
            cells.delete_cell(conn, cell["uuid"])
        cells.delete_instance_mapping(conn, "i" * 36)
        assert cells.delete_cell(conn, cell["uuid"]) is True


def test_mapping_a_host_is_idempotent_and_never_moves_it(api_db: Database) -> None:
    cell1, cell2 = _cell(api_db, "cell1"), _cell(api_db, "cell2")
    with api_db.write() as conn:
        first = cells.map_host(conn, "host1", cell1)
        again = cells.map_host(conn, "host1", cell1)
        elsewhere = cells.map_host(conn, "host1", cell2)
        cells.map_host(conn, "host2", cell1)
    assert first == cells.HostMapping("host1", cell1, created=True)
    assert again == cells.HostMapping("host1", cell1, created=False)
    assert elsewhere == cells.HostMapping("host1", cell1, created=False)
    with api_db.read() as conn:
        assert cells.cell_of_host(conn, "host1") == cell1
        assert cells.cell_of_host(conn, "nowhere") is None
        assert cells.hosts_of_cell(conn, cell1) == ["host1", "host2"]
        assert cells.hosts_of_cell(conn, cell2) == []
        assert cells.host_cells(conn) == {"host1": cell1, "host2": cell1}


def test_concurrent_discovery_maps_a_host_once(api_db: Database) -> None:
    cell_id = _cell(api_db)

    def discover(_: int) -> cells.HostMapping:
        return api_db.write_with_retry(lambda conn: cells.map_host(conn, "host1", cell_id))

    results = race(6, discover)
    assert sum(result.created for result in results) == 1
    assert {result.cell_id for result in results} == {cell_id}


def test_an_instance_is_mapped_without_a_cell_then_to_its_cell(api_db: Database) -> None:
    cell_id = _cell(api_db)
    with api_db.write() as conn:
        cells.create_instance_mapping(conn, "a" * 36, "proj", "user")
        with pytest.raises(Duplicate):
            cells.create_instance_mapping(conn, "a" * 36, "proj", "user")
        waiting = cells.get_instance_mapping(conn, "a" * 36)
        assert waiting is not None
        assert waiting["cell_id"] is None and waiting["cell_uuid"] is None
        assert cells.set_instance_cell(conn, "a" * 36, cell_id) is True
        assert cells.set_instance_cell(conn, "missing", cell_id) is False
    with api_db.read() as conn:
        mapped = cells.get_instance_mapping(conn, "a" * 36)
        assert mapped is not None
        assert (mapped["cell_id"], mapped["cell_name"]) == (cell_id, "cell1")
        assert mapped["project_id"] == "proj" and mapped["queued_for_delete"] is False


def test_instance_mappings_are_listed_by_project_and_skip_those_being_deleted(
    api_db: Database,
) -> None:
    cell_id = _cell(api_db)
    with api_db.write() as conn:
        for n, project in enumerate(["p1", "p1", "p2", "p1"]):
            cells.create_instance_mapping(conn, f"{n}" * 36, project, "user")
        cells.set_instance_cell(conn, "0" * 36, cell_id)
        assert cells.queue_instance_for_delete(conn, "1" * 36) is True
        assert cells.queue_instance_for_delete(conn, "1" * 36) is False
    with api_db.read() as conn:
        listed = cells.list_instance_mappings(conn, project_id="p1")
        assert [m["instance_uuid"] for m in listed] == ["0" * 36, "3" * 36]
        every = cells.list_instance_mappings(conn, include_queued_for_delete=True)
        assert len(every) == 4
        in_cell = cells.list_instance_mappings(conn, cell_id=cell_id)
        assert [m["instance_uuid"] for m in in_cell] == ["0" * 36]
        # What a listing of servers reads: those being deleted too, plain rows.
        assert cells.list_instance_cells(conn, project_id="p1") == [
            (m["instance_uuid"], m["id"], m["cell_id"])
            for m in cells.list_instance_mappings(
                conn, project_id="p1", include_queued_for_delete=True
            )
        ]
        assert [mapped[0] for mapped, _, _ in cells.list_instance_cells(conn)] == [
            "0",
            "1",
            "2",
            "3",
        ]
        assert cells.list_instance_cells(conn, project_id="p1")[0][2] == cell_id
    with api_db.write() as conn:
        assert cells.delete_instance_mapping(conn, "0" * 36) is True
        assert cells.delete_instance_mapping(conn, "0" * 36) is False


@pytest.mark.parametrize("servers", [3, 40])  # looked up one by one, and past _LOOKUPS
def test_a_listing_finds_the_cells_of_some_servers_and_which_cells_to_ask(
    api_db: Database, servers: int
) -> None:
    one, two = _cell(api_db, "one"), _cell(api_db, "two")
    mine = [str(uuid.uuid4()) for _ in range(servers)]
    theirs = str(uuid.uuid4())
    with api_db.write() as conn:
        for n, server in enumerate(mine):
            cells.create_instance_mapping(conn, server, "p1", "user")
            if n % 3:
                cells.set_instance_cell(conn, server, one if n % 3 == 1 else two)
        cells.create_instance_mapping(conn, theirs, "p2", "user")
        cells.set_instance_cell(conn, theirs, two)
    with api_db.read() as conn:
        every = {uuid: (mapping_id, cell_id) for uuid, mapping_id, cell_id in
                 cells.list_instance_cells(conn)}  # fmt: skip
        asked = {*mine[::2], theirs, "missing"}
        assert cells.instance_cells_of(conn, asked, None) == {
            server: every[server] for server in asked - {"missing"}
        }
        # A project's lookup finds its own servers only.
        assert cells.instance_cells_of(conn, asked, "p1") == {
            server: every[server] for server in mine[::2]
        }
        assert cells.cells_holding(conn, "p1") == {None, one, two}
        assert cells.cells_holding(conn, "p2") == {two}
        assert cells.cells_holding(conn, "p3") == set()
        assert cells.cells_holding(conn, None) == {None, one, two}
