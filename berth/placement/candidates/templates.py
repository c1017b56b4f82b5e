"""JSON text for many similar objects at once: provider summaries and listed answers.

Objects of one shape (a summary's classes, trait set and parent; an answer's providers shared
between slots) differ only in numbers and uuids, so each shape gets one %-template and an object
costs one formatting call over values gathered column by column with array operations. Built as
dicts, each cost an object per field and then orjson's walk over them: at 100,000 hosts without
a limit, 600,000 summaries and 200,000 answers, seconds of the query.

Uuids and names go in unescaped: the API only stores canonical uuids, class and trait names are
upper-case letters, digits and underscores, and group suffixes letters, digits, ``_`` and ``-``.
The text is the same, byte for byte, as orjson makes of the objects (tests hold both to it).
"""

from __future__ import annotations

import itertools
import re
from typing import Any

import numpy as np
import numpy.typing as npt
import orjson

from berth.placement.candidates.index import (
    CAPACITY_CEILING,
    InventoryColumn,
    ProviderIndex,
    Rows,
)
from berth.placement.candidates.listing import ListedAnswers, Plan

Version = tuple[int, int]


def ordered_trait_sets(index: ProviderIndex) -> list[tuple[str, ...]]:
    """Each distinct trait set in the order upstream lists traits (the order they were made)."""
    rank = index.trait_rank
    return [
        tuple(sorted(traits, key=lambda t: (rank.get(t, -1), t)))
        for traits in index.traits_by_row.sets
    ]


def summary_texts(index: ProviderIndex, rows: Rows, version: Version, keyed: bool) -> list[str]:
    """Each row's summary (from 1.27), ``"RP":{...}`` when ``keyed``, in ``rows`` order: the
    text of ``render.summaries`` serialised."""
    columns = [
        (rc, column, entries)
        for rc, column in index.columns.items()
        if ((entries := column.entry_of[rows]) >= 0).any()
    ]
    parents = index.parent[rows]
    sets = index.traits_by_row.of_row[rows]
    ordered = ordered_trait_sets(index)
    uuids = index.uuid_array()
    keys = [(sets, len(ordered)), (parents >= 0, 2)]
    shapes = _groups([*keys, *((entries >= 0, 2) for _, _, entries in columns)], len(rows))
    texts: list[str] = []
    for at in shapes:
        first = at[0]
        shape = [
            (rc, column, entries[at]) for rc, column, entries in columns if entries[first] >= 0
        ]
        template = ['"%s":' if keyed else "", '{"resources":{']
        template.append(",".join(f'"{rc}":{{"capacity":%d,"used":%d}}' for rc, _, _ in shape))
        template += ['},"traits":', orjson.dumps(ordered[sets[first]]).decode()]
        values: list[list[Any]] = []
        at_rows = rows[at]
        if keyed:
            values.append(uuids[at_rows].tolist())
        for _, column, entries in shape:
            values += [_capacities(column, entries), column.used[entries].tolist()]
        if version >= (1, 29):
            if parents[first] >= 0:
                template.append(',"parent_provider_uuid":"%s"')
                values.append(uuids[parents[at]].tolist())
            else:
                template.append(',"parent_provider_uuid":null')
            template.append(',"root_provider_uuid":"%s"')
            values.append(uuids[index.root[at_rows]].tolist())
        texts += _filled("".join(template) + "}", values, len(at))
    return _in_order(shapes, texts)


def listed_texts(index: ProviderIndex, listed: ListedAnswers, version: Version) -> list[bytes]:
    """The listed answers (from 1.12), in order, as the text of their objects as ``render``
    makes them, encoded (it goes into the body as it is): one piece per run of answers of one
    shape, the answers in it separated by commas. (Usually a few pieces: with one per answer,
    the body's join spent a millisecond finding a thousand small objects in cold memory.)

    An answer's shape is which of its slots took one provider, and, for a group spread over
    several providers, the order of their uuids (its mapping lists them sorted)."""
    chosen = listed.chosen
    count, n_slots = chosen.shape
    uuids = index.uuid_array()
    encoded = index.uuid_bytes_array()
    keys: list[tuple[npt.NDArray[Any], int]] = []
    for s in range(n_slots):
        # The first slot that took the same provider.
        first = np.full(count, s)
        for t in reversed(range(s)):
            first = np.where(chosen[:, t] == chosen[:, s], t, first)
        keys.append((first, n_slots))
    mappings = version >= (1, 34)
    if mappings:
        for slots in _slots_by_suffix(listed.plan).values():
            for a, b in itertools.combinations(slots, 2):
                apart = np.flatnonzero(chosen[:, a] != chosen[:, b])
                before = np.zeros(count, np.bool_)
                before[apart] = uuids[chosen[apart, a]] < uuids[chosen[apart, b]]
                keys.append((before, 2))
    shapes = _groups(keys, count)
    shape_of = np.empty(count, np.int64)
    made: list[tuple[bytes, list[int]]] = []
    for shape, at in enumerate(shapes):
        shape_of[at] = shape
        template, sources = _answer_template(listed, chosen[at[0]].tolist(), uuids, mappings)
        made.append((template.encode(), sources))
    if not count:
        return []
    ends = [*(np.flatnonzero(np.diff(shape_of)) + 1).tolist(), count]
    fixed = index.uuid_bytes_matrix()
    texts: list[bytes] = []
    begin = 0
    for end in ends:
        template, sources = made[shape_of[begin]]
        rows = chosen[begin:end, sources]
        if fixed is not None and end - begin >= _ARRAY_RUN:
            texts.append(_run(template, fixed, rows))
        else:
            values = encoded[rows].ravel().tolist()
            texts.append(b",".join([template] * (end - begin)) % tuple(values))
        begin = end
    return texts


# From this many answers of one shape in a row, writing them as an array (``_run``) costs less
# than %-formatting them: its fixed cost is some 25 µs, a twelfth of a microsecond per answer.
_ARRAY_RUN = 256


def _run(template: bytes, uuids: npt.NDArray[np.uint8], rows: Rows) -> bytes:
    """The texts of a run of answers of one shape, commas between: ``template`` with the
    uuid of ``rows[i, k]`` for its ``k``-th ``%s``, every answer at once. The template's text
    (uuids left blank) is copied into an array of bytes a row per answer and each uuid column
    written over it, one array operation each: a third less than %-formatting, which parses
    the template and takes the values one by one for every answer."""
    width = uuids.shape[1]
    pieces = _pieces(template)
    blank = np.frombuffer((b"\0" * width).join(pieces) + b",", np.uint8)
    text = np.tile(blank, (len(rows), 1))
    # Each answer's uuids as single items (``V`` of the uuids' width), so a column is written
    # with one item copy per answer rather than a strided copy per byte.
    whole = uuids.view(f"V{width}").ravel()
    at = 0
    for k, piece in enumerate(pieces[:-1]):
        at += len(piece)
        column = np.ndarray((len(rows),), whole.dtype, text, at, (len(blank),))
        column[...] = whole[rows[:, k]]
        at += width
    return text.tobytes()[:-1]


def _pieces(template: bytes) -> list[bytes]:
    """The template's text around its ``%s``, each ``%%`` made ``%`` again."""
    pieces, piece, at = [], b"", 0
    for found in re.finditer(rb"%[s%]", template):
        piece += template[at : found.start()]
        if found.group() == b"%%":
            piece += b"%"
        else:
            pieces.append(piece)
            piece = b""
        at = found.end()
    return [*pieces, piece + template[at:]]


def _answer_template(
    listed: ListedAnswers, chosen: list[int], uuids: npt.NDArray[Any], mappings: bool
) -> tuple[str, list[int]]:
    """The template of answers shaped as ``chosen``, and the slot whose provider fills each of
    its uuids. Providers come in the order slots first take them, each with its slots' amounts
    in slot order, as ``solver._direct_answer`` builds them."""
    amounts: dict[int, list[str]] = {}
    first_slot: dict[int, int] = {}
    by_suffix: dict[str, list[int]] = {}
    for s, ((suffix, wanted), row) in enumerate(zip(listed.plan, chosen, strict=True)):
        first_slot.setdefault(row, s)
        if wanted:
            amounts.setdefault(row, []).extend(f'"{rc}":{n}' for rc, n in wanted)
        rows = by_suffix.setdefault(suffix, [])
        if row not in rows:
            rows.append(row)
    sources = list(map(first_slot.get, amounts))
    allocations = ",".join('"%s":{"resources":{' + ",".join(a) + "}}" for a in amounts.values())
    template = '{"allocations":{' + allocations + "}"
    if mappings:
        listed_maps = []
        for suffix, rows in by_suffix.items():
            if len(rows) > 1:
                rows = sorted(rows, key=lambda row: uuids[row])
            sources += [first_slot[row] for row in rows]
            name = orjson.dumps(suffix).decode().replace("%", "%%")
            listed_maps.append(name + ":[" + ",".join(['"%s"'] * len(rows)) + "]")
        template += ',"mappings":{' + ",".join(listed_maps) + "}"
    return template + "}", sources  # type: ignore[return-value]


def _slots_by_suffix(plan: Plan) -> dict[str, list[int]]:
    found: dict[str, list[int]] = {}
    for s, (suffix, _) in enumerate(plan):
        found.setdefault(suffix, []).append(s)
    return found


def _groups(keys: list[tuple[npt.NDArray[Any], int]], size: int) -> list[Rows]:
    """Positions (0 to ``size`` - 1) of the items alike in every key, a key being a column of
    values each below its radix; group by group, positions ascending within a group."""
    combined = np.zeros(size, np.int64)
    # Below this product of radices no combined value can pass 2**62: no need to look.
    bound = 1
    for values, radix in keys:
        bound *= max(radix, 1)
        if bound >= 2**62 and int(combined.max(initial=0)) >= 2**62 // max(radix, 1):
            combined = np.unique(combined, return_inverse=True)[1].astype(np.int64)
            bound = len(combined) * max(radix, 1)
        combined = combined * radix + values
    if size and (combined == combined[0]).all():
        # All alike, as the answers of one flavor on many hosts usually are.
        return [np.arange(size)]
    order = np.argsort(combined, kind="stable")
    breaks = np.flatnonzero(np.diff(combined[order])) + 1
    return np.split(order, breaks) if size else []


def _filled(template: str, values: list[list[Any]], count: int) -> list[str]:
    if not values:
        return [template] * count
    return [template % row for row in zip(*values, strict=True)]


def _in_order(groups: list[Rows], texts: list[str]) -> list[str]:
    """``texts``, made group by group, back in the order of the positions."""
    position = np.empty(len(texts), np.int64)
    if groups:
        position[np.concatenate(groups)] = np.arange(len(texts))
    return [texts[at] for at in position.tolist()]


def _capacities(column: InventoryColumn, entries: Rows) -> list[int]:
    """Capacities of ``entries``, exact past the index's 64-bit ceiling."""
    capacities = column.capacity[entries].tolist()
    for at in np.flatnonzero(column.capacity[entries] >= CAPACITY_CEILING).tolist():
        capacities[at] = column.exact_capacity(int(entries[at]))
    return capacities  # type: ignore[no-any-return]
