"""The scheduler as a service: ``select_destinations`` on the bus.

For one request: build the one Placement query, read the hosts behind the candidates from their
cells, run the pure core (filters, weighers, claims with alternates) and answer the selections as
JSON. Concurrent requests of one shape share the query and the host read (``batching``). When
nothing fits, the error explains why: how many hosts Placement returned and, when it
returned none, how many hosts each resource class and trait ruled out and, request group by
request group, what was short (``explain``).
"""

from __future__ import annotations

import dataclasses
import logging
import threading
import time
from collections import deque
from collections.abc import Collection, Sequence
from concurrent.futures import Future
from typing import Any

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.compute import rpc
from berth.compute.cells import CellRegistry
from berth.compute.clients.placement import NewClaim, PlacementClient, PlacementError
from berth.compute.db import aggregates as aggregate_store
from berth.compute.db import compute_nodes, instances
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.objects.what_if import WhatIf
from berth.compute.scheduler.batching import (
    Batch,
    Batches,
    Shape,
    Shapes,
    as_seen_by,
    settle,
    shape,
    suffixes,
    taking_turns,
)
from berth.compute.scheduler.candidates import (
    Candidate,
    KnownCandidates,
    PlacementAnswer,
    read_answer,
)
from berth.compute.scheduler.config import SchedulerConfig
from berth.compute.scheduler.explain import Probes, explain
from berth.compute.scheduler.host_cache import CellHosts, Inputs
from berth.compute.scheduler.host_state import Aggregate, HostState
from berth.compute.scheduler.placement_query import PlacementQuery, QueryError, build_query
from berth.compute.scheduler.selection import Claim, Member, NoValidHost, Schedule, Scheduler
from berth.compute.scheduler.what_if import host_capacities, together

LOG = logging.getLogger(__name__)

SRIOV_AGENT = "NIC Switch agent"
SRIOV_VNIC_TYPES = ("direct", "macvtap", "direct-physical")


def _claim_nothing(selection: Selection) -> bool:
    """A what-if's claim: granted, and nothing written."""
    return True


class _TooLate(Exception):
    """The request's deadline passed while it was being scheduled."""


class SchedulerService:
    def __init__(
        self,
        api_db: Database,
        cells: CellRegistry,
        placement: PlacementClient,
        config: SchedulerConfig,
        default_availability_zone: str = "nova",
        service_down_time: float = 60.0,
    ) -> None:
        self.api_db = api_db
        self.cells = cells
        self.placement = placement
        self.config = config
        self.default_availability_zone = default_availability_zone
        self.service_down_time = service_down_time
        # Seconds each recent select_destinations took (for operators and the benchmark).
        self.latencies: deque[float] = deque(maxlen=10_000)
        # Per cell: its compute nodes as last read, and the HostStates made of them.
        self._hosts: dict[str, CellHosts] = {}
        # The aggregates by host as last read, with the aggregates' change count before.
        self._aggregates: tuple[int, dict[str, tuple[Aggregate, ...]]] | None = None
        self._cells_lock = threading.Lock()
        self._batches = Batches()
        self._shapes = Shapes()
        # One pipeline for every pass: the nodes' outcomes a shape keeps are the pipeline's.
        self._scheduler = Scheduler(config)

    def select_destinations(
        self, spec: RequestSpec, deadline: float | None = None
    ) -> list[list[Selection]]:
        """Per instance of the spec: the claimed selection, then its alternates (same cell).

        Past ``deadline`` (a wall-clock time) the caller has stopped waiting and will give the
        servers up: nothing more is claimed, what was claimed is released, and ``Expired`` is
        raised, so a late answer leaves no claim behind."""
        started = time.perf_counter()
        try:
            chosen = self._select(spec, deadline)
            if deadline is not None and time.time() > deadline:
                raise _TooLate
            return chosen
        except _TooLate:
            for uuid in spec.instance_uuids:
                self.placement.release(uuid)
            raise rpc.Expired(
                f"select_destinations for {','.join(spec.instance_uuids)} ended past its deadline"
            ) from None
        finally:
            self.latencies.append(time.perf_counter() - started)

    def what_if(self, spec: RequestSpec) -> WhatIf:
        """What ``select_destinations`` would answer for ``spec`` now, with nothing claimed (the
        same query, hosts, filters, weighers and seed; every claim taken as granted), and how
        many more instances of it fit, host by host."""
        zones = self._zone_aggregates(spec.availability_zone)
        try:
            query = build_query(spec, az_aggregates=zones, limit=self.config.max_placement_results)
        except QueryError as exc:
            # Placement could never answer it: no host, and nothing to count.
            return WhatIf((), (), 0, message=f"No valid host was found. {exc}")
        answer = self._ask(query)
        candidates = answer.candidates
        hosts = self._hosts_for(spec, candidates)
        scheduler = self._scheduler
        try:
            schedule = scheduler.select_destinations(
                spec, candidates, hosts, _claim_nothing, provider_summaries=answer.summaries
            )
            chosen, seed, diagnosis, message = schedule.selections, schedule.seed, None, None
        except NoValidHost as exc:
            refused = self._no_valid_host(spec, exc, bool(candidates))
            chosen, seed = (), exc.diagnosis.seed
            diagnosis, message = refused.diagnosis, refused.message
        complete = True
        if answer.requests >= self.config.max_placement_results:
            # Placement stopped at the limit: count from every candidate it has.
            try:
                answer = self._ask(dataclasses.replace(query, limit=None))
                candidates = answer.candidates
                hosts = self._hosts_for(spec, candidates)
            except PlacementError:
                LOG.info("what-if: Placement refused to list every candidate; counting fewer")
                complete = False
        capacities = host_capacities(spec, candidates, hosts, answer.summaries, scheduler.filters)
        return WhatIf(
            selections=tuple(chosen), hosts=capacities,
            placement_hosts=len({c.root for c in candidates}), together=together(spec),
            complete=complete, seed=seed, diagnosis=diagnosis, message=message,
        )  # fmt: skip

    def _select(self, request: RequestSpec, deadline: float | None) -> list[list[Selection]]:
        zones = self._zone_aggregates(request.availability_zone)
        query = build_query(request, az_aggregates=zones, limit=self.config.max_placement_results)
        LOG.info("placement query for %s: %s", ",".join(request.instance_uuids), query)
        key = shape(request, query) if self.config.batching else None
        if key is None:
            return self._select_alone(request, query, deadline)
        kept = self._shapes.get(key, request)
        # Every pass of the shape asks in its first request's suffixes (so its answers repeat).
        asked = query
        if kept.spec is not request:
            asked = kept.query(zones, self.config.max_placement_results)
        member = Member(request, self._claim(request, deadline), deadline=deadline)
        renamed = suffixes(asked, query)
        if renamed:
            member = dataclasses.replace(member, view=lambda c: as_seen_by(c, renamed))
        batch, answer = self._batches.join(key, asked, member)
        if answer is None:
            schedule = self._lead(key, kept, batch, member)
        else:
            try:
                schedule = answer.result()
            except NoValidHost as exc:
                raise self._no_valid_host(
                    request, exc, bool(exc.diagnosis.placement_hosts)
                ) from None
        return [list(per_instance) for per_instance in schedule.selections]

    def _lead(self, key: str, kept: Shape, batch: Batch, member: Member) -> Schedule:
        """Ask Placement and read the hosts once for the batch, then place its members (this
        request first) and answer each; this request's own schedule."""
        members: list[tuple[Member, Future[Schedule] | None]] = [(member, None)]
        try:
            with taking_turns(kept, member.deadline):
                answer = self._ask(batch.leader_query, kept.candidates)
                candidates = answer.candidates
                hosts = self._hosts_for(member.spec, candidates)
                members += self._batches.close(key, batch)
                outcomes = self._scheduler.select_each(
                    [m for m, _ in members],
                    candidates,
                    hosts,
                    provider_summaries=answer.summaries,
                    claim_together=self._claim_together,
                    shape=kept.spec,
                    outcomes=kept.outcomes,
                )
        except BaseException as exc:
            # Nobody is left waiting: the members get what stopped the pass.
            for _, future in members + self._batches.close(key, batch):
                if future is not None:
                    settle(future, exc)
            raise
        if len(members) > 1:
            LOG.info("one pass for %d requests of one shape", len(members))
        for (_, future), outcome in zip(members[1:], outcomes[1:], strict=True):
            assert future is not None
            settle(future, outcome)
        own = outcomes[0]
        if isinstance(own, NoValidHost):
            raise self._no_valid_host(member.spec, own, bool(candidates)) from None
        if isinstance(own, Exception):
            raise own
        return own

    def _select_alone(
        self, request: RequestSpec, query: PlacementQuery, deadline: float | None
    ) -> list[list[Selection]]:
        answer = self._ask(query)
        candidates = answer.candidates
        hosts = self._hosts_for(request, candidates)
        try:
            schedule = self._scheduler.select_destinations(
                request,
                candidates,
                hosts,
                self._claim(request, deadline),
                provider_summaries=answer.summaries,
            )
        except NoValidHost as exc:
            for chosen in exc.claimed:
                self.placement.release(chosen.instance_uuid)
            raise self._no_valid_host(request, exc, bool(candidates)) from None
        return [list(per_instance) for per_instance in schedule.selections]

    def _ask(self, query: PlacementQuery, known: KnownCandidates | None = None) -> PlacementAnswer:
        """Placement's answer to ``query``, its candidates read anew or, with ``known``, the
        ones kept from the answers before reused."""
        body = self.placement.allocation_candidates_body(query.pairs())
        if known is None:
            return read_answer(body, query.microversion)
        return known.read(body, query.microversion)

    def _hosts_for(self, request: RequestSpec, candidates: list[Candidate]) -> list[HostState]:
        named = {*request.hints.same_host, *request.hints.different_host}
        hosts = self._host_states({c.root for c in candidates}, named)
        if any(port.vnic_type in SRIOV_VNIC_TYPES for port in request.ports):
            hosts = [dataclasses.replace(h, pf_providers=self._pf_providers(h)) for h in hosts]
        return hosts

    def _claim(self, request: RequestSpec, deadline: float | None) -> Claim:
        def claim(selection: Selection) -> bool:
            if deadline is not None and time.time() > deadline:
                raise _TooLate
            return self.placement.claim(
                selection.instance_uuid, selection.allocations, request.project_id, request.user_id
            )

        return claim

    def _claim_together(self, chosen: Sequence[tuple[Member, Selection]]) -> bool:
        """The batch's claims in one write; not when a member's caller has stopped waiting
        (claimed one by one, that member alone fails)."""
        now = time.time()
        if any(m.deadline is not None and now > m.deadline for m, _ in chosen):
            return False
        claims = [
            NewClaim(s.instance_uuid, s.allocations, m.spec.project_id, m.spec.user_id)
            for m, s in chosen
        ]
        return self.placement.claim_together(claims)

    def _no_valid_host(
        self, request: RequestSpec, exc: NoValidHost, had_candidates: bool
    ) -> rpc.NoValidHost:
        diagnosis = exc.diagnosis
        if not had_candidates:
            # Placement showed no host, so say out of how many ("0/12", not "0/0"), and why.
            nodes = self._compute_nodes()
            diagnosis = dataclasses.replace(diagnosis, hosts=len(nodes))
            diagnosis = diagnosis.with_placement_shortfall(*self._shortfall(request, nodes))
            zones = self._zone_aggregates(request.availability_zone)
            query = build_query(request, az_aggregates=zones, limit=None)
            diagnosis = diagnosis.with_groups(
                *explain(query, request, self._probes(), zone_aggregates=zones)
            )
        return rpc.NoValidHost(f"No valid host was found. {diagnosis.render()}", diagnosis)

    def _zone_aggregates(self, zone: str | None) -> dict[str, list[str]]:
        if zone is None:
            return {}
        with self.api_db.read() as conn:
            return {zone: aggregate_store.zone_aggregates(conn, zone)}

    def _host_states(
        self, node_uuids: Collection[str], named_instances: Collection[str] = ()
    ) -> list[HostState]:
        """The hosts of these compute nodes, from every cell that has some of them. Of the
        servers on each host only ``named_instances`` (the request's same_host and
        different_host hints) are read: what a request costs does not grow with the number of
        servers running."""
        if not node_uuids:
            return []
        by_host = self._aggregates_by_host()
        states = []
        now = utcnow()
        for cell in self.cells.cells(include_cell0=False):
            db = self.cells.database(cell)
            servers: dict[str, set[str]] = {}
            if named_instances:
                with db.read() as conn:
                    for row in instances.list_instances(conn, uuids=named_instances):
                        if row["host"]:
                            servers.setdefault(row["host"], set()).add(row["uuid"])
            inputs = Inputs(
                aggregates=by_host,
                servers={host: frozenset(uuids) for host, uuids in servers.items()},
            )
            states += self._cell_hosts(cell.uuid).states(db, now, node_uuids, inputs)
        return states

    def _aggregates_by_host(self) -> dict[str, tuple[Aggregate, ...]]:
        """Each host's aggregates: read again only when the aggregates' change count moved
        (else the very mapping of the pass before, which tells the host cache nothing moved)."""
        with self.api_db.one_statement() as conn:
            count = aggregate_store.change_count(conn)
        kept = self._aggregates
        if kept is not None and kept[0] == count:
            return kept[1]
        with self.api_db.read() as conn:
            aggregates = aggregate_store.list_aggregates(conn)
        listed: dict[str, list[Aggregate]] = {}
        for found in aggregates:
            for host in found.hosts:
                listed.setdefault(host, []).append(
                    Aggregate(found.uuid, found.name, dict(found.metadata))
                )
        by_host = {host: tuple(found) for host, found in listed.items()}
        # Read after the count, so never older than it (a pass racing this one may keep an
        # older pair: still a pair, read again at the next count).
        self._aggregates = (count, by_host)
        return by_host

    def _cell_hosts(self, cell_uuid: str) -> CellHosts:
        with self._cells_lock:
            found = self._hosts.get(cell_uuid)
            if found is None:
                found = self._hosts[cell_uuid] = CellHosts(
                    cell_uuid, self.default_availability_zone, self.service_down_time
                )
            return found

    def _pf_providers(self, host: HostState) -> dict[str, str]:
        """The host's physical functions by their bandwidth provider: the network service names
        them ``<host>:NIC Switch agent:<device>`` under the compute node."""
        prefix = f"{host.host}:{SRIOV_AGENT}:"
        return {
            p["uuid"]: p["name"][len(prefix) :]
            for p in self._providers({"in_tree": host.node_uuid})
            if p["name"].startswith(prefix)
        }

    def _shortfall(
        self, request: RequestSpec, nodes: set[str]
    ) -> tuple[dict[str, int], dict[str, int]]:
        """How many compute nodes each asked-for resource class and trait rules out (other
        root providers, a routed network's segments, are not hosts and are not counted)."""
        query = build_query(dataclasses.replace(request, ports=()), limit=None)
        unnamed = query.groups[0]
        resources = {
            rc: len(nodes - self._roots({"resources": f"{rc}:{amount}"}))
            for rc, amount in unnamed.resources.items()
        }
        traits = {
            trait: len(nodes - self._roots({"required": trait})) for trait in unnamed.required
        }
        return resources, traits

    def _compute_nodes(self) -> set[str]:
        """Every compute node's uuid (its root provider's), in every cell."""
        nodes: set[str] = set()
        for cell in self.cells.cells(include_cell0=False):
            with self.cells.database(cell).read() as conn:
                nodes |= {n["uuid"] for n in compute_nodes.list_nodes(conn)}
        return nodes

    def _probes(self) -> Probes:
        def candidates(pairs: list[tuple[str, str]]) -> bool:
            try:
                return bool(self.placement.allocation_candidates(pairs)["allocation_requests"])
            except PlacementError:
                return False

        def providers(pairs: list[tuple[str, str]]) -> bool:
            answer = self.placement.client.get("/resource_providers", params=pairs)
            return answer.is_success and bool(answer.json().get("resource_providers"))

        return Probes(candidates, providers)

    def _roots(self, params: dict[str, str]) -> set[str]:
        return {p["root_provider_uuid"] for p in self._providers(params)}

    def _providers(self, params: dict[str, str]) -> list[dict[str, Any]]:
        answer = self.placement.client.get("/resource_providers", params=params)
        return list(answer.json().get("resource_providers", [])) if answer.is_success else []
