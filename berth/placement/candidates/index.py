"""The candidate index: every resource provider in columns, in memory, for vectorised queries.

Each API worker keeps one ``ProviderIndex`` (see ``live``) and brings it up to date from the
change sequence before each query. Providers are *rows*, numbered in database id order (so row
order is the order upstream lists providers in); a deleted provider's row stays, marked dead,
until the next full rebuild.

- Per row: uuid, name, generation, last-modified time, parent row, root row.
- Traits and aggregates: each row points to one interned set; a filter is a lookup table over the
  distinct sets gathered by row, so it costs one pass over an integer array.
- Inventories: one ``InventoryColumn`` per resource class, one entry per provider holding it.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import NamedTuple, TypeVar, cast

import numpy as np
import numpy.typing as npt

from berth.placement import capacity
from berth.placement.candidates.kept import KeptTexts

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"
NO_ROW = -1
# Capacities are held in 64-bit integers; nothing can use more than this, so clipping is exact.
CAPACITY_CEILING = 2**62

Rows = npt.NDArray[np.int64]
Mask = npt.NDArray[np.bool_]
T = TypeVar("T")


def distinct(rows: Rows, size: int) -> Rows:
    """The distinct rows among ``rows`` (each below ``size``), ascending. Marked in a mask when
    there are many: for the thousands of rows of an answer, many times faster than
    ``np.unique``, which hashes or sorts."""
    if len(rows) * 64 < size:
        return np.unique(rows)
    marked = np.zeros(size, np.bool_)
    marked[rows] = True
    return np.flatnonzero(marked)


@dataclass(frozen=True, slots=True)
class Inventory(capacity.Inventory):
    """An inventory and how much of it is already allocated."""

    used: int = 0

    def fits(self, amount: int) -> bool:
        """Whether one more allocation of ``amount`` fits, by the same rule claims are held to."""
        return capacity.fit(self, amount, self.used + amount, self.used) is None


@dataclass(frozen=True, slots=True)
class Provider:
    """One provider as the database holds it; what the index is built from."""

    uuid: str
    name: str
    generation: int = 0
    parent_uuid: str | None = None
    root_uuid: str = ""
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()
    # The database id (row order); None in hand-built indexes, which keep the given order.
    id: int | None = None
    modified: dt.datetime | None = None


class ProviderHeaders(NamedTuple):
    """What a provider list shows of each provider, column by column (a list of tens of
    thousands of providers is cheaper to write from columns than from an object each)."""

    uuids: list[str]
    names: list[str]
    generations: list[int]
    parent_uuids: list[str | None]
    root_uuids: list[str]


@dataclass(frozen=True, slots=True)
class Usage:
    """A provider's usage after a claim, with the generation and time the claim gave it."""

    id: int
    generation: int
    modified: dt.datetime | str | None
    used: dict[str, int]  # by resource class; a class it holds but nobody uses is absent


class NeedsRebuild(Exception):
    """An incremental update cannot keep row order (a new provider with a lower id)."""


@dataclass(frozen=True, slots=True)
class InventoryArrays:
    """One resource class's inventories as read in bulk, one entry per provider row."""

    row: Rows
    total: Rows
    reserved: Rows
    min_unit: Rows
    max_unit: Rows
    step_size: Rows
    allocation_ratio: npt.NDArray[np.float64]
    used: Rows


@dataclass(frozen=True, slots=True)
class ProviderColumns:
    """Every provider as read in bulk, in id order: what ``ProviderIndex.of_columns`` takes."""

    ids: Rows
    uuids: list[str]
    names: list[str]
    generation: Rows
    parent: Rows  # rows, NO_ROW for a root
    root: Rows
    modified: list[dt.datetime | str | None]  # SQLite's driver gives the text of a timestamp
    trait_set_of_row: Rows  # index into trait_sets
    trait_sets: list[frozenset[str]]
    aggregate_set_of_row: Rows
    aggregate_sets: list[frozenset[str]]
    inventories: dict[str, InventoryArrays]


class InventoryColumn:
    """Every provider's inventory of one resource class."""

    _INT_FIELDS = ("total", "reserved", "min_unit", "max_unit", "step_size", "used", "capacity")

    def __init__(self, rows: int) -> None:
        self.entry_of: Rows = np.full(rows, NO_ROW, np.int64)
        self.row: Rows = np.empty(0, np.int64)
        self.total: Rows = np.empty(0, np.int64)
        self.reserved: Rows = np.empty(0, np.int64)
        self.min_unit: Rows = np.empty(0, np.int64)
        self.max_unit: Rows = np.empty(0, np.int64)
        self.step_size: Rows = np.empty(0, np.int64)
        self.used: Rows = np.empty(0, np.int64)
        self.capacity: Rows = np.empty(0, np.int64)
        self.allocation_ratio: npt.NDArray[np.float64] = np.empty(0, np.float64)
        # By amount: the entries whose units allow it (``allowing``), until inventories change.
        self._allowing: dict[int, Mask] = {}

    @classmethod
    def of_arrays(cls, size: int, arrays: InventoryArrays) -> InventoryColumn:
        """A column from whole arrays (a bulk load); ``arrays.row`` are distinct rows."""
        column = cls(size)
        column.row = arrays.row
        column.total, column.reserved = arrays.total, arrays.reserved
        column.min_unit, column.max_unit = arrays.min_unit, arrays.max_unit
        column.step_size, column.used = arrays.step_size, arrays.used
        column.allocation_ratio = arrays.allocation_ratio
        # (total - reserved) * ratio, truncated, exactly as ``capacity.Inventory.capacity``.
        capacity = np.trunc((arrays.total - arrays.reserved) * arrays.allocation_ratio)
        column.capacity = np.minimum(capacity, CAPACITY_CEILING).astype(np.int64)
        column.entry_of[arrays.row] = np.arange(len(arrays.row))
        return column

    def grow(self, rows: int) -> None:
        extra = rows - len(self.entry_of)
        if extra > 0:
            self.entry_of = np.concatenate([self.entry_of, np.full(extra, NO_ROW, np.int64)])

    def put(self, rows: Sequence[int], inventories: Sequence[Inventory]) -> None:
        """Set the inventory of each row, replacing an entry it has or adding one."""
        if not rows:
            return
        values = {
            "total": [i.total for i in inventories],
            "reserved": [i.reserved for i in inventories],
            "min_unit": [i.min_unit for i in inventories],
            "max_unit": [i.max_unit for i in inventories],
            "step_size": [i.step_size for i in inventories],
            "used": [i.used for i in inventories],
            "capacity": [min(i.capacity, CAPACITY_CEILING) for i in inventories],
            "allocation_ratio": [i.allocation_ratio for i in inventories],
        }
        self._allowing.clear()
        at = np.asarray(rows, np.int64)
        entries = self.entry_of[at]
        old = entries != NO_ROW
        for name, column in values.items():
            array = np.asarray(column, np.float64 if name == "allocation_ratio" else np.int64)
            getattr(self, name)[entries[old]] = array[old]
            if not old.all():
                setattr(self, name, np.concatenate([getattr(self, name), array[~old]]))
        new_rows = at[~old]
        if len(new_rows):
            first = len(self.row)
            self.row = np.concatenate([self.row, new_rows])
            self.entry_of[new_rows] = np.arange(first, first + len(new_rows))

    def drop(self, rows: Iterable[int]) -> None:
        """Forget the rows' entries (they stay in the arrays, pointing at no row)."""
        at = np.fromiter(rows, np.int64)
        if not len(at):
            return
        entries = self.entry_of[at]
        entries = entries[entries != NO_ROW]
        self._allowing.clear()
        self.row[entries] = NO_ROW
        self.entry_of[at] = NO_ROW

    def fits(self, entries: Rows, amount: int) -> Mask:
        """For each entry (NO_ROW for none), whether one more allocation of ``amount`` fits
        (``capacity.fit``, vectorised)."""
        ok = entries != NO_ROW
        if amount > capacity.MAX_INT:
            # Past every max_unit (a 32-bit column), and past what the arrays can compare.
            return np.zeros(len(entries), np.bool_)
        at = entries[ok]
        good = self.allowing(amount)[at]
        if amount > 0:
            good &= self.used[at] + amount <= self.capacity[at]
        ok[ok] = good
        return ok

    def allowing(self, amount: int) -> Mask:
        """Per entry, whether it is a provider's and its units allow ``amount`` (min_unit,
        max_unit, step_size): what of ``fits`` claims do not change, kept for the few amounts
        queries ask for."""
        found = self._allowing.get(amount)
        if found is None:
            if len(self._allowing) >= 64:
                self._allowing.clear()
            found = self._allowing[amount] = (
                (self.row != NO_ROW)
                & (self.min_unit <= amount)
                & (self.max_unit >= amount)
                & (amount % self.step_size == 0)
            )
        return found

    def fitting(self, amount: int) -> Rows:
        """Rows where one more allocation of ``amount`` fits."""
        return self.row[self.fits(np.arange(len(self.row)), amount)]

    def inventory(self, row: int) -> Inventory | None:
        entry = int(self.entry_of[row])
        if entry == NO_ROW:
            return None
        return Inventory(
            total=int(self.total[entry]),
            reserved=int(self.reserved[entry]),
            min_unit=int(self.min_unit[entry]),
            max_unit=int(self.max_unit[entry]),
            step_size=int(self.step_size[entry]),
            allocation_ratio=float(self.allocation_ratio[entry]),
            used=int(self.used[entry]),
        )

    def exact_capacity(self, entry: int) -> int:
        """The capacity of an entry, unclipped (for display; it may pass 64 bits)."""
        total, reserved = int(self.total[entry]), int(self.reserved[entry])
        return int((total - reserved) * float(self.allocation_ratio[entry]))


class _Interned:
    """Per row, one of a small number of distinct frozensets (trait sets, aggregate sets)."""

    def __init__(self) -> None:
        self.sets: list[frozenset[str]] = [frozenset()]
        self._ids: dict[frozenset[str], int] = {frozenset(): 0}
        self.of_row: npt.NDArray[np.int32] = np.empty(0, np.int32)

    def id_of(self, value: frozenset[str]) -> int:
        found = self._ids.get(value)
        if found is None:
            found = self._ids[value] = len(self.sets)
            self.sets.append(value)
        return found

    def grow(self, rows: int) -> None:
        extra = rows - len(self.of_row)
        if extra > 0:
            self.of_row = np.concatenate([self.of_row, np.zeros(extra, np.int32)])

    def get(self, row: int) -> frozenset[str]:
        return self.sets[self.of_row[row]]

    def table(self, test: Iterable[bool]) -> Mask:
        """Whether each distinct set passes ``test`` (one answer per set, in ``sets`` order);
        gathered by a row's set id, it answers for the row."""
        return np.fromiter(test, np.bool_, len(self.sets))

    def any_of(self, names: frozenset[str]) -> Mask:
        return self.table(bool(s & names) for s in self.sets)

    def all_of(self, any_ofs: Iterable[frozenset[str]]) -> Mask:
        """Sets meeting one name of every any-of set."""
        wanted = list(any_ofs)
        return self.table(all(s & names for names in wanted) for s in self.sets)


class ProviderIndex:
    """Every provider, its inventories, traits and aggregates, by row."""

    def __init__(self) -> None:
        self.size = 0
        self.ids: Rows = np.empty(0, np.int64)
        self.generation: Rows = np.empty(0, np.int64)
        self.parent: Rows = np.empty(0, np.int64)
        self.root: Rows = np.empty(0, np.int64)
        self.alive: Mask = np.empty(0, np.bool_)
        self.uuids: list[str] = []
        self.names: list[str] = []
        self.modified: list[dt.datetime | str | None] = []
        self.row_of: dict[str, int] = {}
        self.traits_by_row = _Interned()
        self.aggregates_by_row = _Interned()
        self.columns: dict[str, InventoryColumn] = {}
        self.resource_classes: frozenset[str] = frozenset()
        self.traits: frozenset[str] = frozenset()
        self.trait_rank: dict[str, int] = {}
        self.dead = 0
        self._cache: dict[object, object] = {}
        # Rendered provider summaries and list items by row (about 300 and 700 bytes each);
        # a row's go when it changes.
        self.fragments = KeptTexts(most=100_000)
        # Per candidates request (``solver._slices``): how many leading roots had no anchor
        # when it was last searched. Claims only fill providers, so this holds until capacity
        # is freed or providers change, which forgets every entry.
        self.no_anchor_prefix: dict[object, int] = {}

    @classmethod
    def build(
        cls,
        providers: Iterable[Provider],
        resource_classes: Iterable[str],
        traits: Iterable[str],
    ) -> ProviderIndex:
        """``traits`` are every known trait name, oldest first."""
        index = cls()
        index.set_names(resource_classes, traits)
        index.apply(providers)
        return index

    @classmethod
    def of_columns(
        cls, columns: ProviderColumns, resource_classes: Iterable[str], traits: Iterable[str]
    ) -> ProviderIndex:
        """The same index as ``build`` makes, from columns read in bulk (much faster)."""
        index = cls()
        index.set_names(resource_classes, traits)
        index.size = len(columns.ids)
        index.ids, index.generation = columns.ids, columns.generation
        index.parent, index.root = columns.parent, columns.root
        index.alive = np.ones(index.size, np.bool_)
        index.uuids, index.names, index.modified = columns.uuids, columns.names, columns.modified
        index.row_of = {uuid: row for row, uuid in enumerate(columns.uuids)}
        for interned, of_row, sets in (
            (index.traits_by_row, columns.trait_set_of_row, columns.trait_sets),
            (index.aggregates_by_row, columns.aggregate_set_of_row, columns.aggregate_sets),
        ):
            ids = np.asarray([interned.id_of(s) for s in sets], np.int32)
            interned.of_row = ids[of_row] if len(of_row) else np.empty(0, np.int32)
        index.columns = {
            rc: InventoryColumn.of_arrays(index.size, arrays)
            for rc, arrays in columns.inventories.items()
        }
        return index

    # -- changes --------------------------------------------------------------------------------

    def set_names(self, resource_classes: Iterable[str], traits: Iterable[str]) -> None:
        ordered = list(traits)
        self.resource_classes = frozenset(resource_classes)
        self.traits = frozenset(ordered)
        self.trait_rank = {name: rank for rank, name in enumerate(ordered)}
        self._cache.clear()
        self.fragments.clear()
        self.no_anchor_prefix.clear()

    def apply(self, providers: Iterable[Provider], gone: Iterable[str] = ()) -> None:
        """Add or replace ``providers`` (by uuid) and remove the providers named in ``gone``.

        Raises ``NeedsRebuild`` when a new provider's id is below an existing one's: rows must
        stay in id order.
        """
        self.no_anchor_prefix.clear()
        gone = [uuid for uuid in gone if uuid in self.row_of]
        for uuid in gone:
            self._kill(uuid)
        changed: list[tuple[int, Provider]] = []
        added: list[Provider] = []
        for p in providers:
            row = self.row_of.get(p.uuid)
            if row is not None and (p.id is None or int(self.ids[row]) == p.id):
                changed.append((row, p))
            else:
                if row is not None:
                    self._kill(p.uuid)
                    gone.append(p.uuid)
                added.append(p)
        if added:
            changed += self._append(added)
        rows = np.asarray([row for row, _ in changed], np.int64)
        before = self._shape(rows)
        self._link(changed)
        # Trees, roots and sharing only change with providers' places, traits or aggregates;
        # a claim (usage, generation) keeps what was derived from them.
        if (
            gone
            or added
            or any(
                not np.array_equal(old, new)
                for old, new in zip(before, self._shape(rows), strict=True)
            )
        ):
            self._cache.clear()
            # Texts kept per tree (by root) are of trees that may have changed shape.
            self.fragments.clear()
        else:
            self.fragments.forget(self._with_roots(rows.tolist()))

    def apply_usage(self, usages: Iterable[Usage]) -> None:
        """Set the usage and generation of providers a claim changed; nothing else moved, so
        trees, traits and aggregates (and what is derived from them) stay."""
        changed: list[int] = []
        for usage in usages:
            row = self.row_of_id(usage.id)
            if row is None:
                continue
            changed.append(row)
            self.generation[row] = usage.generation
            self.modified[row] = usage.modified
            for rc, column in self.columns.items():
                entry = int(column.entry_of[row])
                if entry != NO_ROW:
                    used = usage.used.get(rc, 0)
                    if used < column.used[entry]:
                        self.no_anchor_prefix.clear()
                    column.used[entry] = used
        self.fragments.forget(self._with_roots(changed))

    def _with_roots(self, rows: list[int]) -> list[int]:
        """``rows`` and their roots: texts are kept per row and per tree (by its root)."""
        return rows + self.root[rows].tolist()

    def _shape(self, rows: Rows) -> tuple[Rows, ...]:
        return (
            self.parent[rows],
            self.root[rows],
            self.traits_by_row.of_row[rows].astype(np.int64),
            self.aggregates_by_row.of_row[rows].astype(np.int64),
        )

    def _kill(self, uuid: str) -> None:
        row = self.row_of.pop(uuid, None)
        if row is None:
            return
        self.alive[row] = False
        self.dead += 1
        for column in self.columns.values():
            column.drop([row])

    def _append(self, added: list[Provider]) -> list[tuple[int, Provider]]:
        top = int(self.ids[self.alive].max()) if self.alive.any() else -1
        if all(p.id is not None for p in added):
            added.sort(key=lambda p: p.id or 0)
            if added[0].id is not None and added[0].id <= top:
                raise NeedsRebuild
        first, count = self.size, len(added)
        self.size += count
        ids = [p.id if p.id is not None else first + i for i, p in enumerate(added)]
        self.ids = np.concatenate([self.ids, np.asarray(ids, np.int64)])
        self.generation = np.concatenate([self.generation, np.zeros(count, np.int64)])
        self.parent = np.concatenate([self.parent, np.full(count, NO_ROW, np.int64)])
        self.root = np.concatenate([self.root, np.full(count, NO_ROW, np.int64)])
        self.alive = np.concatenate([self.alive, np.ones(count, np.bool_)])
        self.uuids += [p.uuid for p in added]
        self.names += [p.name for p in added]
        self.modified += [p.modified for p in added]
        for i, p in enumerate(added):
            self.row_of[p.uuid] = first + i
        self.traits_by_row.grow(self.size)
        self.aggregates_by_row.grow(self.size)
        for column in self.columns.values():
            column.grow(self.size)
        return [(first + i, p) for i, p in enumerate(added)]

    def _link(self, changed: list[tuple[int, Provider]]) -> None:
        """Write every field of the changed rows, once all of them exist (a parent may be new)."""
        puts: dict[str, tuple[list[int], list[Inventory]]] = {}
        for row, p in changed:
            self.names[row] = p.name
            self.modified[row] = p.modified
            self.generation[row] = p.generation
            self.parent[row] = NO_ROW if p.parent_uuid is None else self.row_of[p.parent_uuid]
            self.root[row] = self.row_of[p.root_uuid or p.uuid]
            self.traits_by_row.of_row[row] = self.traits_by_row.id_of(p.traits)
            self.aggregates_by_row.of_row[row] = self.aggregates_by_row.id_of(p.aggregates)
            for rc, inventory in p.inventories.items():
                rows, inventories = puts.setdefault(rc, ([], []))
                rows.append(row)
                inventories.append(inventory)
        for rc, column in self.columns.items():
            column.drop(row for row, p in changed if rc not in p.inventories)
        for rc, (rows, inventories) in puts.items():
            if rc not in self.columns:
                self.columns[rc] = InventoryColumn(self.size)
            self.columns[rc].put(rows, inventories)

    # -- reading one provider -------------------------------------------------------------------

    def row(self, uuid: str) -> int | None:
        return self.row_of.get(uuid)

    def last_modified(self, rows: Rows) -> dt.datetime | None:
        """The latest change of any of ``rows``."""
        modified = self.modified
        values = [when for when in map(modified.__getitem__, rows.tolist()) if when is not None]
        with contextlib.suppress(TypeError):
            # One database gives one type: datetimes, or (SQLite) texts of one format, which
            # sort as the times do.
            latest = max(values, default=None)
            return dt.datetime.fromisoformat(latest) if isinstance(latest, str) else latest
        # Texts from a bulk load and datetimes from later changes.
        texts = [v for v in values if isinstance(v, str)]
        times = [v for v in values if isinstance(v, dt.datetime)]
        return max([*times, dt.datetime.fromisoformat(max(texts))])

    def modified_at(self, row: int) -> dt.datetime | None:
        when = self.modified[row]
        # A bulk load keeps SQLite's text as it came (parsing 600,000 of them is slow).
        return dt.datetime.fromisoformat(when) if isinstance(when, str) else when

    def row_of_id(self, provider_id: int) -> int | None:
        """The live row of a database id (rows are in id order)."""
        at = int(np.searchsorted(self.ids, provider_id, side="right")) - 1
        if at >= 0 and int(self.ids[at]) == provider_id and self.alive[at]:
            return at
        return None

    def uuid_of(self, row: int) -> str | None:
        return None if row == NO_ROW else self.uuids[row]

    def root_of(self, row: int) -> int:
        return int(self.root[row])

    def traits_of(self, row: int) -> frozenset[str]:
        return self.traits_by_row.get(row)

    def aggregates_of(self, row: int) -> frozenset[str]:
        return self.aggregates_by_row.get(row)

    def inventories_of(self, row: int) -> dict[str, Inventory]:
        found = {}
        for rc, column in self.columns.items():
            inventory = column.inventory(row)
            if inventory is not None:
                found[rc] = inventory
        return found

    def provider(self, row: int) -> Provider:
        return Provider(
            uuid=self.uuids[row],
            name=self.names[row],
            generation=int(self.generation[row]),
            parent_uuid=self.uuid_of(int(self.parent[row])),
            root_uuid=self.uuids[int(self.root[row])],
            inventories=self.inventories_of(row),
            traits=self.traits_of(row),
            aggregates=self.aggregates_of(row),
            id=int(self.ids[row]),
            modified=self.modified_at(row),
        )

    def headers(self, rows: Rows) -> ProviderHeaders:
        uuids, names = self.uuids, self.names
        at = rows.tolist()
        return ProviderHeaders(
            [uuids[row] for row in at],
            [names[row] for row in at],
            self.generation[rows].tolist(),
            [uuids[parent] if parent != NO_ROW else None for parent in self.parent[rows].tolist()],
            [uuids[root] for root in self.root[rows].tolist()],
        )

    def providers(self) -> list[Provider]:
        """Every live provider in row order (for checks and tests; not on a hot path)."""
        return [self.provider(row) for row in np.flatnonzero(self.alive).tolist()]

    def ancestors(self, row: int) -> set[int]:
        """The row and every row above it."""
        # A plain list: the search asks this for every answer with ``same_subtree``.
        parents: list[int] = self._cached("parents", self.parent.tolist)  # type: ignore[assignment]
        found = set()
        current = row
        while current != NO_ROW:
            found.add(current)
            current = parents[current]
        return found

    # -- vectorised filters ---------------------------------------------------------------------

    def derived(self, key: str, make: Callable[[], T]) -> T:
        """What another module derives from the trees, traits or aggregates (``make()``), kept
        until they change."""
        return self._cached(key, make)  # type: ignore[return-value]

    def _cached(self, key: object, make: Callable[[], object]) -> object:
        """Something derived from the trees, traits or aggregates, until they change."""
        if key not in self._cache:
            self._cache[key] = make()
        return self._cache[key]

    def roots(self) -> Rows:
        """Live root rows, in row order."""
        return self._cached(  # type: ignore[return-value]
            "roots", lambda: np.flatnonzero(self.alive & (self.root == np.arange(self.size)))
        )

    def uuid_array(self) -> npt.NDArray[np.object_]:
        """Every row's uuid, as an array to gather from (kept until providers come or go)."""
        return self._cached("uuid_array", lambda: np.array(self.uuids, dtype=object))  # type: ignore[return-value]

    def uuid_bytes_array(self) -> npt.NDArray[np.object_]:
        """``uuid_array``, each uuid encoded (for text written as bytes)."""
        return self._cached(  # type: ignore[return-value]
            "uuid_bytes_array", lambda: np.array([u.encode() for u in self.uuids], dtype=object)
        )

    def uuid_bytes_matrix(self) -> npt.NDArray[np.uint8] | None:
        """``uuid_bytes_array`` as a matrix, a row's uuid in its bytes, when every uuid has
        the same length (canonical uuids do); None otherwise."""
        return self._cached("uuid_bytes_matrix", self._uuid_bytes_matrix)  # type: ignore[return-value]

    def _uuid_bytes_matrix(self) -> npt.NDArray[np.uint8] | None:
        encoded = self.uuid_bytes_array()
        if not len(encoded) or len({len(u) for u in encoded.tolist()}) != 1:
            return None
        return np.frombuffer(b"".join(encoded.tolist()), np.uint8).reshape(len(encoded), -1)

    @property
    def has_trees(self) -> bool:
        return bool(self._cached("has_trees", lambda: bool((self.parent[self.alive] >= 0).any())))

    def mask(self, rows: Rows) -> Mask:
        found = np.zeros(self.size, np.bool_)
        found[rows] = True
        return found

    def fitting(self, rc: str, amount: int) -> Mask:
        """Rows with inventory of ``rc`` able to take one more allocation of ``amount``."""
        column = self.columns.get(rc)
        if column is None:
            return np.zeros(self.size, np.bool_)
        return self.mask(column.fitting(amount))

    def with_traits(self, required: Iterable[frozenset[str]]) -> Mask:
        """Live rows having, by themselves, one trait of every any-of set."""
        return self.alive & self.traits_by_row.all_of(required)[self.traits_by_row.of_row]

    def with_any_trait(self, names: frozenset[str]) -> Mask:
        if not names:
            return np.zeros(self.size, np.bool_)
        return self.traits_by_row.any_of(names)[self.traits_by_row.of_row]

    def in_aggregates(self, any_ofs: Iterable[frozenset[str]]) -> Mask:
        """Live rows that belong, each by itself, to one aggregate of every any-of set."""
        return self.alive & self.aggregates_by_row.all_of(any_ofs)[self.aggregates_by_row.of_row]

    def in_any_aggregate(self, aggregates: frozenset[str]) -> Mask:
        if not aggregates:
            return np.zeros(self.size, np.bool_)
        return self.aggregates_by_row.any_of(aggregates)[self.aggregates_by_row.of_row]

    def sharing(self) -> Rows:
        """Live rows of sharing providers (``MISC_SHARES_VIA_AGGREGATE``)."""
        return self._cached(  # type: ignore[return-value]
            "sharing",
            lambda: np.flatnonzero(self.alive & self.with_any_trait(frozenset({SHARING_TRAIT}))),
        )

    def tree_rows(self, anchors: Rows) -> tuple[Rows, Rows, Rows]:
        """The live rows of each anchor's tree, in row order, one anchor after the other:
        (rows, begins, ends), anchor ``i`` owning ``rows[begins[i]:ends[i]]``."""

        def layout() -> tuple[Rows, Rows, Rows]:
            live = np.flatnonzero(self.alive)
            roots = self.root[live]
            order = live[np.argsort(roots, kind="stable")]
            size = np.bincount(roots, minlength=self.size).astype(np.int64)
            return order, np.cumsum(size) - size, size

        order, start, size = cast(tuple[Rows, Rows, Rows], self._cached("trees", layout))
        counts = size[anchors]
        ends = np.cumsum(counts)
        begins = ends - counts
        total = int(ends[-1]) if len(ends) else 0
        return order[np.repeat(start[anchors] - begins, counts) + np.arange(total)], begins, ends

    def sharing_anchor_mask(self, row: int) -> Mask:
        """The other trees a sharing provider may serve, as a mask over their root rows: the
        roots of every provider sharing an aggregate with ``row``, less ``row``'s own root."""

        def make() -> Mask:
            members = self.alive & self.in_any_aggregate(self.aggregates_of(row))
            found = self.mask(self.root[members])
            found[self.root[row]] = False
            return found

        return self._cached(("sharing_anchor_mask", row), make)  # type: ignore[return-value]
