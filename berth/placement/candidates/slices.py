"""Some trees of the index, for a search that only needs some of them.

A query under a ``limit`` needs only as many trees as give it that many answers, so the solver
runs its vectorised passes over a slice of trees at a time (see ``solver``) instead of over every
row of the index: at 100,000 trees a claim's query with ``limit=20`` touches a few hundred rows,
not 600,000.

A ``TreeSlice`` renumbers the rows it holds 0 to n-1, tree after tree in the order of its roots,
so that masks over it are small and its anchors come in the order of its roots. It holds every
row of its trees and every sharing provider (a sharing provider may serve any tree), and one more
row, dead, at the end: the root of every sharing provider whose tree is outside the slice, so
that such a provider may serve the slice's trees but never be an anchor. It answers the questions
the per-group passes ask (``groups``) with the same meaning as the index does over all rows.
"""

from __future__ import annotations

import copy
from collections.abc import Iterable

import numpy as np

from berth.placement.candidates.index import Mask, ProviderIndex, Rows


class TreeSlice:
    def __init__(self, index: ProviderIndex, roots: Rows | None = None) -> None:
        """The trees of ``roots`` (live roots in row order), or every row when None."""
        self.whole = index
        if roots is None:
            rows = np.arange(index.size)
            self._local_of = rows
            local_root = index.root.copy()
            self._roots = index.roots()
        else:
            tree, _, _ = index.tree_rows(roots)
            sharing = index.sharing()
            at = np.searchsorted(roots, index.root[sharing])
            inside = roots[np.minimum(at, len(roots) - 1)] == index.root[sharing]
            rows = np.concatenate([tree, sharing[~inside]])
            # Not zeroed: only the slice's rows are ever looked up.
            self._local_of = np.empty(index.size, np.int64)
            self._local_of[rows] = np.arange(len(rows))
            local_root = self._local_of[index.root[tree]]
            local_root = np.concatenate([local_root, np.full(len(rows) - len(tree), len(rows))])
            self._roots = self._local_of[roots]
        # Global row of each local row (the outside row excepted): the slice's trees one after
        # the other, then the sharing providers of other trees.
        self.rows: Rows = rows
        self.size = len(rows) + 1
        self.root: Rows = np.append(local_root, len(rows))
        self.alive: Mask = np.append(index.alive[rows], False)
        self._trait_set = np.append(index.traits_by_row.of_row[rows], 0)
        self._aggregate_set = np.append(index.aggregates_by_row.of_row[rows], 0)
        self._slice_roots = self.mask(self._roots)
        self._sharing_anchors: dict[int, Mask] = {}
        self._fitting: dict[tuple[str, int], Mask] = {}

    def fresh(self) -> TreeSlice:
        """The same slice, without what it found about usage (kept slices outlive claims)."""
        found = copy.copy(self)
        found._fitting = {}
        return found

    @property
    def traits(self) -> frozenset[str]:
        return self.whole.traits

    @property
    def resource_classes(self) -> frozenset[str]:
        return self.whole.resource_classes

    def roots(self) -> Rows:
        """The slice's roots (its possible anchors), in row order."""
        return self._roots

    def mask(self, rows: Rows) -> Mask:
        found = np.zeros(self.size, np.bool_)
        found[rows] = True
        found[-1] = False
        return found

    def fitting(self, rc: str, amount: int) -> Mask:
        """Rows with inventory of ``rc`` able to take one more allocation of ``amount``."""
        # Groups often ask the same (several ports of one size); callers change what they get.
        if (rc, amount) not in self._fitting:
            column = self.whole.columns.get(rc)
            if column is None:
                found = np.zeros(self.size, np.bool_)
            else:
                found = np.append(column.fits(column.entry_of[self.rows], amount), False)
            self._fitting[rc, amount] = found
        return self._fitting[rc, amount].copy()

    def with_traits(self, required: Iterable[frozenset[str]]) -> Mask:
        """Live rows having, by themselves, one trait of every any-of set."""
        return self.alive & self.whole.traits_by_row.all_of(required)[self._trait_set]

    def with_any_trait(self, names: frozenset[str]) -> Mask:
        if not names:
            return np.zeros(self.size, np.bool_)
        return self.whole.traits_by_row.any_of(names)[self._trait_set]

    def in_aggregates(self, any_ofs: Iterable[frozenset[str]]) -> Mask:
        """Live rows that belong, each by itself, to one aggregate of every any-of set."""
        return self.alive & self.whole.aggregates_by_row.all_of(any_ofs)[self._aggregate_set]

    def in_any_aggregate(self, aggregates: frozenset[str]) -> Mask:
        if not aggregates:
            return np.zeros(self.size, np.bool_)
        return self.whole.aggregates_by_row.any_of(aggregates)[self._aggregate_set]

    def tree_mask(self, uuid: str) -> Mask | None:
        """The rows in the same tree as provider ``uuid``; None when there is no such provider."""
        row = self.whole.row(uuid)
        if row is None:
            return None
        return np.append(self.whole.root[self.rows] == self.whole.root_of(row), False)

    def sharing(self) -> Rows:
        """Rows of sharing providers (``MISC_SHARES_VIA_AGGREGATE``): all of the index's."""
        return self._local_of[self.whole.sharing()]

    def sharing_anchor_mask(self, row: int) -> Mask:
        """The slice's trees a sharing provider may serve, besides its own (as root rows)."""
        if row not in self._sharing_anchors:
            served = self.whole.sharing_anchor_mask(int(self.rows[row]))[self.rows]
            # Sharing providers of other trees are in the slice, but not as anchors.
            self._sharing_anchors[row] = np.append(served, False) & self._slice_roots
        return self._sharing_anchors[row]

    def tree_rows(self, anchors: Rows) -> tuple[Rows, Rows, Rows]:
        """As ``ProviderIndex.tree_rows``, for anchors and rows of the slice."""
        rows, begins, ends = self.whole.tree_rows(self.rows[anchors])
        return self._local_of[rows], begins, ends
