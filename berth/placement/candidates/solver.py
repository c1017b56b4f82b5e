"""The allocation candidate search.

Pipeline, cheapest first, over one slice of trees at a time (``slices``):
1. ``anchor_roots``: roots allowed by ``root_required``.
2. ``group_tables``: per group, vectorised over the slice, the (anchor, provider) pairs that may
   serve it (names checked here).
3. Per anchor common to all groups, a lazy depth-first search over the slots (one per class of
   the unnamed group, one per suffixed group), pruning a branch as soon as summed amounts on a
   provider exceed its capacity or max_unit, or ``group_policy=isolate`` is broken; complete
   assignments are then checked for the unnamed group's traits, ``same_subtree`` and (before
   1.29) the one-provider-per-tree rule. Where no two slots of a slice can want one provider
   (``Slots.compete``), every option fits whatever the others took: the answers are the
   combinations that pass those checks, made for the whole slice at once as a table of chosen
   rows (``listing``; not randomised), or listed anchor by anchor without the search's
   bookkeeping (randomised, or when a slice has too many combinations to judge at once).
4. The anchors' searches are interleaved round-robin, so a ``limit`` spreads over trees and
   stops the search as soon as it is reached: an anchor's slots are only looked up when its
   search starts, and a slice's passes only run when the anchors before it did not give enough
   answers, so a limited query touches only the trees it needs. Identical answers (same amounts
   per provider and same mappings) reached from different anchors are returned once.

Slicing keeps the answers and their order: slices follow row order (or one shuffled order of the
roots, when randomised), and the round-robin's first round takes each anchor's first answer in
that order, so a limit met in the first round is met by the same anchors. Without a limit, or
when a name in the request is unknown (the error, or the empty answer, depends on every tree;
see ``groups``), there is one slice holding every row.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass
from typing import NamedTuple

import numpy as np

from berth.placement.candidates.budget import CHECK_MASK, UNLIMITED, Budget
from berth.placement.candidates.groups import (
    GroupTable,
    NoCandidates,
    SlotOptions,
    anchor_roots,
    group_tables,
    has_traits,
)
from berth.placement.candidates.index import Mask, ProviderIndex, Rows, distinct
from berth.placement.candidates.listing import (
    Checks,
    ListedAnswers,
    Part,
    Plan,
    Table,
    first_answers,
    list_answers,
)
from berth.placement.candidates.request import CandidatesRequest
from berth.placement.candidates.slices import TreeSlice


class AllocationRequest(NamedTuple):
    """One candidate: amounts per provider and class, and which providers served each group.
    (A tuple: a query may make a few hundred thousand.)"""

    resources: dict[str, dict[str, int]]
    mappings: dict[str, tuple[str, ...]]
    # Some provider of the answer is not a sharing one: no other anchor can give it.
    only_here: bool = False

    def key(self) -> tuple[frozenset[tuple[str, str, int]], frozenset[tuple[str, tuple[str, ...]]]]:
        """What makes two candidates the same answer (the anchor does not)."""
        return (
            frozenset(
                (rp, rc, n) for rp, amounts in self.resources.items() for rc, n in amounts.items()
            ),
            frozenset(self.mappings.items()),
        )


# An answer where no two slots compete: the row each slot took, in ``Slots`` order.
Chosen = tuple[int, ...]
Answer = AllocationRequest | Chosen


@dataclass(frozen=True, slots=True)
class Candidates:
    # As objects, or as a table where every combination was listed at once (``listing``).
    answers: tuple[AllocationRequest, ...] | ListedAnswers
    # Rows of the providers to summarise, in row order.
    summaries: Rows
    # Every class named by any group (summaries before 1.27 show only these).
    requested_classes: frozenset[str]
    # The index's uuids, by row: what names the rows of listed answers.
    uuids: Sequence[str]
    sharing: frozenset[int]

    @property
    def allocation_requests(self) -> tuple[AllocationRequest, ...]:
        """The answers as objects (listed ones made now)."""
        if not isinstance(self.answers, ListedAnswers):
            return self.answers
        plan = self.answers.plan
        return tuple(
            _direct_answer(plan, chosen, self.uuids, self.sharing)
            for chosen in self.answers.chosen.tolist()
        )


def allocation_candidates(
    index: ProviderIndex,
    request: CandidatesRequest,
    *,
    randomize: bool,
    rng: random.Random,
    slice_roots: int = 64,
    budget: Budget = UNLIMITED,
) -> Candidates:
    """The candidates for ``request``. Under a limit the trees are taken in slices, the first
    of at least ``slice_roots`` roots (see ``_slices``); without one, all at once. Where no two
    slots compete and candidates are not randomised, the answers are made as a table
    (``listing``); otherwise anchor by anchor, round-robin. The search stops with
    ``budget.SearchTooCostly`` once it has spent ``budget``."""
    requested = frozenset(rc for g in request.groups for rc in g.resources)
    shuffle = np.random.default_rng(rng.getrandbits(64)) if randomize else None
    sharing = frozenset(index.sharing().tolist())

    rules = _Rules.of(index, request, sharing)

    def candidates(
        answers: tuple[AllocationRequest, ...] | ListedAnswers, used: Rows
    ) -> Candidates:
        return Candidates(
            answers, _summaries(index, request, used), requested, index.uuids, sharing
        )

    # What every slice's slots put where (the same in every slice): names listed answers.
    plan: Plan = ()

    def search(slots: Slots, options: Options, headroom: Headroom) -> Iterator[Answer]:
        nonlocal plan
        plan = plan or slots.plan
        if randomize:
            options = [tuple(rng.sample(o, len(o))) for o in options]
        if slots.compete:
            return _search(index, rules, slots, options, headroom, budget)
        return _combinations(index, rules, slots, options, budget)

    anchors: Iterator[tuple[Slots, Options, Headroom]]
    if request.limit is None or not _names_known(index, request):
        # Every tree at once: the answer, or the error for an unknown name, depends on all.
        trees = TreeSlice(index)
        every = _common_anchors(trees, request, shuffle)
        if every is None:
            return candidates((), _NO_ROWS)
        tables, common = every
        options, slots = _slots(trees, tables, request)
        if request.limit is None and not randomize and not slots.compete:
            part = Part.of(trees, options, common)
            budget.check_listed(part.combinations())
            listed = list_answers([part], index.sharing(), _checks(rules, slots))
            return candidates(listed, listed.allocated(index.size))
        anchors = _anchor_slots(trees, options, slots, common, min(_CHUNK, request.limit or _CHUNK))
    else:
        slices = _slices(index, request, shuffle, slice_roots, budget)
        if not randomize:
            listed, slices = _listed_slices(slices, request, rules, index.sharing())
            if listed is not None:
                return candidates(listed, listed.allocated(index.size))
        anchors = _sliced_anchors(slices, request)
    # Answers reached from two anchors are returned once. Only sharing providers serve more than
    # one anchor, so an answer with any other provider cannot come twice and skips the check.
    found: dict[object, Answer] = {}
    for answer in _round_robin(anchors, search, budget):
        if isinstance(answer, AllocationRequest):
            key = object() if answer.only_here else answer.key()
        elif not sharing or not sharing.issuperset(answer):
            key = object()
        else:
            key = _direct_answer(plan, answer, index.uuids, sharing).key()
        found.setdefault(key, answer)
        if request.limit is not None and len(found) >= request.limit:
            break
    answers = list(found.values())
    if answers and not any(isinstance(a, AllocationRequest) for a in answers):
        listed = ListedAnswers(plan, np.asarray(answers, np.int64))
        return candidates(listed, listed.allocated(index.size))
    areqs = tuple(
        a if isinstance(a, AllocationRequest) else _direct_answer(plan, a, index.uuids, sharing)
        for a in answers
    )
    used = np.fromiter({index.row_of[uuid] for areq in areqs for uuid in areq.resources}, np.int64)
    return candidates(areqs, used)


_NO_ROWS = np.empty(0, np.int64)


def _checks(rules: _Rules, slots: Slots) -> Checks:
    return Checks(rules.required, slots.unnamed, rules.same_subtree, rules.one_per_tree)


# Under a limit, answers are made as a table only while there are at most this many combinations
# of options per answer wanted (in a slice, when checks may throw most of them out; in all, when
# every round is needed): past it the search, which stops at the limit, is the cheaper way.
_COMBINATIONS_PER_ANSWER = 16


Slice = tuple[TreeSlice, list[GroupTable], Rows]


def _slices(
    index: ProviderIndex,
    request: CandidatesRequest,
    shuffle: np.random.Generator | None,
    slice_roots: int,
    budget: Budget,
) -> Iterator[Slice]:
    """Under a limit, slice after slice of trees with anchors (each with its group tables and
    its anchors), asked for only while the ones before gave too few answers. The first slice
    has ``max(limit, slice_roots)`` roots; the next ones are sized from the share of roots that
    were anchors so far, and at least double the one before (four times while there were none).

    Not randomised, the search starts past the roots that had no anchor when the same request
    was last searched, unless capacity was freed since (``ProviderIndex.no_anchor_prefix``):
    where candidates are not randomised, the first hosts fill up first, and every query would
    otherwise go over them again."""
    assert request.limit is not None
    roots = index.roots()
    key = None
    if shuffle is not None:
        roots = shuffle.permutation(roots)
    else:
        key = _prefix_key(request)
    skipped = index.no_anchor_prefix.get(key, 0) if key is not None else 0
    start, size, anchors = skipped, max(request.limit, slice_roots), 0
    while start < len(roots):
        budget.check()
        if shuffle is None:
            trees = _kept_slice(index, start, size)
        else:
            trees = TreeSlice(index, np.sort(roots[start : start + size]))
        start += size
        found = _common_anchors(trees, request, shuffle)
        if found is not None and len(found[1]):
            tables, common = found
            if key is not None and not anchors:
                first_root = int(trees.rows[common[0]])
                index.no_anchor_prefix[key] = int(np.searchsorted(roots, first_root))
            yield trees, tables, common
            anchors += len(common)
        # Still short of the limit: every anchor so far gave at most one answer yet. Trees
        # without room are skipped four times as fast.
        if anchors:
            wanted = (request.limit - anchors) * (start - skipped) // anchors
            size = max(2 * size, wanted + wanted // 4)
        else:
            size *= 4
    if key is not None and not anchors:
        index.no_anchor_prefix[key] = len(roots)


# How many slices of trees an index keeps (each about 16 bytes per row of the index, and more
# per row it holds).
_SLICES_KEPT = 8


def _kept_slice(index: ProviderIndex, start: int, size: int) -> TreeSlice:
    """The slice of the roots ``start`` to ``start + size`` in row order, kept in the index
    until its trees change: the same few slices are asked for query after query (a claim's
    query: the 64 roots past those already full), and making one is a third of a millisecond."""
    kept: dict[tuple[int, int], TreeSlice] = index.derived("tree slices", dict)
    trees = kept.get((start, size))
    if trees is None:
        if len(kept) >= _SLICES_KEPT:
            kept.clear()
        trees = kept[start, size] = TreeSlice(index, index.roots()[start : start + size])
    return trees.fresh()


def _sliced_anchors(
    slices: Iterator[Slice], request: CandidatesRequest
) -> Iterator[tuple[Slots, Options, Headroom]]:
    """Every anchor of the slices, with its slots."""
    first = min(_CHUNK, request.limit or _CHUNK)
    for trees, tables, common in slices:
        options, slots = _slots(trees, tables, request)
        yield from _anchor_slots(trees, options, slots, common, first)
        first = _CHUNK


def _listed_slices(
    slices: Iterator[Slice], request: CandidatesRequest, rules: _Rules, sharing: Rows
) -> tuple[ListedAnswers | None, Iterator[Slice]]:
    """Under a limit, where no slice's slots compete, the answers as a table: the first answer
    of each anchor, slice after slice, until there are ``limit``; when the trees run out first,
    every answer in the round-robin's order. Otherwise None, and the slices again from the
    first, for the search."""
    assert request.limit is not None
    seen: list[Slice] = []
    parts: list[Part] = []
    rounds: list[Table] = []
    checks = Checks()
    for tree_slice in slices:
        seen.append(tree_slice)
        trees, tables, common = tree_slice
        options, slots = _slots(trees, tables, request)
        if slots.compete:
            return None, itertools.chain(seen, slices)
        checks = _checks(rules, slots)
        parts.append(Part.of(trees, options, common))
        if checks and parts[-1].combinations() > _COMBINATIONS_PER_ANSWER * request.limit:
            return None, itertools.chain(seen, slices)
        rounds.append(parts[-1].first_round(checks))
        firsts = first_answers(parts, rounds, sharing)
        if len(firsts.chosen) >= request.limit:
            return firsts.head(request.limit), iter(())
    # The trees ran out first: every round of every anchor, unless there are too many.
    if not parts or sum(p.combinations() for p in parts) > _COMBINATIONS_PER_ANSWER * request.limit:
        return None, iter(seen)
    return list_answers(parts, sharing, checks).head(request.limit), iter(())


def _prefix_key(request: CandidatesRequest) -> Hashable:
    """What decides which roots are anchors: the request but its limit (a request holds dicts,
    so it is not a key itself)."""
    groups = tuple(
        (
            g.suffix,
            tuple(g.resources.items()),
            g.required,
            g.forbidden,
            g.member_of,
            g.forbidden_aggs,
            g.in_tree,
        )
        for g in request.groups
    )
    return (groups, request.group_policy, request.root_required, request.root_forbidden)


def _names_known(index: ProviderIndex, request: CandidatesRequest) -> bool:
    traits = set(request.root_required | request.root_forbidden)
    for group in request.groups:
        if not group.resources.keys() <= index.resource_classes:
            return False
        traits.update(itertools.chain(group.forbidden, *group.required))
    return traits <= index.traits


def _common_anchors(
    trees: TreeSlice, request: CandidatesRequest, shuffle: np.random.Generator | None
) -> tuple[list[GroupTable], Rows] | None:
    """The slice's group tables, and its anchors able to serve every group (in row order, or
    shuffled); None when some group has nothing in the slice."""
    try:
        allowed = anchor_roots(trees, request)
        tables = group_tables(trees, request, allowed)
    except NoCandidates:
        return None
    served = np.logical_and.reduce([table.anchors for table in tables])
    if request.group_policy == "isolate":
        served &= _enough_for_isolation(trees, tables)
    common = np.flatnonzero(served)
    if shuffle is not None:
        common = shuffle.permutation(common)
    return tables, common


def _enough_for_isolation(trees: TreeSlice, tables: list[GroupTable]) -> Mask:
    """Anchors where the suffixed groups' options hold at least one provider per group: with
    ``group_policy=isolate`` no two of them may share one, so the others cannot succeed. (This
    spares the search the trees that could never take a wide request.)"""
    suffixed = [s for t in tables for s in t.slots if s.rc is None]
    if len(suffixed) < 2:
        return trees.alive
    own = np.logical_or.reduce([s.own for s in suffixed])
    providers = np.bincount(trees.root[own], minlength=trees.size)
    sharing: dict[int, Mask] = {}
    for slot in suffixed:
        for row, served in slot.shared:
            sharing[row] = sharing[row] | served if row in sharing else served
    for served in sharing.values():
        providers += served
    return providers >= len(suffixed)


_CHUNK = 256

# (row, resource class) -> (capacity left, max_unit), for the options of the anchors being visited
Headroom = dict[tuple[int, str], tuple[int, int]]
# One anchor's options (rows of the whole index) for each slot, in ``Slots`` order.
Options = Sequence[tuple[int, ...]]


@dataclass(frozen=True, slots=True)
class Slots:
    """The slots every anchor fills, in search order: one per class of the unnamed group first
    (so its trait check runs as soon as they are filled), then one per suffixed group."""

    suffixes: tuple[str, ...]
    resources: tuple[tuple[tuple[str, int], ...], ...]
    # A whole suffixed group on one provider (``group_policy=isolate`` applies to these).
    whole_group: tuple[bool, ...]
    unnamed: int
    # Whether two slots may compete for one provider: want a class of it both, or, under
    # ``group_policy=isolate``, take it for two whole groups. When none may, every option fits
    # whatever the other slots took, so every combination of options is placed.
    compete: bool

    @property
    def plan(self) -> Plan:
        return tuple(zip(self.suffixes, self.resources, strict=True))

    @classmethod
    def of(cls, trees: TreeSlice, options: list[SlotOptions], isolate: bool) -> Slots:
        return cls(
            tuple(o.suffix for o in options),
            tuple(o.resources for o in options),
            tuple(o.rc is None for o in options),
            sum(o.rc is not None for o in options),
            _compete(trees, options, isolate),
        )


def _compete(trees: TreeSlice, options: list[SlotOptions], isolate: bool) -> bool:
    """Whether two slots may want one provider of the slice (see ``Slots.compete``)."""
    rows = []
    for o in options:
        mask = o.own.copy()
        mask[[row for row, _ in o.shared]] = True
        rows.append(mask)
    for (a, a_rows), (b, b_rows) in itertools.combinations(zip(options, rows, strict=True), 2):
        both_whole = isolate and a.rc is None and b.rc is None
        shared_class = {rc for rc, _ in a.resources} & {rc for rc, _ in b.resources}
        if (both_whole or shared_class) and (a_rows & b_rows).any():
            return True
    return False


def _slots(
    trees: TreeSlice, tables: list[GroupTable], request: CandidatesRequest
) -> tuple[list[SlotOptions], Slots]:
    """The slots' options over the slice, in search order: the unnamed group's slots first,
    so its trait check runs as soon as they are filled."""
    options = sorted((s for t in tables for s in t.slots), key=lambda s: s.suffix != "")
    return options, Slots.of(trees, options, request.group_policy == "isolate")


def _anchor_slots(
    trees: TreeSlice, options: list[SlotOptions], slots: Slots, anchors: Rows, first: int
) -> Iterator[tuple[Slots, Options, Headroom]]:
    """Each anchor (a row of the whole index) with its slots and their options' headroom,
    looked up a chunk of anchors at a time with a few array operations, ``first`` anchors at
    first (a small limit needs few), then chunks twice as large up to ``_CHUNK``."""
    columns = trees.whole.columns
    start, size = 0, max(first, 1)
    while start < len(anchors):
        chunk = anchors[start : start + size]
        start, size = start + size, min(size * 2, _CHUNK)
        per_option = [o.gather(trees, chunk) for o in options]
        headroom: Headroom = {}
        for o, found in zip(options, per_option, strict=True):
            rows = sorted(set(itertools.chain.from_iterable(found)))
            at = np.asarray(rows, np.int64)
            for rc, _ in o.resources:
                column = columns[rc]
                entries = column.entry_of[at]
                left = (column.capacity[entries] - column.used[entries]).tolist()
                most = column.max_unit[entries].tolist()
                headroom.update(
                    zip([(r, rc) for r in rows], zip(left, most, strict=True), strict=True)
                )
        for found in zip(*per_option, strict=True):
            yield slots, found, headroom


# The round-robin looks at the budget once per 64 anchors (``visited & _ANCHOR_MASK == 0``).
_ANCHOR_MASK = 63


def _round_robin(
    anchors: Iterator[tuple[Slots, Options, Headroom]],
    search: Callable[[Slots, Options, Headroom], Iterator[Answer]],
    budget: Budget,
) -> Iterator[Answer]:
    """First answer of every anchor in turn (starting each search only when reached), then the
    second of every anchor that had one, and so on."""
    active = []
    for visited, (slots, options, headroom) in enumerate(anchors, 1):
        # The clock costs half a microsecond, a twentieth of a small anchor's search.
        if not visited & _ANCHOR_MASK:
            budget.check()
        started = search(slots, options, headroom)
        areq = next(started, None)
        if areq is not None:
            yield areq
            active.append(started)
    while active:
        still = []
        for started in active:
            areq = next(started, None)
            if areq is not None:
                yield areq
                still.append(started)
        active = still


@dataclass(frozen=True, slots=True)
class _Rules:
    """What every anchor's search checks, worked out once per request."""

    # The unnamed group's traits, met by its providers together.
    required: tuple[frozenset[str], ...]
    isolate: bool
    same_subtree: tuple[frozenset[str], ...]
    # Before 1.29, when any tree exists: one provider per tree.
    one_per_tree: bool
    sharing: frozenset[int]

    @classmethod
    def of(
        cls, index: ProviderIndex, request: CandidatesRequest, sharing: frozenset[int]
    ) -> _Rules:
        unnamed = request.group("")
        return cls(
            required=unnamed.required if unnamed is not None else (),
            isolate=request.group_policy == "isolate",
            same_subtree=request.same_subtree,
            one_per_tree=not request.nested_aware and index.has_trees,
            sharing=sharing,
        )


def _search(
    index: ProviderIndex,
    rules: _Rules,
    slots: Slots,
    options: Options,
    headroom: Headroom,
    budget: Budget,
) -> Iterator[AllocationRequest]:
    """Every answer under ``anchor``, depth-first over the slots, pruning as soon as summed
    amounts on a provider pass its capacity left or max_unit; ``budget`` looked at every
    ``CHECK_EVERY`` steps."""
    required = rules.required
    n_unnamed = slots.unnamed
    if required and n_unnamed == 0:
        # Traits met by no provider at all.
        return
    n_slots = len(options)
    resources, whole_group = slots.resources, slots.whole_group
    isolate = rules.isolate
    amounts: dict[tuple[int, str], int] = {}
    chosen = [0] * n_slots
    isolated: set[int] = set()
    traits_of = index.traits_of

    def undo(depth: int) -> None:
        row = chosen[depth]
        for rc, n in resources[depth]:
            left = amounts[row, rc] - n
            if left:
                amounts[row, rc] = left
            else:
                del amounts[row, rc]
        if whole_group[depth]:
            isolated.discard(row)

    # Without recursion: ``tried[d]`` is how many options of slot ``d`` have been tried; the
    # slots above ``depth`` are placed.
    tried = [0] * n_slots
    depth = 0
    steps = 0
    while depth >= 0:
        steps += 1
        if not steps & CHECK_MASK:
            budget.check()
        if depth == n_slots:
            areq = _answer(index, rules, slots, chosen, amounts)
            if areq is not None:
                yield areq
            depth -= 1
            if depth >= 0:
                undo(depth)
            continue
        wanted = resources[depth]
        group = whole_group[depth]
        choices = options[depth]
        at = tried[depth]
        placed = False
        while at < len(choices):
            row = choices[at]
            at += 1
            if group and row in isolated:
                continue
            for rc, n in wanted:
                total = amounts.get((row, rc), 0) + n
                left, max_unit = headroom[row, rc]
                if total > left or total > max_unit:
                    break
            else:
                placed = True
                break
        if not placed:
            tried[depth] = 0
            depth -= 1
            if depth >= 0:
                undo(depth)
            continue
        tried[depth] = at
        for rc, n in wanted:
            amounts[row, rc] = amounts.get((row, rc), 0) + n
        if group and isolate:
            isolated.add(row)
        chosen[depth] = row
        if (
            depth + 1 == n_unnamed
            and required
            and not has_traits(frozenset().union(*map(traits_of, chosen[:n_unnamed])), required)
        ):
            undo(depth)
            continue
        depth += 1


def _combinations(
    index: ProviderIndex, rules: _Rules, slots: Slots, options: Options, budget: Budget
) -> Iterator[Answer]:
    """What ``_search`` gives when no two slots compete: every combination of options, in the
    same order, less those failing the unnamed group's traits or ``_answer``'s rules. Without
    ``same_subtree`` or the one-provider-per-tree rule, an answer is just the rows chosen
    (``_direct_answer`` makes its object, ``templates`` its text)."""
    required = rules.required
    n_unnamed = slots.unnamed
    if required and n_unnamed == 0:
        return
    traits_of = index.traits_of
    checked = bool(rules.same_subtree) or rules.one_per_tree
    for steps, chosen in enumerate(itertools.product(*options), 1):
        if not steps & CHECK_MASK:
            budget.check()
        if required and not has_traits(
            frozenset().union(*map(traits_of, chosen[:n_unnamed])), required
        ):
            continue
        if checked:
            amounts = {
                (row, rc): n
                for row, wanted in zip(chosen, slots.resources, strict=True)
                for rc, n in wanted
            }
            areq = _answer(index, rules, slots, chosen, amounts)
            if areq is not None:
                yield areq
            continue
        yield chosen


def _direct_answer(
    plan: Plan,
    chosen: Sequence[int],
    uuids: Sequence[str],
    sharing: frozenset[int],
) -> AllocationRequest:
    """The answer of options chosen for slots that do not compete: each slot's amounts go in
    as they are, since no two slots put one class on one provider."""
    resources: dict[str, dict[str, int]] = {}
    by_suffix: dict[str, list[str]] = {}
    for (suffix, wanted), row in zip(plan, chosen, strict=True):
        uuid = uuids[row]
        if wanted:
            held = resources.get(uuid)
            if held is None:
                resources[uuid] = dict(wanted)
            else:
                held.update(wanted)
        listed = by_suffix.get(suffix)
        if listed is None:
            by_suffix[suffix] = [uuid]
        elif uuid not in listed:
            listed.append(uuid)
    return AllocationRequest(
        resources,
        {s: (u[0],) if len(u) == 1 else tuple(sorted(u)) for s, u in by_suffix.items()},
        not sharing or not sharing.issuperset(chosen),
    )


def _answer(
    index: ProviderIndex,
    rules: _Rules,
    slots: Slots,
    chosen: Sequence[int],
    amounts: dict[tuple[int, str], int],
) -> AllocationRequest | None:
    """The answer of a complete assignment, or None when it breaks ``same_subtree`` or (before
    1.29) the one-provider-per-tree rule."""
    by_suffix: dict[str, list[int]] = {}
    for suffix, row in zip(slots.suffixes, chosen, strict=True):
        rows = by_suffix.get(suffix)
        if rows is None:
            by_suffix[suffix] = [row]
        elif row not in rows:
            rows.append(row)
    for suffixes in rules.same_subtree:
        members = set().union(*(by_suffix[s] for s in suffixes))
        if len(members) > 1:
            above = {m: index.ancestors(m) for m in members}
            if not any(all(m in above[other] for other in members) for m in members):
                return None
    if rules.one_per_tree:
        roots = [index.root_of(row) for row in {row for row, _ in amounts}]
        if len(roots) != len(set(roots)):
            return None
    uuids = index.uuids
    resources: dict[str, dict[str, int]] = {}
    for (row, rc), n in amounts.items():
        uuid = uuids[row]
        if uuid in resources:
            resources[uuid][rc] = n
        else:
            resources[uuid] = {rc: n}
    mappings = {
        suffix: (uuids[rows[0]],) if len(rows) == 1 else tuple(sorted(uuids[r] for r in rows))
        for suffix, rows in by_suffix.items()
    }
    sharing = rules.sharing
    return AllocationRequest(resources, mappings, not sharing or not sharing.issuperset(chosen))


def _summaries(index: ProviderIndex, request: CandidatesRequest, used: Rows) -> Rows:
    """Every provider in the trees the candidates take resources from (``used``); before 1.29
    (when any tree exists) only the providers the candidates take from."""
    if not request.nested_aware and index.has_trees:
        return np.sort(used)
    rows, _, _ = index.tree_rows(distinct(index.root[used], index.size))
    return np.sort(rows)
