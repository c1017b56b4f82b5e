"""Requests that ask Placement the same thing, scheduled in one pass.

When many servers of one kind are booted at once, their ``select_destinations`` calls arrive
together, and each would ask Placement for the same candidates, read the same hosts and rank
them alike. Instead, the first of them (the leader) asks and reads once; the requests of the same
shape that arrive while it does so join its batch, and the leader places them one after the
other on what it found, as the instances of one multi-instance request are placed: each later
member sees what the earlier ones took. Each member keeps its own answer, and one that no host
can take fails alone. The passes of one shape take turns (``taking_turns``): a leader that
arrives while a pass of its shape runs waits for that pass's claims, its batch open meanwhile,
so under load each pass places more members, and no pass ranks hosts on an answer that misses
the claims of the one before.

Two requests have the same shape when everything but their server and port ids is equal: the
same flavor, image, project, zone and port requests, so the same Placement query once each
port's request group suffix is replaced by its position, and the same filters and weighers
outcome. Requests with scheduler hints, a server group, hosts to ignore or a destination are
scheduled on their own.

What a shape's passes share is kept between them (``Shapes``): the spec of the shape's first
request, in whose request group suffixes every later pass asks Placement (so that answers to
the shape are alike to the byte but for the summaries' usage), the query built from it
(``AskedQuery``), the candidates of its last answer (``KnownCandidates``) and each node's
outcome (``ranking.Outcomes``). Every member sees the candidates through its own suffixes.
"""

from __future__ import annotations

import dataclasses
import json
import threading
import time
from collections import OrderedDict
from collections.abc import Iterator, Mapping
from concurrent.futures import Future
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from berth.compute.objects.request_spec import RequestSpec, SchedulerHints
from berth.compute.scheduler.candidates import Candidate, KnownCandidates
from berth.compute.scheduler.placement_query import PlacementQuery, build_query
from berth.compute.scheduler.ranking import Outcomes
from berth.compute.scheduler.selection import Member, Schedule

_GROUP_KEYS = ("resources", "required", "member_of", "in_tree")


def shape(spec: RequestSpec, query: PlacementQuery) -> str | None:
    """What requests of one batch share, or None when ``spec`` is scheduled on its own."""
    if (
        spec.num_instances != 1
        or spec.hints != SchedulerHints()
        or spec.server_group is not None
        or spec.ignore_hosts
        or spec.destination is not None
    ):
        return None
    positions = {s: f"#{i}" for i, s in enumerate(query.port_groups or {})}
    document = spec.to_json()
    document.pop("instance_uuids")
    document["ports"] = [_anonymous(port) for port in document["ports"]]
    return json.dumps(
        [_canonical(query.pairs(), positions), query.microversion, document], sort_keys=True
    )


def suffixes(leader: PlacementQuery, member: PlacementQuery) -> dict[str, str]:
    """The leader's port group suffixes -> the member's, by position (same shape), those
    that differ."""
    pairs = zip(leader.port_groups or {}, member.port_groups or {}, strict=True)
    return {theirs: mine for theirs, mine in pairs if theirs != mine}


def as_seen_by(candidate: Candidate, renamed: Mapping[str, str]) -> Candidate:
    """``candidate`` with its request group suffixes renamed (the same providers)."""
    if not renamed:
        return candidate
    mappings = {renamed.get(s, s): rps for s, rps in candidate.mappings.items()}
    return dataclasses.replace(candidate, mappings=mappings)


@dataclass
class Batch:
    """The requests of one shape that joined while their leader was asking Placement."""

    leader_query: PlacementQuery
    members: list[tuple[Member, Future[Schedule]]] = field(default_factory=list)


class Batches:
    """The batches still open for members, one per shape."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._open: dict[str, Batch] = {}

    def join(
        self, key: str, query: PlacementQuery, member: Member
    ) -> tuple[Batch, Future[Schedule] | None]:
        """Join the open batch of this shape, or open one that asks ``query``: the batch, and
        the future of this member's answer (None for the leader, which places everyone and
        answers itself)."""
        with self._lock:
            batch = self._open.get(key)
            if batch is None:
                self._open[key] = batch = Batch(query)
                return batch, None
            answer: Future[Schedule] = Future()
            batch.members.append((member, answer))
            return batch, answer

    def close(self, key: str, batch: Batch) -> list[tuple[Member, Future[Schedule]]]:
        """No member joins ``batch`` after this; its members (the next of this shape opens a
        new batch, which asks Placement after what this one claims)."""
        with self._lock:
            if self._open.get(key) is batch:
                del self._open[key]
            return list(batch.members)


class AskedQuery:
    """The query of a shape's first request, built again only when the zones' aggregates or
    the limit it is built with are others (``build_query`` is a pure function of them)."""

    def __init__(self) -> None:
        self._kept: tuple[Mapping[str, list[str]], int | None, PlacementQuery] | None = None

    def of(
        self, spec: RequestSpec, zones: Mapping[str, list[str]], limit: int | None
    ) -> PlacementQuery:
        """``build_query(spec, az_aggregates=zones, limit=limit)``, ``spec`` always the same."""
        kept = self._kept
        if kept is not None and kept[0] == zones and kept[1] == limit:
            return kept[2]
        query = build_query(spec, az_aggregates=zones, limit=limit)
        self._kept = zones, limit, query
        return query


@dataclass(frozen=True)
class Shape:
    """What the passes of one shape keep between them."""

    # The shape's first request: its request group suffixes are the ones every pass of the
    # shape asks Placement in, and the candidates use.
    spec: RequestSpec
    candidates: KnownCandidates = field(default_factory=KnownCandidates)
    outcomes: Outcomes = field(default_factory=Outcomes)
    # Held by the pass of the shape that is asking Placement and placing its members. The
    # next pass's leader waits for it with its batch still open, so it asks Placement after
    # the claims before it (not for hosts a pass still running is about to take), and takes
    # in everyone who arrived meanwhile: fewer passes, each of more members.
    turn: threading.Lock = field(default_factory=threading.Lock, compare=False)
    asked: AskedQuery = field(default_factory=AskedQuery, compare=False)

    def query(self, zones: Mapping[str, list[str]], limit: int | None) -> PlacementQuery:
        """The query every pass of the shape asks Placement (in ``spec``'s suffixes)."""
        return self.asked.of(self.spec, zones, limit)


@contextmanager
def taking_turns(shape: Shape, deadline: float | None) -> Iterator[None]:
    """The shape's turn, waited for until ``deadline`` (wall-clock) at most: a pass whose
    requests are past it goes on without, and its claims are refused as they would be."""
    timeout = -1.0 if deadline is None else max(0.0, deadline - time.time())
    taken = shape.turn.acquire(timeout=timeout)
    try:
        yield
    finally:
        if taken:
            shape.turn.release()


class Shapes:
    """The shapes seen lately, the least recently scheduled forgotten past ``size`` (each keeps
    an answer's candidates and the text of its allocation requests, about three megabytes for
    a thousand)."""

    def __init__(self, size: int = 16) -> None:
        self._size = size
        self._lock = threading.Lock()
        self._kept: OrderedDict[str, Shape] = OrderedDict()

    def get(self, key: str, spec: RequestSpec) -> Shape:
        """The shape ``key``; made with ``spec`` when it is not kept."""
        with self._lock:
            found = self._kept.get(key)
            if found is None:
                found = self._kept[key] = Shape(spec)
                if len(self._kept) > self._size:
                    self._kept.popitem(last=False)
            else:
                self._kept.move_to_end(key)
            return found


def settle(future: Future[Schedule], outcome: Schedule | BaseException) -> None:
    """Hand a member its own outcome (once: a member already answered keeps its answer)."""
    if future.done():
        return
    if isinstance(outcome, BaseException):
        future.set_exception(outcome)
    else:
        future.set_result(outcome)


def _anonymous(port: dict[str, Any]) -> dict[str, Any]:
    """A port request without its ids: its groups by position."""
    request = dict(port.get("resource_request") or {})
    ids = {str(g.get("id")): f"#{i}" for i, g in enumerate(request.get("request_groups") or ())}
    request["request_groups"] = [
        {**g, "id": ids[str(g.get("id"))]} for g in request.get("request_groups") or ()
    ]
    if "same_subtree" in request:
        request["same_subtree"] = [ids.get(str(g), str(g)) for g in request["same_subtree"]]
    return {**port, "port_id": "", "resource_request": request}


def _canonical(pairs: list[tuple[str, str]], positions: Mapping[str, str]) -> list[list[str]]:
    """The query's pairs with port group suffixes replaced by their positions."""
    out = []
    for key, value in pairs:
        for name in _GROUP_KEYS:
            if key.startswith(name) and key[len(name) :] in positions:
                key = name + positions[key[len(name) :]]
                break
        if key == "same_subtree":
            value = ",".join(positions.get(s, s) for s in value.split(","))
        out.append([key, value])
    return out
