"""Reading providers from the placement database: all of them into a new index (``load_index``),
or some of them as ``Provider`` records to update one (``load_providers``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterable

import numpy as np
import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.placement.candidates.index import (
    NO_ROW,
    Inventory,
    InventoryArrays,
    Provider,
    ProviderColumns,
    ProviderIndex,
    Rows,
)
from berth.placement.store import schema
from berth.placement.store.inventories import inventory_of

# Ids per IN (...) list: well under every backend's limit on bound parameters.
_BATCH = 500


def load_names(conn: Connection) -> tuple[list[str], list[str]]:
    """(every resource class name, every trait name oldest first)."""
    rc, t = schema.resource_classes, schema.traits
    return (
        list(conn.scalars(sa.select(rc.c.name))),
        list(conn.scalars(sa.select(t.c.name).order_by(t.c.id))),
    )


def load_providers(conn: Connection, ids: Collection[int] | None = None) -> list[Provider]:
    """Every provider (``ids`` None) or those of ``ids`` that still exist, in id order."""
    if ids is None:
        return _load(conn, None)
    ordered = sorted(ids)
    found = []
    for start in range(0, len(ordered), _BATCH):
        found += _load(conn, ordered[start : start + _BATCH])
    return found


def _where(column: sa.Column[int], ids: list[int] | None) -> sa.ColumnElement[bool]:
    return sa.true() if ids is None else column.in_(ids)


def _load(conn: Connection, ids: list[int] | None) -> list[Provider]:
    rp = schema.resource_providers
    parent, root = rp.alias("parent"), rp.alias("root")
    rows = conn.execute(
        sa.select(
            rp.c.id,
            rp.c.uuid,
            rp.c.name,
            rp.c.generation,
            parent.c.uuid.label("parent_uuid"),
            root.c.uuid.label("root_uuid"),
            rp.c.created_at,
            rp.c.updated_at,
        )
        .select_from(rp)
        .outerjoin(parent, parent.c.id == rp.c.parent_provider_id)
        .outerjoin(root, root.c.id == rp.c.root_provider_id)
        .where(_where(rp.c.id, ids))
        .order_by(rp.c.id)
    ).all()
    inventories = _inventories(conn, ids)
    rpt, rpa = schema.resource_provider_traits, schema.resource_provider_aggregates
    traits = _names_by_provider(conn, ids, rpt.c.trait_id, schema.traits.c.name)
    aggregates = _names_by_provider(
        conn, ids, rpa.c.aggregate_id, schema.placement_aggregates.c.uuid
    )
    empty: frozenset[str] = frozenset()
    return [
        Provider(
            uuid=row.uuid,
            name=row.name,
            generation=row.generation,
            parent_uuid=row.parent_uuid,
            root_uuid=row.root_uuid or row.uuid,
            inventories=inventories.get(row.id, {}),
            traits=traits.get(row.id, empty),
            aggregates=aggregates.get(row.id, empty),
            id=row.id,
            modified=row.updated_at or row.created_at,
        )
        for row in rows
    ]


def _inventories(conn: Connection, ids: list[int] | None) -> dict[int, dict[str, Inventory]]:
    inv, alloc, rc = schema.inventories, schema.allocations, schema.resource_classes
    used = (
        sa.select(
            alloc.c.resource_provider_id,
            alloc.c.resource_class_id,
            sa.func.sum(alloc.c.used).label("used"),
        )
        .where(_where(alloc.c.resource_provider_id, ids))
        .group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)
        .subquery()
    )
    rows = conn.execute(
        sa.select(inv, rc.c.name.label("rc_name"), used.c.used)
        .join(rc, rc.c.id == inv.c.resource_class_id)
        .outerjoin(
            used,
            sa.and_(
                used.c.resource_provider_id == inv.c.resource_provider_id,
                used.c.resource_class_id == inv.c.resource_class_id,
            ),
        )
        .where(_where(inv.c.resource_provider_id, ids))
    )
    found: dict[int, dict[str, Inventory]] = defaultdict(dict)
    for row in rows:
        # int(): MySQL returns SUM as Decimal.
        found[row.resource_provider_id][row.rc_name] = Inventory(
            **inventory_of(row).fields(), used=int(row.used or 0)
        )
    return found


def _names_by_provider(
    conn: Connection, ids: list[int] | None, link: sa.Column[int], name: sa.Column[str]
) -> dict[int, frozenset[str]]:
    """Names (traits) or uuids (aggregates) linked to each provider through ``link``."""
    owner = link.table.c.resource_provider_id
    rows = conn.execute(
        sa.select(owner, name).join(name.table, name.table.c.id == link).where(_where(owner, ids))
    )
    found: dict[int, set[str]] = defaultdict(set)
    for provider_id, name in rows:
        found[provider_id].add(name)
    return {provider_id: frozenset(names) for provider_id, names in found.items()}


def load_index(conn: Connection) -> ProviderIndex:
    """Every provider, read in bulk straight into columns: a handful of queries and array
    operations, no per-provider records."""
    rp = schema.resource_providers
    rows = conn.execute(
        sa.select(
            rp.c.id,
            rp.c.uuid,
            rp.c.name,
            rp.c.generation,
            rp.c.parent_provider_id,
            rp.c.root_provider_id,
            rp.c.created_at,
            rp.c.updated_at,
        ).order_by(rp.c.id)
    ).all()
    ids = np.fromiter((r[0] for r in rows), np.int64, len(rows))

    def rows_of(provider_ids: Iterable[int | None], default: Rows) -> Rows:
        wanted = np.fromiter((NO_ROW if i is None else i for i in provider_ids), np.int64)
        found = np.searchsorted(ids, wanted)
        return np.where(wanted == NO_ROW, default, found)

    own = np.arange(len(rows), dtype=np.int64)
    classes, traits = load_names(conn)
    columns = ProviderColumns(
        ids=ids,
        uuids=[r[1] for r in rows],
        names=[r[2] for r in rows],
        generation=np.fromiter((r[3] for r in rows), np.int64, len(rows)),
        parent=rows_of((r[4] for r in rows), np.full(len(rows), NO_ROW, np.int64)),
        root=rows_of((r[5] for r in rows), own),
        modified=[r[7] or r[6] for r in rows],
        trait_sets=_sets_by_row(
            conn, ids, schema.resource_provider_traits.c.trait_id, schema.traits.c.name
        ),
        aggregate_sets=_sets_by_row(
            conn,
            ids,
            schema.resource_provider_aggregates.c.aggregate_id,
            schema.placement_aggregates.c.uuid,
        ),
        inventories=_inventory_arrays(conn, ids),
    )
    return ProviderIndex.of_columns(columns, classes, traits)


def _sets_by_row(
    conn: Connection, ids: Rows, link: sa.Column[int], name: sa.Column[str]
) -> list[frozenset[str]]:
    found = _names_by_provider(conn, None, link, name)
    empty: frozenset[str] = frozenset()
    return [found.get(provider_id, empty) for provider_id in ids.tolist()]


def _inventory_arrays(conn: Connection, ids: Rows) -> dict[str, InventoryArrays]:
    inv, alloc, rc = schema.inventories, schema.allocations, schema.resource_classes
    names = dict(conn.execute(sa.select(rc.c.id, rc.c.name)).all())
    used_rows = conn.execute(
        sa.select(
            alloc.c.resource_provider_id, alloc.c.resource_class_id, sa.func.sum(alloc.c.used)
        ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)
    ).all()
    # int(): MySQL returns SUM as Decimal.
    used = {(provider_id, class_id): int(total) for provider_id, class_id, total in used_rows}
    by_class: dict[int, list[tuple[int, ...]]] = defaultdict(list)
    for row in conn.execute(
        sa.select(
            inv.c.resource_class_id,
            inv.c.resource_provider_id,
            inv.c.total,
            inv.c.reserved,
            inv.c.min_unit,
            inv.c.max_unit,
            inv.c.step_size,
            inv.c.allocation_ratio,
        )
    ):
        by_class[row[0]].append(row[1:])
    found = {}
    for class_id, entries in by_class.items():
        provider_ids, total, reserved, min_unit, max_unit, step_size, ratio = zip(
            *entries, strict=True
        )
        found[names[class_id]] = InventoryArrays(
            row=np.searchsorted(ids, np.asarray(provider_ids, np.int64)),
            total=np.asarray(total, np.int64),
            reserved=np.asarray(reserved, np.int64),
            min_unit=np.asarray(min_unit, np.int64),
            max_unit=np.asarray(max_unit, np.int64),
            step_size=np.asarray(step_size, np.int64),
            allocation_ratio=np.asarray(ratio, np.float64),
            used=np.asarray([used.get((p, class_id), 0) for p in provider_ids], np.int64),
        )
    return found
