"""Choosing hosts: Placement's candidates through the filters and weighers to one Selection per
instance, plus alternates in the same cell.

For each instance of the request, in order:

1. **Hosts.** Candidates are grouped by compute node; a node without a HostState is dropped
   (``HostState``/``unknown-host``), and so is a candidate whose capacity an earlier instance
   of this request already took (``RequestCapacity``, from Placement's provider summaries).
2. **Filters**, stage by stage in the configured order (``filters.run_filters``).
3. **Weighers**: every surviving (host, candidate) gets the sum of its normalised, multiplied
   weights. The options are shuffled with the request's seeded generator first, so equal weights
   are ordered at random but reproducibly; then sorted, best first. A host ranks by its best
   candidate.
4. **Claim.** One of the ``host_subset_size`` best hosts is picked at random (same generator)
   and its best candidate handed to ``claim``, the caller's atomic allocation write. On a
   refusal (a conflict: the providers changed under us) that candidate is dropped for the rest
   of the request and the pick is made again; a host with no candidate left is removed
   (``Claim``/``conflict``).
5. **Alternates**: the next best hosts *in the chosen host's cell*, one candidate each, up to
   ``max_attempts - 1``. They are not claimed: a reschedule in the cell claims them.
6. **Consume**: the chosen host's state and the providers' free capacity lose what the
   instance took, and the instance joins the server group, so later instances of the request
   see it (anti-affinity between them holds; soft affinity pulls them together).

When an instance finds no host, NoValidHost carries the diagnosis of that pass and the
selections already claimed for earlier instances, which the caller must release. The seed is
logged and returned, so a decision can be replayed.
"""

from __future__ import annotations

import dataclasses
import hashlib
import logging
import random
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from berth.compute.objects.diagnosis import Diagnosis
from berth.compute.objects.request_spec import RequestSpec
from berth.compute.objects.selection import Selection
from berth.compute.scheduler import diagnosis as diag
from berth.compute.scheduler.candidates import Candidate, ProviderSummary, ProviderUsage
from berth.compute.scheduler.config import SchedulerConfig
from berth.compute.scheduler.diagnosis import Recorder
from berth.compute.scheduler.filters import build_pipeline
from berth.compute.scheduler.filters.pci_passthrough import vf_demand
from berth.compute.scheduler.host_state import HostState
from berth.compute.scheduler.placement_query import port_allocations
from berth.compute.scheduler.ranking import Options, Outcomes, Ranked, Ranking
from berth.compute.scheduler.weighers import build_weighers

__all__ = [
    "Claim",
    "ClaimTogether",
    "HostState",
    "Member",
    "NoValidHost",
    "Schedule",
    "Scheduler",
    "Selection",
    "request_seed",
    "select_destinations",
]

LOG = logging.getLogger(__name__)


Claim = Callable[[Selection], bool]
# A candidate as one request sees it: the same providers, its own request groups' suffixes.
View = Callable[[Candidate], Candidate]


def _as_is(candidate: Candidate) -> Candidate:
    return candidate


@dataclass(frozen=True, slots=True)
class Member:
    """One request of a batch: its spec (one instance), how its claim is written, and how it
    sees the candidates another member's query found."""

    spec: RequestSpec
    claim: Claim
    view: View = _as_is
    # The wall-clock time past which its caller has stopped waiting (None: no limit).
    deadline: float | None = None


# Writes the claims of several members' selections in one atomic write: True when every one
# was written, False (or an exception) when none was.
ClaimTogether = Callable[[Sequence[tuple[Member, Selection]]], bool]


def _granted(_: Selection) -> bool:
    return True


class _Pool:
    """What one pass works from and changes as instances land: the hosts' states, the
    providers' free capacity and the options still open (``ranking.Options``)."""

    def __init__(
        self,
        candidates: Sequence[Candidate],
        hosts: Iterable[HostState],
        provider_summaries: Mapping[str, ProviderSummary] | None,
        outcomes: Outcomes | None = None,
    ) -> None:
        self.usage = ProviderUsage(provider_summaries)
        self.by_node = {h.node_uuid: h for h in hosts}
        self.options = Options(candidates, self.by_node, self.usage, outcomes)
        self.known = len(self.by_node.keys() | self.options.roots)


class NoValidHost(Exception):
    """No host could take ``instance_uuid``; ``claimed`` are the earlier instances' chosen
    selections, whose allocations the caller must release."""

    def __init__(
        self, instance_uuid: str, diagnosis: Diagnosis, claimed: Sequence[Selection] = ()
    ) -> None:
        super().__init__(diagnosis.render())
        self.instance_uuid = instance_uuid
        self.diagnosis = diagnosis
        self.claimed = tuple(claimed)


@dataclass(frozen=True, slots=True)
class Schedule:
    # Per instance, in the request's order: the chosen selection, then its alternates.
    selections: tuple[tuple[Selection, ...], ...]
    seed: int
    # Per instance, what each pass removed and why.
    diagnoses: tuple[Diagnosis, ...]


def request_seed(spec: RequestSpec) -> int:
    """A seed derived from the request, so that replaying a request replays its choices."""
    digest = hashlib.sha256("/".join(spec.instance_uuids).encode()).digest()
    return int.from_bytes(digest[:8], "big")


class Scheduler:
    """The pipeline wired once from the configuration: filters in their order, weighers with
    their multipliers."""

    def __init__(self, config: SchedulerConfig | None = None) -> None:
        self.config = config or SchedulerConfig()
        self.filters = build_pipeline(self.config.enabled_filters)
        self.weighers = build_weighers(self.config.weighers, self.config.weigher_multipliers)

    def select_destinations(
        self,
        spec: RequestSpec,
        candidates: Sequence[Candidate],
        hosts: Iterable[HostState],
        claim: Claim,
        *,
        provider_summaries: Mapping[str, ProviderSummary] | None = None,
    ) -> Schedule:
        """Claim a host for every instance of ``spec``; raises NoValidHost (see the module)."""
        seed = self.config.seed if self.config.seed is not None else request_seed(spec)
        LOG.info(
            "scheduling %d instance(s) %s over %d candidate(s), seed %d",
            spec.num_instances,
            ",".join(spec.instance_uuids),
            len(candidates),
            seed,
        )
        rng = random.Random(seed)
        pool = _Pool(candidates, hosts, provider_summaries)
        chosen: list[Selection] = []
        selections: list[tuple[Selection, ...]] = []
        diagnoses: list[Diagnosis] = []
        for instance_uuid in spec.instance_uuids:
            placed = self._place(instance_uuid, spec, pool, claim, rng, seed, _as_is)
            if isinstance(placed, Diagnosis):
                raise NoValidHost(instance_uuid, placed, chosen)
            placed_selections, diagnosis, spec = placed
            chosen.append(placed_selections[0])
            selections.append(placed_selections)
            diagnoses.append(diagnosis)
        return Schedule(tuple(selections), seed, tuple(diagnoses))

    def select_each(
        self,
        members: Sequence[Member],
        candidates: Sequence[Candidate],
        hosts: Iterable[HostState],
        *,
        provider_summaries: Mapping[str, ProviderSummary] | None = None,
        claim_together: ClaimTogether | None = None,
        shape: RequestSpec | None = None,
        outcomes: Outcomes | None = None,
    ) -> list[Schedule | Exception]:
        """One pass for several requests of one instance each that asked Placement the same
        (a batch, ``berth.compute.scheduler.batching``): each in turn is ranked, claimed and
        consumed as the instances of one request are, so later members see what earlier ones
        took, and each keeps its own answer: a member no host could take gets its NoValidHost,
        one whose claim failed gets that error, and the next member is placed all the same.

        Every member is filtered, weighed and consumed as ``shape``, the spec whose query asked
        Placement (whose request group suffixes the candidates use; by default the first
        member's), and sees the candidates through its own ``view``. ``outcomes`` are the nodes'
        outcomes kept between passes of this shape (``ranking.Outcomes``).

        With ``claim_together``, the members are first placed as if every claim were granted,
        and their selections claimed in one write: the pass it makes is the one the claims one
        by one make when all are granted. When that write is refused (nothing was written), the
        pass is made again, from the start, claiming one by one."""
        hosts = tuple(hosts)  # a pass made again reads them again
        if claim_together is not None and len(members) > 1:
            placed = self._place_each(
                members, candidates, hosts, provider_summaries, shape, outcomes, _granted
            )
            chosen = [
                (member, outcome.selections[0][0])
                for member, outcome in zip(members, placed, strict=True)
                if isinstance(outcome, Schedule)
            ]
            try:
                if claim_together(chosen):
                    return placed
                LOG.info("a batch's %d claims were refused together; one by one", len(chosen))
            except Exception:  # each member's own claim will meet it, or not
                LOG.exception("a batch's %d claims failed together; one by one", len(chosen))
        return self._place_each(members, candidates, hosts, provider_summaries, shape, outcomes)

    def _place_each(
        self,
        members: Sequence[Member],
        candidates: Sequence[Candidate],
        hosts: Iterable[HostState],
        provider_summaries: Mapping[str, ProviderSummary] | None,
        shape: RequestSpec | None,
        outcomes: Outcomes | None,
        claim: Claim | None = None,
    ) -> list[Schedule | Exception]:
        """``select_each``'s pass, each member's claim made by ``claim`` when given."""
        pool = _Pool(candidates, hosts, provider_summaries, outcomes)
        if shape is None and members:
            shape = members[0].spec
        results: list[Schedule | Exception] = []
        for member in members:
            spec = member.spec
            seed = self.config.seed if self.config.seed is not None else request_seed(spec)
            [instance_uuid] = spec.instance_uuids
            LOG.info("scheduling %s in a batch of %d, seed %d", instance_uuid, len(members), seed)
            rng = random.Random(seed)
            try:
                placed = self._place(
                    instance_uuid, spec, pool, claim or member.claim, rng, seed, member.view, shape
                )
            except Exception as exc:  # this member's own failure, for it alone to raise
                results.append(exc)
                continue
            if isinstance(placed, Diagnosis):
                results.append(NoValidHost(instance_uuid, placed))
            else:
                selections, diagnosis, _ = placed
                results.append(Schedule((selections,), seed, (diagnosis,)))
        return results

    def _place(
        self,
        instance_uuid: str,
        spec: RequestSpec,
        pool: _Pool,
        claim: Claim,
        rng: random.Random,
        seed: int,
        view: View,
        shape: RequestSpec | None = None,
    ) -> tuple[tuple[Selection, ...], Diagnosis, RequestSpec] | Diagnosis:
        """Rank, claim and consume for one instance: its selection and alternates, the
        diagnosis of its pass and the spec the next instance of the request sees; or, when no
        host could take it, only the diagnosis. ``shape`` is the spec the candidates were
        asked for, when ``spec`` sees them through ``view``."""
        recorder = Recorder(pool.known, len(pool.options.roots), seed)
        ranking = pool.options.rank(shape or spec, self.filters, self.weighers, recorder, rng)
        # Hosts whose every candidate an earlier instance's claims had refused.
        for _ in range(pool.options.emptied):
            recorder.removed(diag.CLAIM, diag.CONFLICT)
        picked = self._claim(instance_uuid, spec, ranking, pool.options, claim, recorder, rng, view)
        diagnosis = recorder.result(len(ranking))
        if picked is None:
            LOG.info("no valid host for %s: %s", instance_uuid, diagnosis.render())
            return diagnosis
        selection, ranked, candidate = picked
        alternates = self._alternates(instance_uuid, spec, ranking, ranked, view)
        spec = self._consume(instance_uuid, spec, ranked.host, candidate, pool, shape or spec)
        return (selection, *alternates), diagnosis, spec

    def _claim(
        self,
        instance_uuid: str,
        spec: RequestSpec,
        ranking: Ranking,
        options: Options,
        claim: Claim,
        recorder: Recorder,
        rng: random.Random,
        view: View,
    ) -> tuple[Selection, Ranked, Candidate] | None:
        while ranking:
            index = rng.randrange(min(self.config.host_subset_size, len(ranking)))
            ranked = ranking[index]
            weight, candidate = ranked.options[0]
            selection = _selection(instance_uuid, spec, ranked.host, view(candidate), weight)
            if claim(selection):
                return selection, ranked, candidate
            LOG.info("claim of %s on %s refused; trying the next", instance_uuid, ranked.host.host)
            ranked.options.pop(0)
            options.drop(candidate)
            if not ranked.options:
                del ranking[index]
                recorder.removed(diag.CLAIM, diag.CONFLICT)
        return None

    def _alternates(
        self,
        instance_uuid: str,
        spec: RequestSpec,
        ranking: Ranking,
        chosen: Ranked,
        view: View,
    ) -> list[Selection]:
        found: list[Selection] = []
        for ranked in ranking:
            if len(found) >= self.config.max_attempts - 1:
                break
            if ranked is chosen or ranked.host.cell_uuid != chosen.host.cell_uuid:
                continue
            weight, candidate = ranked.options[0]
            found.append(_selection(instance_uuid, spec, ranked.host, view(candidate), weight))
        return found

    @staticmethod
    def _consume(
        instance_uuid: str,
        spec: RequestSpec,
        host: HostState,
        candidate: Candidate,
        pool: _Pool,
        shape: RequestSpec,
    ) -> RequestSpec:
        """What the next instance sees once this one landed on ``host`` (``shape``: the spec
        whose request group suffixes ``candidate`` uses)."""
        pool.usage.consume(candidate)
        vfs = vf_demand(host, shape, candidate)
        pool.by_node[host.node_uuid] = host.consume(
            instance_uuid, candidate, vfs if isinstance(vfs, dict) else {}
        )
        pool.options.landed(candidate)
        if spec.server_group is None:
            return spec
        group = spec.server_group.with_member(instance_uuid, host.host)
        return dataclasses.replace(spec, server_group=group)


def _selection(
    instance_uuid: str, spec: RequestSpec, host: HostState, candidate: Candidate, weight: float
) -> Selection:
    return Selection(
        instance_uuid=instance_uuid,
        host=host.host,
        node=host.node,
        node_uuid=host.node_uuid,
        cell_uuid=host.cell_uuid,
        allocation_request=candidate.allocation_request,
        allocation_request_version=candidate.version,
        mappings=candidate.mappings,
        port_allocations=port_allocations(spec.ports, candidate.mappings),
        weight=weight,
    )


def select_destinations(
    spec: RequestSpec,
    candidates: Sequence[Candidate],
    hosts: Iterable[HostState],
    claim: Claim,
    config: SchedulerConfig | None = None,
    *,
    provider_summaries: Mapping[str, ProviderSummary] | None = None,
) -> Schedule:
    """``Scheduler(config).select_destinations(...)``, for a single call."""
    return Scheduler(config).select_destinations(
        spec, candidates, hosts, claim, provider_summaries=provider_summaries
    )
