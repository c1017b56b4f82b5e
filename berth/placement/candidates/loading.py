"""Reading providers from the placement database: all of them into a new index (``load_index``),
or some of them as ``Provider`` records to update one (``load_providers``)."""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Iterator
from typing import Any

import numpy as np
import numpy.typing as npt
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
    Usage,
)
from berth.placement.store import providers, schema
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


def _usage_statement() -> sa.Select[tuple[object, ...]]:
    rp, alloc, rc = schema.resource_providers, schema.allocations, schema.resource_classes
    return (
        sa.select(
            rp.c.id, rp.c.generation, rp.c.created_at, rp.c.updated_at, rc.c.name,
            sa.func.sum(alloc.c.used),
        )
        .select_from(
            rp.outerjoin(alloc, alloc.c.resource_provider_id == rp.c.id).outerjoin(
                rc, rc.c.id == alloc.c.resource_class_id
            )
        )
        .where(rp.c.id.in_(sa.bindparam("ids", expanding=True)))
        .group_by(rp.c.id, rp.c.generation, rp.c.created_at, rp.c.updated_at, rc.c.name)
    )  # fmt: skip


# Built once: this runs before nearly every query, and building a statement costs more than
# running it from SQLAlchemy's cache.
_USAGE = _usage_statement()


def load_usage(conn: Connection, ids: Collection[int]) -> list[Usage]:
    """The usage, generation and change time of those of ``ids`` that still exist: one query
    per batch, for the providers that only claims changed."""
    ordered = sorted(ids)
    found: dict[int, Usage] = {}
    for start in range(0, len(ordered), _BATCH):
        rows = conn.execute(_USAGE, {"ids": ordered[start : start + _BATCH]})
        for provider_id, generation, created, updated, rc_name, used in rows:
            usage = found.setdefault(
                provider_id, Usage(provider_id, generation, updated or created, {})
            )
            if rc_name is not None:
                # int(): MySQL returns SUM as Decimal.
                usage.used[rc_name] = int(used)
    return list(found.values())


def _where(column: sa.Column[int], ids: list[int] | None) -> sa.ColumnElement[bool]:
    return sa.true() if ids is None else column.in_(ids)


def _load(conn: Connection, ids: list[int] | None) -> list[Provider]:
    rp = schema.resource_providers
    rows = [
        providers.ResourceProvider(**row._asdict())
        for row in conn.execute(
            providers.select_providers().where(_where(rp.c.id, ids)).order_by(rp.c.id)
        )
    ]
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
            parent_uuid=row.parent_provider_uuid,
            root_uuid=row.root_provider_uuid or row.uuid,
            inventories=inventories.get(row.id, {}),
            traits=traits.get(row.id, empty),
            aggregates=aggregates.get(row.id, empty),
            id=row.id,
            modified=row.last_modified,
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
    for provider_id, value in rows:
        found[provider_id].add(value)
    return {provider_id: frozenset(names) for provider_id, names in found.items()}


def load_index(conn: Connection) -> ProviderIndex:
    """Every provider, read in bulk straight into columns: a handful of queries read through the
    driver's own cursor (no per-row objects), then array operations."""
    rp = schema.resource_providers
    uuids, names, numbers, modified = [], [], [], []
    query = sa.select(
        rp.c.id,
        rp.c.uuid,
        rp.c.name,
        rp.c.generation,
        rp.c.parent_provider_id,
        rp.c.root_provider_id,
        rp.c.created_at,
        rp.c.updated_at,
    ).order_by(rp.c.id)
    for chunk in _fetch(conn, query):
        uuids += [r[1] for r in chunk]
        names += [r[2] for r in chunk]
        modified += [r[7] or r[6] for r in chunk]
        numbers.append(
            np.array(
                [(r[0], r[3], NO_ROW if r[4] is None else r[4], r[5] or r[0]) for r in chunk],
                np.int64,
            ).reshape(-1, 4)
        )
    table = np.concatenate(numbers) if numbers else np.empty((0, 4), np.int64)
    ids = table[:, 0].copy()
    parent = np.where(table[:, 2] == NO_ROW, NO_ROW, np.searchsorted(ids, table[:, 2]))
    classes, traits = load_names(conn)
    trait_rows, trait_sets = _interned_sets(
        conn, ids, schema.resource_provider_traits.c.trait_id, schema.traits.c.name
    )
    aggregate_rows, aggregate_sets = _interned_sets(
        conn,
        ids,
        schema.resource_provider_aggregates.c.aggregate_id,
        schema.placement_aggregates.c.uuid,
    )
    columns = ProviderColumns(
        ids=ids,
        uuids=uuids,
        names=names,
        generation=table[:, 1].copy(),
        parent=parent,
        root=np.searchsorted(ids, table[:, 3]),
        modified=modified,
        trait_set_of_row=trait_rows,
        trait_sets=trait_sets,
        aggregate_set_of_row=aggregate_rows,
        aggregate_sets=aggregate_sets,
        inventories=_inventory_arrays(conn, ids),
    )
    return ProviderIndex.of_columns(columns, classes, traits)


def _fetch(conn: Connection, query: sa.Select[Any], size: int = 100_000) -> Iterator[list[Any]]:
    """Rows of a parameterless query, in chunks, as the driver gives them (tuples)."""
    compiled = query.compile(dialect=conn.dialect)
    assert not compiled.params, "bulk reads take no parameters"
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    try:
        cursor.execute(str(compiled))
        while chunk := cursor.fetchmany(size):
            yield chunk
    finally:
        cursor.close()


def _array(conn: Connection, query: sa.Select[Any], columns: int, dtype: type) -> npt.NDArray[Any]:
    parts: list[npt.NDArray[Any]] = [
        np.array(chunk, dtype).reshape(-1, columns) for chunk in _fetch(conn, query)
    ]
    return np.concatenate(parts) if parts else np.empty((0, columns), dtype)


def _interned_sets(
    conn: Connection, ids: Rows, link: sa.Column[int], name: sa.Column[str]
) -> tuple[npt.NDArray[np.int64], list[frozenset[str]]]:
    """Per row, the index of its set of linked names (traits, aggregate uuids) in a list of the
    distinct sets. Each row's set is a bitmap over the names in use, so finding the distinct
    ones is one sort of the bitmaps."""
    owner = link.table.c.resource_provider_id
    pairs = _array(conn, sa.select(owner, link), 2, np.int64)
    named = dict(_fetch_all(conn, sa.select(name.table.c.id, name)))
    used, local = np.unique(pairs[:, 1], return_inverse=True)
    words = max(1, (len(used) + 63) // 64)
    bits = np.zeros((len(ids), words), np.uint64)
    np.bitwise_or.at(
        bits,
        (np.searchsorted(ids, pairs[:, 0]), local // 64),
        np.left_shift(np.uint64(1), (local % 64).astype(np.uint64)),
    )
    distinct, of_row = np.unique(bits, axis=0, return_inverse=True)
    flags = np.unpackbits(distinct.view(np.uint8), axis=1, bitorder="little")
    sets = [frozenset(named[int(used[j])] for j in np.flatnonzero(row)) for row in flags]
    return of_row.reshape(-1).astype(np.int64), sets


def _fetch_all(conn: Connection, query: sa.Select[Any]) -> list[Any]:
    return [row for chunk in _fetch(conn, query) for row in chunk]


def _inventory_arrays(conn: Connection, ids: Rows) -> dict[str, InventoryArrays]:
    inv, alloc, rc = schema.inventories, schema.allocations, schema.resource_classes
    names = dict(_fetch_all(conn, sa.select(rc.c.id, rc.c.name)))
    used = _array(
        conn,
        sa.select(
            alloc.c.resource_provider_id, alloc.c.resource_class_id, sa.func.sum(alloc.c.used)
        ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id),
        3,
        np.int64,
    )
    # Every value fits a double exactly (totals are 32-bit), so one read gives all the columns.
    read = _array(
        conn,
        sa.select(
            inv.c.resource_class_id,
            inv.c.resource_provider_id,
            inv.c.total,
            inv.c.reserved,
            inv.c.min_unit,
            inv.c.max_unit,
            inv.c.step_size,
            inv.c.allocation_ratio,
        ),
        8,
        np.float64,
    )
    held = read[:, :7].astype(np.int64)
    span = int(max(held[:, 0].max(initial=0), used[:, 1].max(initial=0))) + 1
    held_keys = held[:, 1] * span + held[:, 0]
    used_keys = used[:, 0] * span + used[:, 1]
    order = np.argsort(used_keys)
    at = np.minimum(np.searchsorted(used_keys[order], held_keys), max(len(order) - 1, 0))
    found_used = (
        np.where(used_keys[order][at] == held_keys, used[order, 2][at], 0)
        if len(order)
        else np.zeros(len(held), np.int64)
    )
    found = {}
    for class_id in np.unique(held[:, 0]).tolist():
        mine = held[:, 0] == class_id
        found[names[class_id]] = InventoryArrays(
            row=np.searchsorted(ids, held[mine, 1]),
            total=held[mine, 2].copy(),
            reserved=held[mine, 3].copy(),
            min_unit=held[mine, 4].copy(),
            max_unit=held[mine, 5].copy(),
            step_size=held[mine, 6].copy(),
            allocation_ratio=read[mine, 7].copy(),
            used=found_used[mine].astype(np.int64),
        )
    return found
