"""The benchmark's reference cloud is what issue 3 describes, on every backend."""

from __future__ import annotations

import sqlalchemy as sa

from bench.placement_bench import overcommitted
from bench.reference_cloud import RACKS, SHARED_DISKS, WIDE_PFS, build
from berth.common.db import Database
from berth.placement.store import schema
from tests.conftest import make_service, wsgi_client


def test_reference_cloud_shape_and_usage(placement_db: Database) -> None:
    cloud = build(placement_db, n=20, seed=3, batch=7)
    assert cloud.providers == 20 * 6 + SHARED_DISKS + 1 + WIDE_PFS
    assert len(cloud.racks) == RACKS
    with placement_db.read() as conn:
        roots = conn.scalar(
            sa.select(sa.func.count()).where(
                schema.resource_providers.c.id == schema.resource_providers.c.root_provider_id
            )
        )
        used_vcpu = conn.scalar(
            sa.select(sa.func.sum(schema.allocations.c.used))
            .join(
                schema.resource_classes,
                schema.resource_classes.c.id == schema.allocations.c.resource_class_id,
            )
            .where(schema.resource_classes.c.name == "VCPU")
        )
    assert roots == 20 + SHARED_DISKS + 1
    # About half of every host's 256 VCPU (64 x 4.0) is in use.
    assert 0.4 * 20 * 256 <= used_vcpu <= 0.5 * 20 * 256
    assert overcommitted(placement_db) == []


def test_the_api_works_on_top_of_the_reference_cloud(placement_db: Database) -> None:
    build(placement_db, n=5, seed=1)
    with wsgi_client(make_service(placement_db)) as client:
        client.headers.update({"x-auth-token": "admin", "openstack-api-version": "placement 1.39"})
        query = "/allocation_candidates?resources=VCPU:2,MEMORY_MB:2048&limit=3"
        assert len(client.get(query).json()["allocation_requests"]) == 3
        # The ids the bulk path chose do not collide with the next provider's.
        assert client.post("/resource_providers", json={"name": "after"}).status_code == 200
        listed = client.get("/resource_providers?name=after").json()["resource_providers"]
        assert len(listed) == 1


def test_the_bulk_path_leaves_every_key_and_index_in_place(placement_db: Database) -> None:
    """On PostgreSQL the load drops foreign keys and plain indexes and makes them again."""
    build(placement_db, n=3, seed=2)
    with placement_db.read() as conn:
        inspector = sa.inspect(conn)
        for table in (schema.allocations, schema.consumers, schema.resource_providers):
            keys = {fk["name"] for fk in inspector.get_foreign_keys(table.name)}
            assert keys == {fk.name for fk in table.foreign_key_constraints}
            indexes = {ix["name"] for ix in inspector.get_indexes(table.name)}
            assert {ix.name for ix in table.indexes if not ix.unique} <= indexes
