"""Placement's answer as the scheduler uses it: one Candidate per allocation request, tied to the
compute node (the root provider of the tree it draws from), and the free capacity per provider
that the answer's provider summaries tell, so that the instances of one request do not count the
same capacity twice.

An allocation request (1.34)::

    {"allocations": {RP: {"resources": {"VCPU": 1, ...}}, ...},
     "mappings": {"": [ROOT], "<port group id>": [BW_RP]}}

and the summaries (1.29)::

    {RP: {"resources": {"VCPU": {"capacity": 16, "used": 4}},
          "traits": [...], "root_provider_uuid": ROOT, "parent_provider_uuid": ...}}

A candidate's compute node is the one root among its providers that is not a sharing provider
(``MISC_SHARES_VIA_AGGREGATE``): a sharing provider (a storage pool) is a tree of its own.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Final

import msgspec

__all__ = [
    "SHARING_TRAIT",
    "Candidate",
    "KnownCandidates",
    "PlacementAnswer",
    "ProviderSummary",
    "ProviderUsage",
    "read_answer",
]

LOG = logging.getLogger(__name__)
SHARING_TRAIT: Final = "MISC_SHARES_VIA_AGGREGATE"


class ProviderSummary(msgspec.Struct, frozen=True, gc=False):
    """One provider of the answer's summaries: its tree and traits, and its resources left as
    Placement wrote them until a claim asks (an answer describes thousands of providers; a
    request of one instance reads the capacity of a few)."""

    resources: msgspec.Raw = msgspec.Raw(b"{}")
    traits: tuple[str, ...] = ()
    root_provider_uuid: str | None = None

    def free(self) -> dict[str, int]:
        """Class -> capacity less used."""
        return {rc: v.capacity - v.used for rc, v in _read_resources(self.resources).items()}


class _Inventory(msgspec.Struct, gc=False):
    capacity: int = 0
    used: int = 0


class _Amounts(msgspec.Struct, gc=False):
    resources: dict[str, int] = {}


class _AllocationRequest(msgspec.Struct, gc=False):
    allocations: dict[str, _Amounts] = {}
    mappings: dict[str, tuple[str, ...]] = {}


class _Answer(msgspec.Struct, gc=False):
    allocation_requests: list[_AllocationRequest] = []
    provider_summaries: dict[str, ProviderSummary] = {}


# Typed reading makes no dict for what the scheduler does not look at, and structs the
# collector does not track (gc=False: they hold no cycles): half the time of reading the
# whole answer into dicts, and the candidates come out with no second walk over dicts.
_read = msgspec.json.Decoder(_Answer).decode


class _Listed(msgspec.Struct, gc=False):
    """An answer with its allocation requests left as Placement wrote them."""

    allocation_requests: msgspec.Raw = msgspec.Raw(b"[]")
    provider_summaries: dict[str, ProviderSummary] = {}


_read_listed = msgspec.json.Decoder(_Listed).decode
_read_requests = msgspec.json.Decoder(list[msgspec.Raw]).decode
_read_request = msgspec.json.Decoder(_AllocationRequest).decode
_read_resources = msgspec.json.Decoder(dict[str, _Inventory]).decode


# Not frozen: a frozen dataclass sets each field through object.__setattr__, a third of the
# cost of parsing an answer of a thousand candidates. Nothing changes a candidate.
@dataclass(slots=True, eq=True)
class Candidate:
    # The compute node's provider uuid: how the candidate finds its HostState.
    root: str
    # Provider -> class -> amount.
    allocations: Mapping[str, Mapping[str, int]]
    # Suffix -> provider uuids (1.34); empty before.
    mappings: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The microversion the answer was asked at (how the claim must write it).
    version: str = "1.35"
    # Class -> amount taken from the compute node's own tree (not from sharing providers).
    host_amounts: Mapping[str, int] = field(default_factory=dict)

    def host_amount(self, rc: str) -> int:
        return self.host_amounts.get(rc, 0)

    @property
    def allocation_request(self) -> dict[str, Any]:
        """The allocation request as Placement gave it (what a claim writes): its allocations,
        and from 1.34 its mappings."""
        request: dict[str, Any] = {
            "allocations": {rp: {"resources": dict(a)} for rp, a in self.allocations.items()}
        }
        if _at_least(self.version, (1, 34)):
            request["mappings"] = {s: list(rps) for s, rps in self.mappings.items()}
        return request


@dataclass(frozen=True, slots=True)
class PlacementAnswer:
    """A ``GET /allocation_candidates`` answer as the scheduler uses it."""

    candidates: list[Candidate]
    summaries: Mapping[str, ProviderSummary]
    # Allocation requests in the answer, those left out included (did Placement stop at the
    # query's limit?).
    requests: int


def read_answer(body: bytes, version: str) -> PlacementAnswer:
    """Placement's answer (the JSON body it sent) with its candidates in Placement's order. An
    allocation request that does not land on exactly one compute node is logged and left out.
    A body that is not such an answer raises ``msgspec.ValidationError`` (a ``ValueError``)."""
    answer = _read(body)
    node_of = _nodes_of(answer.provider_summaries).get
    found = []
    for request in answer.allocation_requests:
        allocations = {rp: body.resources for rp, body in request.allocations.items()}
        nodes = tuple([node_of(rp, rp) for rp in allocations])
        made = _candidate(request, allocations, nodes, version)
        if made is not None:
            found.append(made)
    return PlacementAnswer(found, answer.provider_summaries, len(answer.allocation_requests))


# A candidate kept, and its providers' nodes when it was made.
_Known = tuple[Candidate, tuple[str | None, ...]]


@dataclass(frozen=True, slots=True)
class _Listing:
    """The last answer's allocation requests as Placement wrote them, read at ``version``
    into ``candidates`` (one for each: none was left out)."""

    requests: msgspec.Raw
    version: str
    candidates: list[Candidate]


class KnownCandidates:
    """The candidates of one query's answers, kept between answers by the text of their
    allocation requests, so that a candidate Placement proposes again is the same object and
    is not read again (an answer to the same query proposes mostly the same allocations; what
    changes is the summaries' usage). A candidate's compute node also depends on the summaries
    (a provider's root, whether it is shared), so a known candidate is taken again only while
    its providers' nodes are as they were when it was made. When the allocation requests are
    the last answer's to the byte (the usual case), so are its candidates, and the requests are
    not looked at one by one.

    Several passes may read at once: each reads the candidates kept before it began and keeps
    its own answer's."""

    def __init__(self) -> None:
        # The last answer's providers' nodes (``_nodes_of``), its allocation requests' text
        # -> the candidate and its providers' nodes, and its listing when none was left out.
        self._known: tuple[dict[str, str | None], dict[bytes, _Known], _Listing | None] = (
            {},
            {},
            None,
        )

    def read(self, body: bytes, version: str) -> PlacementAnswer:
        """``read_answer(body, version)``, with the candidates of earlier answers reused."""
        answer = _read_listed(body)
        trees = _nodes_of(answer.provider_summaries)
        before, known, listing = self._known
        # Every provider's node as before: every known candidate's too (the usual case).
        same = trees == before
        requests = answer.allocation_requests
        if (
            same
            and listing is not None
            and listing.version == version
            and listing.requests == requests
        ):
            found = list(listing.candidates)
            return PlacementAnswer(found, answer.provider_summaries, len(found))
        found, kept, listed = _reading(_read_requests(requests), known, trees, same, version)
        listing = None
        if len(found) == listed:
            listing = _Listing(msgspec.Raw(bytes(requests)), version, found)
        self._known = trees, kept, listing
        return PlacementAnswer(list(found), answer.provider_summaries, listed)


def _reading(
    requests: list[msgspec.Raw],
    known: Mapping[bytes, _Known],
    trees: Mapping[str, str | None],
    same: bool,
    version: str,
) -> tuple[list[Candidate], dict[bytes, _Known], int]:
    """The candidates of ``requests``, the ``known`` ones reused while their providers' nodes
    are as they were (all are when ``same``); those kept by their text; the number of
    requests."""
    node_of = trees.get
    kept: dict[bytes, _Known] = {}
    found = []
    for raw in requests:
        text = bytes(raw)
        seen = known.get(text)
        if (
            seen is not None
            and seen[0].version == version
            and (same or tuple([node_of(rp, rp) for rp in seen[0].allocations]) == seen[1])
        ):
            found.append(seen[0])
            kept[text] = seen
            continue
        request = _read_request(raw)
        allocations = {rp: body.resources for rp, body in request.allocations.items()}
        nodes = tuple([node_of(rp, rp) for rp in allocations])
        made = _candidate(request, allocations, nodes, version)
        if made is not None:
            found.append(made)
            kept[text] = made, nodes
    return found, kept, len(requests)


def _nodes_of(summaries: Mapping[str, ProviderSummary]) -> dict[str, str | None]:
    """Each provider's compute node as the summaries tell, or None for a sharing provider (a
    tree of its own); a provider they do not describe is its own node (``.get(rp, rp)``)."""
    return {
        rp: None if SHARING_TRAIT in summary.traits else summary.root_provider_uuid or rp
        for rp, summary in summaries.items()
    }


def _candidate(
    request: _AllocationRequest,
    allocations: Mapping[str, Mapping[str, int]],
    nodes: tuple[str | None, ...],
    version: str,
) -> Candidate | None:
    """The candidate of one allocation request (``nodes``: its providers' nodes, in order), or
    None, logged, when it does not land on exactly one compute node."""
    roots = set(nodes)
    roots.discard(None)
    if len(roots) != 1:
        LOG.warning(
            "allocation request on %d compute nodes ignored: %s",
            len(roots),
            msgspec.json.encode(request).decode(),
        )
        return None
    [root] = roots
    assert root is not None
    return Candidate(
        root, allocations, request.mappings, version, _host_amounts(allocations, nodes, root)
    )


def _at_least(version: str, wanted: tuple[int, int]) -> bool:
    major, minor = version.split(".")
    return (int(major), int(minor)) >= wanted


def _host_amounts(
    allocations: Mapping[str, Mapping[str, int]], nodes: tuple[str | None, ...], root: str
) -> Mapping[str, int]:
    """Class -> amount the candidate takes from its compute node's tree (``nodes``: each
    provider's node, in order)."""
    if len(allocations) == 1:
        [amounts] = allocations.values()
        return amounts
    found: dict[str, int] = {}
    if None not in nodes:  # the usual case: one tree, each class from one provider
        for amounts in allocations.values():
            found.update(amounts)
        if len(found) == sum(map(len, allocations.values())):
            return found
        found = {}
    for node, amounts in zip(nodes, allocations.values(), strict=True):
        if node == root:
            for rc, n in amounts.items():
                found[rc] = found.get(rc, 0) + n
    return found


class ProviderUsage:
    """Free capacity per provider and class, from the summaries, less what this request's
    earlier instances took. The same check decides whether a candidate still fits and what a
    claim consumes, so the two cannot disagree. A provider or class the summaries do not
    describe is not limited here (Placement's claim still is).

    A provider's free capacity is worked out the first time it is asked for: a request of one
    instance asks for few of the thousands of providers an answer may describe."""

    def __init__(self, summaries: Mapping[str, ProviderSummary] | None = None) -> None:
        self._summaries = summaries or {}
        self._free: dict[str, dict[str, int]] = {}
        # Providers an earlier instance took from: only their candidates can have stopped
        # fitting (Placement answered each candidate because it fitted then).
        self._taken: set[str] = set()

    def fits(self, candidate: Candidate) -> bool:
        if self._taken.isdisjoint(candidate.allocations):
            return True
        for rp, amounts in candidate.allocations.items():
            free = self._of(rp)
            for rc, n in amounts.items():
                left = free.get(rc)
                if left is not None and left < n:
                    return False
        return True

    def consume(self, candidate: Candidate) -> None:
        for rp, amounts in candidate.allocations.items():
            self._taken.add(rp)
            free = self._of(rp)
            for rc, n in amounts.items():
                if rc in free:
                    free[rc] -= n

    def root_of(self, rp: str) -> str | None:
        """The root of the provider's tree, as the summaries tell (None when they do not)."""
        summary = self._summaries.get(rp)
        return summary.root_provider_uuid if summary else None

    def free(self, rp: str, rc: str) -> int | None:
        return self._of(rp).get(rc)

    def _of(self, rp: str) -> dict[str, int]:
        found = self._free.get(rp)
        if found is None:
            summary = self._summaries.get(rp)
            found = self._free[rp] = summary.free() if summary else {}
        return found
