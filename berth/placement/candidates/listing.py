"""The answers of many anchors at once, as a table, where no two slots compete.

When no two slots compete (``solver.Slots.compete``), an anchor's answers are the combinations
of its slots' options that meet the checks on a complete answer (the unnamed group's traits,
``same_subtree``, one provider per tree before 1.29); the search would list them anchor by
anchor, round-robin, an object each: at 100,000 hosts about 10 µs per answer, most of a query
without a limit. Here they are made for a whole slice of anchors with array operations, in the
same order (the first answer of every anchor, then the second of every anchor with two, and so
on), and ``templates.listed_texts`` writes their JSON one template per shape.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from berth.placement.candidates.groups import SlotOptions
from berth.placement.candidates.index import NO_ROW, Mask, ProviderIndex, Rows, distinct
from berth.placement.candidates.slices import TreeSlice

Table = npt.NDArray[np.int64]


# Each slot's group suffix and amounts, in ``solver.Slots`` order.
Plan = tuple[tuple[str, tuple[tuple[str, int], ...]], ...]


@dataclass(frozen=True, slots=True)
class ListedAnswers:
    """The answers: ``chosen[i, s]`` is the row (of the whole index) that answer ``i`` takes
    for slot ``s`` of ``plan``."""

    plan: Plan
    chosen: Table

    @classmethod
    def of(cls, options: list[SlotOptions], chosen: Table) -> ListedAnswers:
        return cls(tuple((o.suffix, o.resources) for o in options), chosen)

    def head(self, limit: int) -> ListedAnswers:
        return ListedAnswers(self.plan, self.chosen[:limit])

    def allocated(self, size: int) -> Rows:
        """Rows some answer takes resources from, ascending (``size``: rows in the index)."""
        taking = [s for s, (_, wanted) in enumerate(self.plan) if wanted]
        return distinct(self.chosen[:, taking].ravel(), size)


@dataclass(frozen=True, slots=True)
class Checks:
    """What a complete answer must meet beyond its slots' options (see ``solver._Rules``)."""

    # The unnamed group's any-of trait sets, met by the providers of its slots (the first
    # ``unnamed``) together.
    required: tuple[frozenset[str], ...] = ()
    unnamed: int = 0
    # Sets of group suffixes whose providers must have one among them above all the others.
    same_subtree: tuple[frozenset[str], ...] = ()
    # Before 1.29: no two providers taking resources in one tree.
    one_per_tree: bool = False

    def __bool__(self) -> bool:
        return bool(self.required or self.same_subtree or self.one_per_tree)


@dataclass(frozen=True, slots=True)
class Part:
    """A slice's anchors, with every slot's options under each: ``per_slot[s]`` is the options
    of slot ``s``, anchor after anchor (each anchor's in row order), and how many each has."""

    index: ProviderIndex
    options: list[SlotOptions]
    per_slot: list[tuple[Rows, Rows]]

    @classmethod
    def of(cls, trees: TreeSlice, options: list[SlotOptions], anchors: Rows) -> Part:
        # The anchors' trees, and the anchor of each of their rows: the same for every slot.
        rows, begins, ends = trees.tree_rows(anchors)
        owners = np.repeat(np.arange(len(anchors)), ends - begins)
        return cls(
            trees.whole, options, [_options(trees, o, anchors, rows, owners) for o in options]
        )

    def combinations(self) -> int:
        """How many combinations of options its anchors have in all."""
        counts = np.stack([count for _, count in self.per_slot])
        return int(counts.prod(axis=0, dtype=np.int64).sum())

    def first_round(self, checks: Checks) -> Table:
        """Each anchor's first answer, anchor after anchor. Without checks it is the slots'
        first options."""
        if checks:
            every, nth = self.every(checks)
            return every[nth == 0]
        return np.stack([rows[np.cumsum(count) - count] for rows, count in self.per_slot], axis=1)

    def every(self, checks: Checks) -> tuple[Table, Rows]:
        """Every answer of every anchor, round by round (within a round in anchor order), and
        the round of each: the combinations of its options, in ``itertools.product``'s order,
        that meet ``checks``."""
        counts = np.stack([count for _, count in self.per_slot])
        answers = counts.prod(axis=0, dtype=np.int64)
        # Anchor after anchor, each anchor's combinations in order.
        anchor = np.repeat(np.arange(counts.shape[1]), answers)
        nth = np.arange(len(anchor)) - np.repeat(np.cumsum(answers) - answers, answers)
        chosen = np.empty((len(anchor), len(self.per_slot)), np.int64)
        # As itertools.product: the last slot's option changes fastest.
        stride = np.ones(counts.shape[1], np.int64)
        for s in reversed(range(len(self.per_slot))):
            rows, count = self.per_slot[s]
            begins = np.cumsum(count) - count
            chosen[:, s] = rows[begins[anchor] + (nth // stride[anchor]) % count[anchor]]
            stride *= count
        if checks:
            kept = _meeting(chosen, self.index, checks, self.options)
            chosen, anchor = chosen[kept], anchor[kept]
            # An anchor's k-th answer is now its k-th that met the checks.
            nth = np.arange(len(anchor)) - np.searchsorted(anchor, anchor)
        # The k-th answer of every anchor in turn, as the round-robin gives them.
        order = np.lexsort((anchor, nth))
        return chosen[order], nth[order]


def list_answers(parts: list[Part], sharing: Rows, checks: Checks) -> ListedAnswers:
    """Every answer of every anchor, in the round-robin's order, over slices of trees (in the
    slices' order): the first answer of every anchor, then the second of every anchor with
    two, and so on. An answer made only of ``sharing`` providers (which several anchors reach)
    comes once, where it first comes."""
    chosen, nth = zip(*(part.every(checks) for part in parts), strict=True)
    # Each slice's answers are in round-robin order; a stable sort by round interleaves them.
    order = np.argsort(np.concatenate(nth), kind="stable")
    return ListedAnswers.of(parts[0].options, _once(np.concatenate(chosen)[order], sharing))


def first_answers(parts: list[Part], rounds: list[Table], sharing: Rows) -> ListedAnswers:
    """The round-robin's first round over slices, from each slice's ``Part.first_round``; an
    answer made only of ``sharing`` providers once."""
    return ListedAnswers.of(parts[0].options, _once(np.concatenate(rounds), sharing))


def _meeting(
    chosen: Table, index: ProviderIndex, checks: Checks, options: list[SlotOptions]
) -> Mask:
    """Which answers meet ``checks``, as ``solver._combinations`` and ``solver._answer`` judge
    them one by one."""
    kept = np.ones(len(chosen), np.bool_)
    trait_set = index.traits_by_row.of_row
    for any_of in checks.required:
        has = index.traits_by_row.any_of(any_of)
        met = np.zeros(len(chosen), np.bool_)
        for s in range(checks.unnamed):
            met |= has[trait_set[chosen[:, s]]]
        kept &= met
    for together in checks.same_subtree:
        members = chosen[:, [s for s, o in enumerate(options) if o.suffix in together]]
        kept &= _one_above_the_others(members, index.parent)
    if checks.one_per_tree:
        taking = [s for s, o in enumerate(options) if o.resources]
        for a, b in itertools.combinations(taking, 2):
            apart = chosen[:, a] != chosen[:, b]
            kept &= ~apart | (index.root[chosen[:, a]] != index.root[chosen[:, b]])
    return kept


def _one_above_the_others(members: Table, parent: Rows) -> Mask:
    """Whether, in each row, one member is the others' ancestor (or the same provider)."""
    found = np.zeros(len(members), np.bool_)
    for top in range(members.shape[1]):
        above = np.ones(len(members), np.bool_)
        for other in range(members.shape[1]):
            if other != top:
                above &= _at_or_above(members[:, top], members[:, other], parent)
        found |= above
    return found


def _at_or_above(top: Rows, rows: Rows, parent: Rows) -> Mask:
    """Whether ``top`` is each row or one of its ancestors."""
    found = top == rows
    current = rows
    while (current >= 0).any():
        current = np.where(current >= 0, parent[np.maximum(current, 0)], NO_ROW)
        found |= current == top
    return found


def _options(
    trees: TreeSlice, slot: SlotOptions, anchors: Rows, rows: Rows, owners: Rows
) -> tuple[Rows, Rows]:
    """``SlotOptions.gather`` for every anchor at once: the options, anchor after anchor, each
    anchor's in row order, and how many each anchor has. ``rows``: the anchors' trees, one
    after the other, each in row order; ``owners``: the anchor (its place) of each."""
    keep = slot.own[rows]
    found, of = trees.rows[rows[keep]], owners[keep]
    if slot.shared:
        option, owner = [found], [of]
        for row, served in slot.shared:
            at = np.flatnonzero(served[anchors])
            owner.append(at)
            option.append(np.full(len(at), trees.rows[row]))
        found, of = np.concatenate(option), np.concatenate(owner)
        order = np.lexsort((found, of))
        found, of = found[order], of[order]
    # Else already in order: anchor after anchor, each tree's rows ascending.
    return found, np.bincount(of, minlength=len(anchors))


def _once(chosen: Table, sharing: Rows) -> Table:
    """``chosen`` less the repeats of answers made only of sharing providers: where no two
    slots compete, two answers are the same exactly when they choose the same rows."""
    if not len(sharing) or not len(chosen):
        return chosen
    shared = np.flatnonzero(np.isin(chosen, sharing).all(axis=1))
    if not len(shared):
        return chosen
    _, first = np.unique(chosen[shared], axis=0, return_index=True)
    return np.delete(chosen, np.setdiff1d(shared, shared[first]), axis=0)
