"""The benchmark's reference cloud is what issue 3 describes, on every backend."""

from __future__ import annotations

import sqlalchemy as sa

from bench.placement_bench import overcommitted
from bench.reference_cloud import RACKS, SHARED_DISKS, WIDE_PFS, build
from berth.common.db import Database
from berth.placement.store import schema


def test_reference_cloud_shape_and_usage(placement_db: Database) -> None:
    cloud = build(placement_db, n=20, seed=3)
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
