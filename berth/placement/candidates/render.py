"""The JSON body of ``GET /allocation_candidates`` for each microversion."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any, TypeVar

import numpy as np
import orjson

from berth.placement.candidates.index import CAPACITY_CEILING, ProviderIndex, Rows
from berth.placement.candidates.solver import AllocationRequest, Candidates

Version = tuple[int, int]


def _allocations_list(areq: AllocationRequest) -> dict[str, Any]:
    """Before 1.12::

    {"allocations": [{"resource_provider": {"uuid": RP}, "resources": {"VCPU": 1}}]}
    """
    return {
        "allocations": [
            {"resource_provider": {"uuid": uuid}, "resources": dict(amounts)}
            for uuid, amounts in areq.resources.items()
        ]
    }


def _allocations_dict(areq: AllocationRequest, version: Version) -> dict[str, Any]:
    """From 1.12 (``mappings`` from 1.34)::

    {"allocations": {RP: {"resources": {"VCPU": 1}}}, "mappings": {"": [RP]}}
    """
    body: dict[str, Any] = {
        "allocations": {
            uuid: {"resources": dict(amounts)} for uuid, amounts in areq.resources.items()
        }
    }
    if version >= (1, 34):
        body["mappings"] = {suffix: list(uuids) for suffix, uuids in areq.mappings.items()}
    return body


def summaries(
    index: ProviderIndex, rows: Rows, requested: frozenset[str], version: Version
) -> dict[str, dict[str, Any]]:
    """{RP: {"resources": {"VCPU": {"capacity": 8, "used": 0}}, "traits": [...] (1.17),
    "parent_provider_uuid": ..., "root_provider_uuid": ... (1.29)}}; before 1.27 only the
    requested classes are listed. Built column by column, so the cost is a few list walks."""
    uuids = index.uuids
    row_list = rows.tolist()
    resources: dict[int, dict[str, dict[str, int]]] = {row: {} for row in row_list}
    for rc, column in index.columns.items():
        if version < (1, 27) and rc not in requested:
            continue
        entries = column.entry_of[rows]
        have = entries >= 0
        held = entries[have]
        for row, entry, cap, used in zip(
            rows[have].tolist(),
            held.tolist(),
            column.capacity[held].tolist(),
            column.used[held].tolist(),
            strict=True,
        ):
            if cap >= CAPACITY_CEILING:
                cap = column.exact_capacity(entry)
            resources[row][rc] = {"capacity": cap, "used": used}
    body: dict[str, dict[str, Any]] = {
        uuids[row]: {"resources": resources[row]} for row in row_list
    }
    if version >= (1, 17):
        ordered = _ordered_trait_sets(index)
        for row, set_id in zip(row_list, index.traits_by_row.of_row[rows].tolist(), strict=True):
            body[uuids[row]]["traits"] = list(ordered[set_id])
    if version >= (1, 29):
        parents = index.parent[rows].tolist()
        roots = index.root[rows].tolist()
        for row, parent, root in zip(row_list, parents, roots, strict=True):
            summary = body[uuids[row]]
            summary["parent_provider_uuid"] = uuids[parent] if parent >= 0 else None
            summary["root_provider_uuid"] = uuids[root]
    return body


def _ordered_trait_sets(index: ProviderIndex) -> list[tuple[str, ...]]:
    """Each distinct trait set in the order upstream lists traits (the order they were made)."""
    rank = index.trait_rank
    return [
        tuple(sorted(traits, key=lambda t: (rank.get(t, -1), t)))
        for traits in index.traits_by_row.sets
    ]


# How many rendered pieces an index keeps (summaries, about 300 bytes each; provider list items,
# about 700).
_FRAGMENTS_KEPT = 100_000

T = TypeVar("T")


def kept_per_row(
    index: ProviderIndex, rows: Rows, form: object, make: Callable[[Rows], list[T]]
) -> list[T]:
    """``make(rows)``, each row's piece kept in the index under ``form`` until the row changes:
    queries mostly show the providers the last ones did, and only the rows that changed since
    need rendering again. More rows than are kept are made afresh."""
    if len(rows) > _FRAGMENTS_KEPT:
        return make(rows)
    kept = index.fragments
    at = rows.tolist()
    missing = [row for row in at if form not in kept.get(row, ())]
    if missing:
        if len(kept) + len(missing) > _FRAGMENTS_KEPT:
            kept.clear()
        for row, piece in zip(missing, make(np.asarray(missing, np.int64)), strict=True):
            kept.setdefault(row, {})[form] = piece
    return [kept[row][form] for row in at]  # type: ignore[misc]


def _summary_fragments(
    index: ProviderIndex, rows: Rows, requested: frozenset[str], version: Version
) -> dict[str, Any]:
    """``summaries`` as already-serialised JSON, kept per row. Before 1.27 a summary depends on
    the request's classes and is not kept; more summaries than are kept go out as plain data
    (serialising each apart first would hold every summary twice)."""
    if version < (1, 27) or len(rows) > _FRAGMENTS_KEPT:
        return summaries(index, rows, requested, version)
    uuids = index.uuids

    def make(missing: Rows) -> list[orjson.Fragment]:
        fresh = summaries(index, missing, requested, version)
        return [orjson.Fragment(_json(fresh[uuids[row]])) for row in missing.tolist()]

    pieces = kept_per_row(index, rows, ("summary", version >= (1, 29)), make)
    return dict(zip([uuids[row] for row in rows.tolist()], pieces, strict=True))


def _json(value: Any) -> bytes:
    try:
        return orjson.dumps(value)
    except TypeError:
        # orjson stops at 64-bit integers; a capacity with a huge allocation ratio goes past.
        return json.dumps(value, separators=(",", ":")).encode()


def render(candidates: Candidates, index: ProviderIndex, version: Version) -> dict[str, Any]:
    """The body, for ``orjson.dumps``: from 1.27 the summaries in it are already serialised."""
    if version >= (1, 12):
        areqs = [_allocations_dict(a, version) for a in candidates.allocation_requests]
    else:
        areqs = [_allocations_list(a) for a in candidates.allocation_requests]
    rows = np.asarray(candidates.summaries, np.int64)
    return {
        "allocation_requests": areqs,
        "provider_summaries": _summary_fragments(
            index, rows, candidates.requested_classes, version
        ),
    }
