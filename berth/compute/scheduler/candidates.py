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

__all__ = ["SHARING_TRAIT", "Candidate", "ProviderUsage", "parse_candidates"]

LOG = logging.getLogger(__name__)
SHARING_TRAIT: Final = "MISC_SHARES_VIA_AGGREGATE"


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
    # The allocation request exactly as Placement gave it (what a claim writes).
    allocation_request: Mapping[str, Any] = field(default_factory=dict)
    # The microversion the answer was asked at (how the claim must write it).
    version: str = "1.35"
    # Class -> amount taken from the compute node's own tree (not from sharing providers).
    host_amounts: Mapping[str, int] = field(default_factory=dict)

    def host_amount(self, rc: str) -> int:
        return self.host_amounts.get(rc, 0)


def parse_candidates(answer: Mapping[str, Any], version: str) -> list[Candidate]:
    """Candidates of a ``GET /allocation_candidates`` answer in Placement's order. An
    allocation request that does not land on exactly one compute node is logged and left out."""
    summaries: Mapping[str, Mapping[str, Any]] = answer.get("provider_summaries") or {}
    # Per provider: its compute node, or None for a sharing provider (a tree of its own).
    # Worked out once per provider, not once per candidate that uses it.
    host_of: dict[str, str | None] = {}

    def node_of(rp: str) -> str | None:
        if rp not in host_of:
            summary = summaries.get(rp) or {}
            sharing = SHARING_TRAIT in (summary.get("traits") or ())
            host_of[rp] = None if sharing else str(summary.get("root_provider_uuid") or rp)
        return host_of[rp]

    found = []
    for request in answer.get("allocation_requests") or ():
        # Placement's own mappings, shared and not copied: nothing changes a candidate.
        allocations = {
            rp: body.get("resources") or {}
            for rp, body in (request.get("allocations") or {}).items()
        }
        nodes = [host_of[rp] if rp in host_of else node_of(rp) for rp in allocations]
        roots = set(nodes)
        roots.discard(None)
        if len(roots) != 1:
            LOG.warning("allocation request on %d compute nodes ignored: %s", len(roots), request)
            continue
        [root] = roots
        mappings = {s: tuple(rps) for s, rps in (request.get("mappings") or {}).items()}
        found.append(
            Candidate(
                root,
                allocations,
                mappings,
                request,
                version,
                _host_amounts(allocations, nodes, root),
            )
        )
    return found


def _host_amounts(
    allocations: Mapping[str, Mapping[str, int]], nodes: list[str | None], root: str
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

    def __init__(self, summaries: Mapping[str, Mapping[str, Any]] | None = None) -> None:
        self._summaries = summaries or {}
        self._free: dict[str, dict[str, int]] = {}
        # Providers an earlier instance took from: only their candidates can have stopped
        # fitting (Placement answered each candidate because it fitted then).
        self._taken: set[str] = set()

    @classmethod
    def from_summaries(cls, summaries: Mapping[str, Mapping[str, Any]]) -> ProviderUsage:
        return cls(summaries)

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
        return summary.get("root_provider_uuid") if summary else None

    def free(self, rp: str, rc: str) -> int | None:
        return self._of(rp).get(rc)

    def _of(self, rp: str) -> dict[str, int]:
        found = self._free.get(rp)
        if found is None:
            resources = (self._summaries.get(rp) or {}).get("resources") or {}
            found = self._free[rp] = {
                rc: int(v.get("capacity", 0)) - int(v.get("used", 0)) for rc, v in resources.items()
            }
        return found
