"""Make Placement show what ``reporting.desired`` computed, through the Placement API.

Idempotent and incremental: a provider whose desired state is what was last applied is not read
again, so a steady-state pass costs nothing but the computation. A change of an agent's
configuration updates inventories and traits in place, so allocations stay; an inventory that
would drop below what is allocated is refused by Placement (409) and reported, and the provider
keeps its old inventory.
"""

from __future__ import annotations

import hashlib
import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from typing import Any

import httpx

from berth.network.reporting import Desired, DesiredProvider
from berth.network.traits import SEGMENT_TRAIT

LOG = logging.getLogger(__name__)

MICROVERSION = "placement 1.39"
# Providers whose inventories one reshaper request writes.
INVENTORY_BATCH = 500
# New providers made at once (their requests overlap; a fleet's first pass makes thousands).
CREATE_THREADS = 8


class PlacementUnavailable(Exception):
    """Placement did not answer, or answered what it should not (5xx)."""


@dataclass
class SyncReport:
    """Per host, what could not be made to match; a host without problems is in sync."""

    problems: dict[str, list[str]] = field(default_factory=dict)

    def add(self, host: str, problem: str) -> None:
        LOG.warning("placement sync, host %s: %s", host, problem)
        self.problems.setdefault(host, []).append(problem)


class PlacementSync:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self._remembered: dict[str, tuple[str, int]] = {}
        self._applied: dict[str, DesiredProvider] = {}
        # Provider -> its generation when it last showed what was applied.
        self._generations: dict[str, int] = {}
        self._compute_nodes: dict[str, str] = {}
        self._host_aggregates: dict[str, frozenset[str]] = {}
        self._children: dict[str, frozenset[str]] = {}
        self._custom_traits: set[str] = set()
        # Whether Placement lets this service use the reshaper (its policy may not).
        self._reshaper = True

    # -- HTTP ------------------------------------------------------------------------------------

    def _call(
        self, method: str, path: str, body: Any = None, params: dict[str, str] | None = None
    ) -> httpx.Response:
        try:
            answer = self.client.request(
                method,
                path,
                json=body,
                params=params,
                headers={"openstack-api-version": MICROVERSION},
            )
        except httpx.HTTPError as exc:
            raise PlacementUnavailable(f"{method} {path}: {exc}") from exc
        if answer.status_code >= 500:
            raise PlacementUnavailable(f"{method} {path}: {answer.status_code} {answer.text}")
        return answer

    # -- the pass ----------------------------------------------------------------------------------

    def apply(self, desired: Desired) -> SyncReport:
        report = SyncReport()
        hosts = {p.host for p in desired.providers if p.host is not None} | set(
            desired.host_aggregates
        )
        pending = [p for p in desired.providers if self._applied.get(p.uuid) != p]
        tops = {
            top: (host, children)
            for top, (host, children) in _children_of_tops(desired.providers).items()
            if self._children.get(top) != children
        }
        # One listing of every provider instead of a read per provider and per host: a fleet's
        # first pass (or the first after a restart) is thousands of them.
        existing = (
            {p["uuid"]: p for p in self._providers({})}
            if pending or tops or not hosts <= self._compute_nodes.keys()
            else {}
        )
        by_name = {p["name"]: p["uuid"] for p in existing.values()}
        for host in sorted(hosts):
            if host not in self._compute_nodes and host in by_name:
                self._compute_nodes[host] = by_name[host]
            if host not in self._compute_nodes:
                report.add(host, f"no compute node provider named {host!r} in Placement yet")
        host_of = self._hosts_of(desired.providers)
        # Providers made in this pass whose inventories are still to write, at this generation.
        created: dict[str, tuple[DesiredProvider, int]] = {}
        new: list[DesiredProvider] = []
        for provider in pending:
            host = host_of.get(provider.uuid, "")
            if host and host not in self._compute_nodes:
                continue
            current = existing.get(provider.uuid)
            if current is None:
                new.append(provider)
                continue
            if self._unchanged(provider, current):
                self._applied[provider.uuid] = provider
                self._generations[provider.uuid] = current["generation"]
            elif problem := self._ensure(provider, current):
                report.add(host or provider.name, problem)
            else:
                self._applied[provider.uuid] = provider
        for provider, (problem, generation) in self._create_all(new):
            if generation is not None:
                created[provider.uuid] = (provider, generation)
            elif problem:
                report.add(host_of.get(provider.uuid) or provider.name, problem)
            else:
                self._applied[provider.uuid] = provider
        for uuid, problem in self._write_inventories(created).items():
            provider = created[uuid][0]
            report.add(host_of.get(uuid) or provider.name, problem)
        wanted = {p.uuid for p in desired.providers}
        # An agent whose devices changed may have left providers behind (only below a provider
        # the listing holds: one made in this pass has nothing below it but what is wanted).
        below_of = _below(existing.values())
        for top, (host, children) in tops.items():
            if host in self._compute_nodes:
                self._remove_stale(below_of(top), wanted, report, host)
                self._children[top] = children
        self._remove_stale(self._providers({"required": SEGMENT_TRAIT}), wanted, report, "segments")
        for host, aggregates in desired.host_aggregates.items():
            if host in self._compute_nodes:
                problem = self._set_host_aggregates(host, aggregates, desired.segment_ids)
                if problem:
                    report.add(host, problem)
        return report

    def remember(self, recorded: Mapping[str, tuple[str, int]]) -> None:
        """What an earlier sync recorded (``remembered()``): a provider whose generation has
        not moved since is not read again."""
        self._remembered = dict(recorded)

    def remembered(self) -> dict[str, tuple[str, int]]:
        """Per provider applied: its fingerprint and its generation when it last showed it."""
        return {
            uuid: (fingerprint(provider), self._generations[uuid])
            for uuid, provider in self._applied.items()
            if uuid in self._generations
        }

    def _unchanged(self, provider: DesiredProvider, current: Mapping[str, Any]) -> bool:
        """Whether Placement shows ``provider`` as an earlier sync left it: same name and
        parent, and no write to it since (every write moves a provider's generation on)."""
        parent = self._compute_nodes[provider.host] if provider.host else provider.parent_uuid
        return (
            current["name"] == provider.name
            and current.get("parent_provider_uuid") == parent
            and self._remembered.get(provider.uuid)
            == (fingerprint(provider), current["generation"])
        )

    def _saw(self, provider: DesiredProvider, document: Mapping[str, Any]) -> None:
        self._generations[provider.uuid] = document["resource_provider_generation"]

    @staticmethod
    def _hosts_of(providers: Iterable[DesiredProvider]) -> dict[str, str]:
        """The host each provider belongs to (segments belong to none)."""
        found: dict[str, str] = {}
        for p in providers:
            if p.host is not None:
                found[p.uuid] = p.host
            elif p.parent_uuid in found:
                found[p.uuid] = found[p.parent_uuid]
        return found

    def _parent(self, provider: DesiredProvider) -> str | None:
        return self._compute_nodes[provider.host] if provider.host else provider.parent_uuid

    def _ensure(self, provider: DesiredProvider, current: Mapping[str, Any]) -> str | None:
        """Bring an existing provider (``current`` as the listing showed it) to what is
        desired; a problem description, or None when it matches."""
        parent = self._parent(provider)
        if current["name"] != provider.name or current.get("parent_provider_uuid") != parent:
            body = {"name": provider.name, "parent_provider_uuid": parent}
            answer = self._call("PUT", f"/resource_providers/{provider.uuid}", body)
            if not answer.is_success:
                return f"cannot update provider {provider.name}: {answer.status_code} {answer.text}"
        return (
            self._ensure_traits(provider)
            or self._ensure_inventories(provider)
            or self._ensure_aggregates(provider)
        )

    def _create_all(
        self, new: Sequence[DesiredProvider]
    ) -> list[tuple[DesiredProvider, tuple[str | None, int | None]]]:
        """``_create`` for every new provider, several at a time: parents before their
        children, each custom trait made once for the lot."""
        self._make_custom_traits({trait for provider in new for trait in provider.traits})
        outcomes: list[tuple[DesiredProvider, tuple[str | None, int | None]]] = []
        waiting = list(new)
        with ThreadPoolExecutor(CREATE_THREADS) as pool:
            while waiting:
                # A provider whose parent is still to be made waits for the next wave.
                unmade = {p.uuid for p in waiting}
                ready = [p for p in waiting if p.parent_uuid not in unmade]
                waiting = [p for p in waiting if p.parent_uuid in unmade]
                outcomes += zip(ready, pool.map(self._create, ready), strict=True)
        return outcomes

    def _create(self, provider: DesiredProvider) -> tuple[str | None, int | None]:
        """Make the provider with its traits and aggregates: a new provider holds nothing, so
        nothing is read first. Answers the generation its inventories are to be written at
        (with the others made in this pass, ``_write_inventories``), or None when it had to be
        finished the long way (another writer in between), then with the problem if any."""
        body = {"uuid": provider.uuid, "name": provider.name,
                "parent_provider_uuid": self._parent(provider)}  # fmt: skip
        answer = self._call("POST", "/resource_providers", body)
        if answer.status_code != 200:
            problem = f"cannot create provider {provider.name}: {answer.status_code} {answer.text}"
            return problem, None
        generation: int = answer.json()["generation"]
        for part, wanted in (
            ("traits", sorted(provider.traits)), ("aggregates", sorted(provider.aggregates))
        ):  # fmt: skip
            if not wanted:
                continue
            body = {part: wanted, "resource_provider_generation": generation}
            answer = self._call("PUT", f"/resource_providers/{provider.uuid}/{part}", body)
            if not answer.is_success:
                # Another writer in between: finish it the long way.
                shown = {"name": provider.name, "parent_provider_uuid": self._parent(provider)}
                return self._ensure(provider, shown), None
            generation = answer.json()["resource_provider_generation"]
        return None, generation

    def _write_inventories(
        self, created: Mapping[str, tuple[DesiredProvider, int]]
    ) -> dict[str, str]:
        """The inventories of providers made in this pass, many per request (Placement's
        reshaper, with no allocations to move); a batch the reshaper refuses (a policy without
        it, another writer in between) is written provider by provider. Problems by provider."""
        problems: dict[str, str] = {}
        batch: dict[str, dict[str, Any]] = {}
        for uuid, (provider, generation) in created.items():
            if provider.inventories:
                batch[uuid] = {
                    "resource_provider_generation": generation,
                    "inventories": {rc: dict(inv) for rc, inv in provider.inventories.items()},
                }
            else:
                self._applied[uuid] = provider
                self._generations[uuid] = generation
        uuids = list(batch)
        for start in range(0, len(uuids), INVENTORY_BATCH):
            chunk = uuids[start : start + INVENTORY_BATCH]
            if self._reshaper:
                body = {"inventories": {uuid: batch[uuid] for uuid in chunk}, "allocations": {}}
                answer = self._call("POST", "/reshaper", body)
                if answer.status_code == 204:
                    for uuid in chunk:
                        self._applied[uuid] = created[uuid][0]
                    continue
                # Placement's default policy gives the reshaper to the service role only.
                self._reshaper = answer.status_code != 403
            for uuid in chunk:
                provider = created[uuid][0]
                path = f"/resource_providers/{uuid}/inventories"
                if self._call("PUT", path, batch[uuid]).is_success:
                    self._applied[uuid] = provider
                elif problem := self._ensure_inventories(provider):
                    problems[uuid] = problem
                else:
                    self._applied[uuid] = provider
        if uuids:
            LOG.info(
                "placement sync: made %d provider(s); their inventories %s", len(created),
                "in batches (reshaper)" if self._reshaper else "one by one (no reshaper)",
            )  # fmt: skip
            # The reshaper does not answer generations: one listing tells them all.
            for found in self._providers({}):
                if found["uuid"] in batch and found["uuid"] not in problems:
                    self._generations[found["uuid"]] = found["generation"]
        return problems

    def _make_custom_traits(self, traits: Iterable[str]) -> None:
        for trait in sorted(set(traits) - self._custom_traits):
            if trait.startswith("CUSTOM_") and self._call("PUT", f"/traits/{trait}").is_success:
                self._custom_traits.add(trait)

    def _ensure_traits(self, provider: DesiredProvider) -> str | None:
        current = self._call("GET", f"/resource_providers/{provider.uuid}/traits").json()
        self._saw(provider, current)
        if set(current["traits"]) == provider.traits:
            return None
        self._make_custom_traits(provider.traits)
        body = {
            "traits": sorted(provider.traits),
            "resource_provider_generation": current["resource_provider_generation"],
        }
        answer = self._call("PUT", f"/resource_providers/{provider.uuid}/traits", body)
        if not answer.is_success:
            # An operator may have deleted a custom trait we made: make it again next time.
            self._custom_traits -= provider.traits
            return f"cannot set traits of {provider.name}: {answer.status_code} {answer.text}"
        self._saw(provider, answer.json())
        return None

    def _ensure_inventories(self, provider: DesiredProvider) -> str | None:
        current = self._call("GET", f"/resource_providers/{provider.uuid}/inventories").json()
        self._saw(provider, current)
        have = current["inventories"]
        if set(have) == set(provider.inventories) and all(
            have[rc][key] == value
            for rc, inventory in provider.inventories.items()
            for key, value in inventory.items()
        ):
            return None
        # Placement lets an inventory shrink below its usage (it only warns); an agent's
        # configuration must not, so the shrink is refused here and reported.
        usages = self._call("GET", f"/resource_providers/{provider.uuid}/usages").json()["usages"]
        for rc, used in sorted(usages.items()):
            wanted = provider.inventories.get(rc)
            capacity = (
                int((wanted["total"] - wanted["reserved"]) * wanted["allocation_ratio"])
                if wanted
                else 0
            )
            if used > capacity:
                return (
                    f"the new inventory of {provider.name} refused: {rc} would hold "
                    f"{capacity}, but {used} is allocated"
                )
        body = {
            "inventories": {rc: dict(inv) for rc, inv in provider.inventories.items()},
            "resource_provider_generation": current["resource_provider_generation"],
        }
        answer = self._call("PUT", f"/resource_providers/{provider.uuid}/inventories", body)
        if answer.status_code == 409:
            return f"Placement refused the inventory of {provider.name}: {_detail(answer)}"
        if not answer.is_success:
            return f"cannot set inventory of {provider.name}: {answer.status_code} {answer.text}"
        self._saw(provider, answer.json())
        return None

    def _ensure_aggregates(self, provider: DesiredProvider) -> str | None:
        current = self._call("GET", f"/resource_providers/{provider.uuid}/aggregates").json()
        self._saw(provider, current)
        if set(current["aggregates"]) == provider.aggregates:
            return None
        body = {
            "aggregates": sorted(provider.aggregates),
            "resource_provider_generation": current["resource_provider_generation"],
        }
        answer = self._call("PUT", f"/resource_providers/{provider.uuid}/aggregates", body)
        if not answer.is_success:
            return f"cannot set aggregates of {provider.name}: {answer.status_code} {answer.text}"
        self._saw(provider, answer.json())
        return None

    def _providers(self, params: dict[str, str]) -> list[dict[str, Any]]:
        answer = self._call("GET", "/resource_providers", params=params)
        return list(answer.json().get("resource_providers", [])) if answer.is_success else []

    def _remove_stale(
        self,
        found: list[dict[str, Any]],
        wanted: set[str],
        report: SyncReport,
        host: str,
    ) -> None:
        # Children before parents.
        stale = [p for p in found if p["uuid"] not in wanted]
        parents = {p.get("parent_provider_uuid") for p in stale}
        for provider in sorted(stale, key=lambda p: p["uuid"] in parents):
            answer = self._call("DELETE", f"/resource_providers/{provider['uuid']}")
            if answer.status_code == 409:
                report.add(host, f"cannot remove provider {provider['name']}: {_detail(answer)}")
            self._applied.pop(provider["uuid"], None)

    def _set_host_aggregates(
        self, host: str, aggregates: frozenset[str], managed: frozenset[str]
    ) -> str | None:
        if self._host_aggregates.get(host) == aggregates:
            return None
        if not aggregates and not managed and host not in self._host_aggregates:
            # No segment anywhere: no aggregate of this host can be ours to add or remove.
            self._host_aggregates[host] = aggregates
            return None
        node = self._compute_nodes[host]
        current = self._call("GET", f"/resource_providers/{node}/aggregates").json()
        ours = managed | self._host_aggregates.get(host, frozenset())
        wanted = (set(current["aggregates"]) - ours) | aggregates
        if wanted != set(current["aggregates"]):
            body = {
                "aggregates": sorted(wanted),
                "resource_provider_generation": current["resource_provider_generation"],
            }
            answer = self._call("PUT", f"/resource_providers/{node}/aggregates", body)
            if not answer.is_success:
                return f"cannot set the segment aggregates of {host}: {answer.status_code} {_detail(answer)}"
        self._host_aggregates[host] = aggregates
        return None


def _children_of_tops(
    providers: Iterable[DesiredProvider],
) -> dict[str, tuple[str, frozenset[str]]]:
    """For each agent provider (by uuid), its host and the uuids of the providers below it."""
    top_of: dict[str, str] = {}
    host_of: dict[str, str] = {}
    found: dict[str, set[str]] = {}
    for p in providers:
        if p.host is not None:
            top_of[p.uuid], host_of[p.uuid], found[p.uuid] = p.uuid, p.host, set()
        elif p.parent_uuid in top_of:
            top_of[p.uuid] = top_of[p.parent_uuid]
            found[top_of[p.uuid]].add(p.uuid)
    return {top: (host_of[top], frozenset(children)) for top, children in found.items()}


def fingerprint(provider: DesiredProvider) -> str:
    """A digest of everything a sync makes Placement show of ``provider``."""
    shown = {
        "name": provider.name,
        "parent": provider.parent_uuid,
        "host": provider.host,
        "inventories": {rc: dict(inv) for rc, inv in provider.inventories.items()},
        "traits": sorted(provider.traits),
        "aggregates": sorted(provider.aggregates),
    }
    return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()


def _below(listing: Iterable[dict[str, Any]]) -> Callable[[str], list[dict[str, Any]]]:
    """For a provider of ``listing``, every provider below it, parents before children (a tree
    holds the compute node and its other agents too, which are not below the agent's)."""
    children: dict[str, list[dict[str, Any]]] = {}
    for provider in listing:
        children.setdefault(provider.get("parent_provider_uuid") or "", []).append(provider)

    def below(top: str) -> list[dict[str, Any]]:
        found: list[dict[str, Any]] = []
        level = [top]
        while level:
            step = [child for uuid in level for child in children.get(uuid, ())]
            found += step
            level = [child["uuid"] for child in step]
        return found

    return below


def _detail(answer: httpx.Response) -> str:
    try:
        return str(answer.json()["errors"][0]["detail"])
    except (ValueError, KeyError, IndexError, TypeError):
        return answer.text
