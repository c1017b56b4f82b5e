"""Provider, trait, aggregate and resource class storage rules that the HTTP stories cannot reach
without the inventory and allocation APIs: what blocks a delete and what a delete takes along."""

from __future__ import annotations

import uuid

import pytest
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.placement import errors, exceptions
from berth.placement.store import aggregates, names, providers, resource_classes, traits, tree
from berth.placement.store import schema as s


def _new(conn: Connection, name: str, parent: str | None = None) -> providers.ResourceProvider:
    return providers.create(conn, str(uuid.uuid4()), name, parent)


def _inventory(conn: Connection, provider_id: int, rc_id: int) -> None:
    conn.execute(
        s.inventories.insert().values(
            resource_provider_id=provider_id,
            resource_class_id=rc_id,
            total=8,
            reserved=0,
            min_unit=1,
            max_unit=8,
            step_size=1,
            allocation_ratio=1.0,
            created_at=utcnow(),
        )
    )


def _allocation(conn: Connection, provider_id: int, rc_id: int) -> None:
    conn.execute(
        s.allocations.insert().values(
            resource_provider_id=provider_id,
            consumer_id=str(uuid.uuid4()),
            resource_class_id=rc_id,
            used=1,
            created_at=utcnow(),
        )
    )


def _count(conn: Connection, table: sa.Table) -> int:
    return int(conn.scalar(sa.select(sa.func.count()).select_from(table)) or 0)


def test_delete_takes_inventory_traits_and_aggregate_links(placement_db: Database) -> None:
    with placement_db.write() as conn:
        rp = _new(conn, "compute")
        vcpu = names.resource_class_ids(conn, ["VCPU"])["VCPU"]
        _inventory(conn, rp.id, vcpu)
        _, generation = traits.replace_on_provider(conn, rp, ["HW_CPU_X86_SSE"])
        rp = providers.get(conn, rp.uuid)
        aggregates.replace(conn, rp, [str(uuid.uuid4())], bump=True)
        providers.delete(conn, rp.uuid)
        assert providers.find(conn, rp.uuid) is None
        assert generation == 1
        for table in (s.inventories, s.resource_provider_traits, s.resource_provider_aggregates):
            assert _count(conn, table) == 0
        # The aggregate itself outlives its last member, as upstream's does.
        assert _count(conn, s.placement_aggregates) == 1


def test_delete_refuses_a_provider_with_allocations(placement_db: Database) -> None:
    with placement_db.write() as conn:
        rp = _new(conn, "busy")
        vcpu = names.resource_class_ids(conn, ["VCPU"])["VCPU"]
        _inventory(conn, rp.id, vcpu)
        _allocation(conn, rp.id, vcpu)
        with pytest.raises(exceptions.ProviderInUse) as refused:
            providers.delete(conn, rp.uuid)
        assert refused.value.code == errors.PROVIDER_IN_USE
        assert "Resource provider has allocations" in str(refused.value)


@pytest.mark.parametrize("with_allocation", [False, True])
def test_a_class_in_use_cannot_be_deleted(placement_db: Database, with_allocation: bool) -> None:
    with placement_db.write() as conn:
        gold = resource_classes.create(conn, "CUSTOM_GOLD")
        rp = _new(conn, "gold mine")
        _inventory(conn, rp.id, gold.id)
        if with_allocation:
            _allocation(conn, rp.id, gold.id)
        with pytest.raises(exceptions.Conflict, match="Class is in use in inventory"):
            resource_classes.delete(conn, "CUSTOM_GOLD")


def test_a_custom_class_without_inventory_is_deleted(placement_db: Database) -> None:
    with placement_db.write() as conn:
        resource_classes.create(conn, "CUSTOM_GOLD")
        resource_classes.delete(conn, "CUSTOM_GOLD")
        assert resource_classes.find(conn, "CUSTOM_GOLD") is None


def test_descendants_of_a_provider(placement_db: Database) -> None:
    r"""
        root
        /  \
       a    b
       |
       c
    """
    with placement_db.write() as conn:
        root = _new(conn, "root")
        a = _new(conn, "a", root.uuid)
        b = _new(conn, "b", root.uuid)
        c = _new(conn, "c", a.uuid)
        assert tree.descendant_ids(conn, root.id, root.id) == {a.id, b.id, c.id}
        assert tree.descendant_ids(conn, root.id, a.id) == {c.id}
        assert tree.descendant_ids(conn, root.id, b.id) == set()


def test_moving_a_subtree_moves_every_root(placement_db: Database) -> None:
    with placement_db.write() as conn:
        old_root = _new(conn, "old root")
        new_root = _new(conn, "new root")
        a = _new(conn, "a", old_root.uuid)
        c = _new(conn, "c", a.uuid)
        moved = providers.update(conn, a, "a", new_root.uuid, allow_reparenting=True)
        assert moved.root_provider_id == new_root.id
        assert providers.get(conn, c.uuid).root_provider_uuid == new_root.uuid
        assert providers.get(conn, old_root.uuid).root_provider_uuid == old_root.uuid
        with pytest.raises(exceptions.InvalidInput, match="creating loop"):
            providers.update(conn, new_root, "new root", c.uuid, allow_reparenting=True)


def test_generation_guards(placement_db: Database) -> None:
    with placement_db.write() as conn:
        rp = _new(conn, "guarded")
        providers.require_generation(rp, 0)
        with pytest.raises(exceptions.ConcurrentUpdate) as stale:
            providers.require_generation(rp, 3)
        assert stale.value.code == errors.CONCURRENT_UPDATE
        aggregates.replace(conn, rp, [], bump=True)
        # The copy read before the bump is now stale: a second bump with it must fail.
        with pytest.raises(exceptions.ConcurrentUpdate):
            aggregates.replace(conn, rp, [], bump=True)
