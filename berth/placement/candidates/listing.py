"""Every answer of a request at once, as a table, where the search would list combinations.

Without a limit, when no two slots compete (``solver.Slots.compete``) and nothing checks a
complete answer (the unnamed group's traits, ``same_subtree``, one provider per tree), the
answers under each anchor are every combination of its slots' options, and the search would list
them anchor by anchor, round-robin, an object each: at 100,000 hosts about 10 µs per answer,
most of the query. Here they are made for every anchor at once with array operations, in the
same order (the first answer of every anchor, then the second of every anchor with two, and so
on), and ``render.listed_texts`` writes their JSON one template per shape.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import numpy.typing as npt

from berth.placement.candidates.groups import SlotOptions
from berth.placement.candidates.index import Rows
from berth.placement.candidates.slices import TreeSlice

Table = npt.NDArray[np.int64]


@dataclass(frozen=True, slots=True)
class ListedAnswers:
    """The answers: ``chosen[i, s]`` is the row (of the whole index) that answer ``i`` takes
    for slot ``s``, slots in ``solver.Slots`` order."""

    suffixes: tuple[str, ...]
    resources: tuple[tuple[tuple[str, int], ...], ...]
    chosen: Table

    @property
    def plan(self) -> tuple[tuple[str, tuple[tuple[str, int], ...]], ...]:
        return tuple(zip(self.suffixes, self.resources, strict=True))

    @classmethod
    def of(cls, options: list[SlotOptions], chosen: Table) -> ListedAnswers:
        return cls(tuple(o.suffix for o in options), tuple(o.resources for o in options), chosen)

    def head(self, limit: int) -> ListedAnswers:
        return ListedAnswers(self.suffixes, self.resources, self.chosen[:limit])

    def allocated(self) -> Rows:
        """Rows some answer takes resources from."""
        taking = [s for s, wanted in enumerate(self.resources) if wanted]
        return np.unique(self.chosen[:, taking])


def list_answers(
    parts: list[tuple[TreeSlice, list[SlotOptions], Rows]], sharing: Rows
) -> ListedAnswers:
    """Every combination of every anchor's options, in the round-robin's order, over slices of
    trees (each with its slots' options and its anchors, in the slices' order): the first
    answer of every anchor, then the second of every anchor with two, and so on. An answer made
    only of ``sharing`` providers (which several anchors reach) comes once, where it first
    comes."""
    chosen, nth = zip(*(_every(*part) for part in parts), strict=True)
    # Each slice's answers are in round-robin order; a stable sort by round interleaves them.
    order = np.argsort(np.concatenate(nth), kind="stable")
    return ListedAnswers.of(parts[0][1], _once(np.concatenate(chosen)[order], sharing))


def first_answers(
    parts: list[tuple[TreeSlice, list[SlotOptions], Rows]], sharing: Rows
) -> ListedAnswers:
    """The first answer of every anchor (its slots' first options), slice after slice: the
    round-robin's first round; an answer made only of ``sharing`` providers once."""
    chosen = [
        np.stack(
            [
                rows[np.cumsum(count) - count]
                for rows, count in (_options(trees, o, anchors) for o in options)
            ],
            axis=1,
        )
        for trees, options, anchors in parts
    ]
    return ListedAnswers.of(parts[0][1], _once(np.concatenate(chosen), sharing))


def _every(trees: TreeSlice, options: list[SlotOptions], anchors: Rows) -> tuple[Table, Rows]:
    """Every answer of every anchor, round by round (within a round in anchor order), and the
    round of each."""
    per_slot = [_options(trees, o, anchors) for o in options]
    counts = np.stack([c for _, c in per_slot])
    answers = counts.prod(axis=0, dtype=np.int64)
    anchor = np.repeat(np.arange(len(anchors)), answers)
    # The k-th answer of its anchor: the round-robin gives every anchor's k-th in turn.
    nth = np.arange(len(anchor)) - np.repeat(np.cumsum(answers) - answers, answers)
    order = np.lexsort((anchor, nth))
    anchor, nth = anchor[order], nth[order]
    chosen = np.empty((len(anchor), len(options)), np.int64)
    # As itertools.product: the last slot's option changes fastest.
    stride = np.ones(len(anchors), np.int64)
    for s in reversed(range(len(options))):
        rows, count = per_slot[s]
        begins = np.cumsum(count) - count
        chosen[:, s] = rows[begins[anchor] + (nth // stride[anchor]) % count[anchor]]
        stride *= count
    return chosen, nth


def _options(trees: TreeSlice, slot: SlotOptions, anchors: Rows) -> tuple[Rows, Rows]:
    """``SlotOptions.gather`` for every anchor at once: the options, anchor after anchor, each
    anchor's in row order, and how many each anchor has."""
    rows, begins, ends = trees.tree_rows(anchors)
    keep = slot.own[rows]
    option = [trees.rows[rows[keep]]]
    owner = [np.repeat(np.arange(len(anchors)), ends - begins)[keep]]
    for row, served in slot.shared:
        at = np.flatnonzero(served[anchors])
        owner.append(at)
        option.append(np.full(len(at), trees.rows[row]))
    found, of = np.concatenate(option), np.concatenate(owner)
    order = np.lexsort((found, of))
    return found[order], np.bincount(of, minlength=len(anchors))


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
