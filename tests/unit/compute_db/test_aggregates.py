"""Host aggregates, their hosts, metadata and availability zones in the API database."""

from __future__ import annotations

import pytest

from berth.common.db import Database
from berth.compute.db import aggregates
from berth.compute.db.errors import Duplicate


def _aggregate(db: Database, name: str) -> aggregates.Aggregate:
    with db.write() as conn:
        return aggregates.create(conn, name[0] * 36, name)


def test_an_aggregate_is_created_renamed_and_deleted(api_db: Database) -> None:
    made = _aggregate(api_db, "rack1")
    _aggregate(api_db, "sriov")
    assert (made.name, made.hosts, made.metadata, made.availability_zone) == ("rack1", (), {}, None)
    with api_db.write() as conn:
        with pytest.raises(Duplicate) as name_taken:
            aggregates.create(conn, "x" * 36, "rack1")
        with pytest.raises(Duplicate):
            aggregates.rename(conn, made.id, "sriov")
        assert aggregates.rename(conn, made.id, "rack-1") is True
        assert aggregates.rename(conn, 9999, "nothing") is False
    assert name_taken.value.what == "aggregate name"
    with api_db.read() as conn:
        renamed = aggregates.get(conn, made.id)
        assert renamed is not None and renamed.name == "rack-1"
        assert aggregates.get_by_uuid(conn, made.uuid) == renamed
        assert [a.name for a in aggregates.list_aggregates(conn)] == ["rack-1", "sriov"]
    with api_db.write() as conn:
        aggregates.add_host(conn, made.id, "host1")
        aggregates.set_metadata(conn, made.id, {"a": "b"})
        assert aggregates.delete(conn, made.id) is True
        assert aggregates.delete(conn, made.id) is False
        assert aggregates.aggregates_of_host(conn, "host1") == []


def test_hosts_join_an_aggregate_once(api_db: Database) -> None:
    rack = _aggregate(api_db, "rack1")
    with api_db.write() as conn:
        assert aggregates.add_host(conn, rack.id, "host2") is True
        assert aggregates.add_host(conn, rack.id, "host1") is True
        assert aggregates.add_host(conn, rack.id, "host1") is False
        assert aggregates.add_host(conn, 9999, "host1") is False
    with api_db.read() as conn:
        assert aggregates.hosts_of(conn, rack.id) == ["host1", "host2"]
        loaded = aggregates.get(conn, rack.id)
        assert loaded is not None and loaded.hosts == ("host1", "host2")
        assert loaded.updated_at is not None
    with api_db.write() as conn:
        assert aggregates.remove_host(conn, rack.id, "host1") is True
        assert aggregates.remove_host(conn, rack.id, "host1") is False
        assert aggregates.hosts_of(conn, rack.id) == ["host2"]


def test_metadata_is_set_replaced_and_unset(api_db: Database) -> None:
    rack = _aggregate(api_db, "rack1")
    with api_db.write() as conn:
        assert aggregates.set_metadata(conn, rack.id, {"ssd": "true", "tier": "gold"})
        assert aggregates.set_metadata(conn, rack.id, {"tier": "silver"})
        assert aggregates.set_metadata(conn, 9999, {"a": "b"}) is False
        assert aggregates.unset_metadata(conn, rack.id, ["ssd", "missing"]) == 1
    with api_db.read() as conn:
        loaded = aggregates.get(conn, rack.id)
    assert loaded is not None and loaded.metadata == {"tier": "silver"}


def test_a_host_is_in_the_zone_its_aggregates_say(api_db: Database) -> None:
    zone = _aggregate(api_db, "az1")
    rack = _aggregate(api_db, "rack1")
    with api_db.write() as conn:
        aggregates.set_metadata(conn, zone.id, {aggregates.AVAILABILITY_ZONE: "az1"})
        aggregates.add_host(conn, zone.id, "host1")
        aggregates.add_host(conn, rack.id, "host1")
        aggregates.add_host(conn, rack.id, "host2")
    with api_db.read() as conn:
        assert aggregates.availability_zone_of(conn, "host1", "nova") == "az1"
        assert aggregates.availability_zone_of(conn, "host2", "nova") == "nova"
        assert aggregates.zone_aggregates(conn, "az1") == [zone.uuid]
        assert aggregates.zone_aggregates(conn, "nova") == []
        of_host1 = aggregates.aggregates_of_host(conn, "host1")
        assert [a.name for a in of_host1] == ["az1", "rack1"]
        assert of_host1[0].availability_zone == "az1"


def test_every_write_moves_the_change_count_and_nothing_else_does(api_db: Database) -> None:
    """The scheduler reads the aggregates again only when the count moved."""

    def count() -> int:
        with api_db.one_statement() as conn:
            return aggregates.change_count(conn)

    made = _aggregate(api_db, "rack1")
    writes = [
        lambda conn: aggregates.add_host(conn, made.id, "host1"),
        lambda conn: aggregates.set_metadata(conn, made.id, {"availability_zone": "az1"}),
        lambda conn: aggregates.unset_metadata(conn, made.id, ["availability_zone"]),
        lambda conn: aggregates.rename(conn, made.id, "rack-1"),
        lambda conn: aggregates.remove_host(conn, made.id, "host1"),
        lambda conn: aggregates.delete(conn, made.id),
        lambda conn: aggregates.create(conn, "n" * 36, "new"),
    ]
    for write in writes:
        before = count()
        with api_db.write() as conn:
            write(conn)
        assert count() == before + 1
    # Reads, and writes that changed nothing, leave it.
    before = count()
    with api_db.write() as conn:
        aggregates.list_aggregates(conn)
        assert aggregates.remove_host(conn, 9999, "host1") is False
        assert aggregates.delete(conn, 9999) is False
    assert count() == before
