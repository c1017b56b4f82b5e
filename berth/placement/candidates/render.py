"""The JSON body of ``GET /allocation_candidates`` for each microversion."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import orjson

from berth.placement.candidates.index import CAPACITY_CEILING, ProviderIndex, Rows, distinct
from berth.placement.candidates.kept import T
from berth.placement.candidates.listing import ListedAnswers
from berth.placement.candidates.solver import AllocationRequest, Candidates
from berth.placement.candidates.templates import listed_texts, ordered_trait_sets, summary_texts

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


def allocations_dict(areq: AllocationRequest, version: Version) -> dict[str, Any]:
    """From 1.12 (``mappings`` from 1.34)::

    {"allocations": {RP: {"resources": {"VCPU": 1}}}, "mappings": {"": [RP]}}

    The answer's own dicts go in as they are (each answer has its own) and mappings as tuples,
    which serialise as lists: a query may render a few hundred thousand."""
    allocations = {uuid: {"resources": amounts} for uuid, amounts in areq.resources.items()}
    if version >= (1, 34):
        return {"allocations": allocations, "mappings": areq.mappings}
    return {"allocations": allocations}


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
        ordered = ordered_trait_sets(index)
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


def kept_per_row(
    index: ProviderIndex, rows: Rows, form: object, make: Callable[[Rows], list[T]]
) -> list[T]:
    """``make(rows)``, each row's piece kept in the index under ``form`` until the row changes
    (``kept.KeptTexts``). More rows than are kept are made afresh."""
    if len(rows) > index.fragments.most:
        return make(rows)
    return index.fragments.get(form, rows, index.size, make)


def _summary_texts(index: ProviderIndex, rows: Rows, version: Version) -> list[bytes]:
    """The summaries of ``rows`` (from 1.27) as ``"RP":{...}``, encoded and kept: a whole
    tree's in one piece (commas between) when ``rows`` are whole trees one after the other, as
    from 1.29 they usually are; else row by row. (A piece per row, the body's join spent half
    a millisecond finding 6,000 small objects in cold memory.)"""
    with_tree = version >= (1, 29)
    roots = distinct(index.root[rows], index.size)
    trees, _, _ = index.tree_rows(roots)
    if np.array_equal(trees, rows):

        def make_trees(missing: Rows) -> list[bytes]:
            tree_rows, begins, ends = index.tree_rows(missing)
            texts = summary_texts(index, tree_rows, version, True)
            return [
                ",".join(texts[b:e]).encode()
                for b, e in zip(begins.tolist(), ends.tolist(), strict=True)
            ]

        return kept_per_row(index, roots, ("tree summaries", with_tree), make_trees)

    def make(missing: Rows) -> list[bytes]:
        return [text.encode() for text in summary_texts(index, missing, version, True)]

    return kept_per_row(index, rows, ("summary", with_tree), make)


def _answer_texts(candidates: Candidates, index: ProviderIndex, version: Version) -> list[bytes]:
    """Each answer's JSON (from 1.27): written from templates when listed as a table."""
    answers = candidates.answers
    if isinstance(answers, ListedAnswers):
        return listed_texts(index, answers, version)
    return [orjson.dumps(allocations_dict(a, version)) for a in answers]


def render_json(candidates: Candidates, index: ProviderIndex, version: Version) -> bytes | None:
    """From 1.27, the body as JSON, the same bytes as ``orjson.dumps(render(...))``: every
    answer's and summary's text (the summaries kept per row) joined once, straight into the
    body. Joined into arrays first and then into the body by ``orjson``, the 2 MB of an answer
    of 1,000 candidates was copied twice more, on memory the answer's own work had left cold.
    None before 1.27, where a summary depends on the request's classes and is data."""
    if version < (1, 27):
        return None
    rows = np.asarray(candidates.summaries, np.int64)
    answers = _listed(_answer_texts(candidates, index, version), b"[", b"]")
    provided = _listed(_summary_texts(index, rows, version), b"{", b"}")
    return b"".join(
        [b'{"allocation_requests":', *answers, b',"provider_summaries":', *provided, b"}"]
    )


def render(candidates: Candidates, index: ProviderIndex, version: Version) -> dict[str, Any]:
    """The body, for ``orjson.dumps``: from 1.27 its answers and summaries are already
    serialised (``render_json`` writes the same body in one piece). Before, summaries are data
    that may hold an integer past 64 bits, which ``request.dumps`` then serialises with the
    standard library, and so the answers too."""
    if version >= (1, 27):
        rows = np.asarray(candidates.summaries, np.int64)
        return {
            "allocation_requests": _fragment(_answer_texts(candidates, index, version), b"[]"),
            "provider_summaries": _fragment(_summary_texts(index, rows, version), b"{}"),
        }
    areqs: list[dict[str, Any]]
    if version >= (1, 12):
        areqs = [allocations_dict(a, version) for a in candidates.allocation_requests]
    else:
        areqs = [_allocations_list(a) for a in candidates.allocation_requests]
    rows = np.asarray(candidates.summaries, np.int64)
    return {
        "allocation_requests": areqs,
        "provider_summaries": summaries(index, rows, candidates.requested_classes, version),
    }


def _fragment(texts: list[bytes], brackets: bytes) -> orjson.Fragment:
    return orjson.Fragment(b"".join(_listed(texts, brackets[:1], brackets[1:])))


def _listed(texts: list[bytes], opening: bytes, closing: bytes) -> list[bytes]:
    """Pieces of JSON text as the pieces of one array or object, for one join: commas between
    them, the brackets pieces of their own (added to the first and last text, they copied it:
    the answers are usually one text of megabytes)."""
    if not texts:
        return [opening, closing]
    pieces = [b","] * (2 * len(texts) + 1)
    pieces[1::2] = texts
    pieces[0], pieces[-1] = opening, closing
    return pieces
