"""What the compute service asks of Placement: candidates, claims, and the compute nodes' providers.

Claims carry the consumer generation they expect, so a claim never overwrites an allocation it
did not see; a 409 is a lost race (another claim took the capacity, or the consumer moved) and
the caller tries its next candidate.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Callable, Iterable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any

import httpx
import orjson

from berth.compute.clients.http import ServiceUnavailable, call

MICROVERSION = "placement 1.39"
# Placement's words for a query naming a trait it does not know.
_UNKNOWN_TRAIT = "No such trait"
_NO_CANDIDATES = b'{"allocation_requests": [], "provider_summaries": {}}'
# Providers whose inventories one reshaper request writes.
INVENTORY_BATCH = 500


@dataclass(frozen=True)
class NodeProvider:
    """What a compute node reports of itself to Placement: its root provider's name, its
    inventories and the traits it adds (others' traits on the provider are kept)."""

    uuid: str
    name: str
    inventories: Mapping[str, Mapping[str, Any]]
    traits: frozenset[str]

    def fingerprint(self) -> str:
        """A digest of everything reporting makes Placement show of this provider."""
        shown = {
            "name": self.name,
            "inventories": {rc: dict(inv) for rc, inv in self.inventories.items()},
            "traits": sorted(self.traits),
        }
        return hashlib.sha256(json.dumps(shown, sort_keys=True).encode()).hexdigest()


@dataclass(frozen=True)
class NewClaim:
    """A consumer's first allocations (no generation yet), as ``claim_together`` writes them."""

    consumer: str
    allocations: Mapping[str, Any]
    project_id: str
    user_id: str


class PlacementError(Exception):
    """Placement refused a request the compute service had every reason to expect to succeed."""


class PlacementClient:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client
        self.client.headers["openstack-api-version"] = MICROVERSION

    def _ok(self, answer: httpx.Response, what: str) -> httpx.Response:
        if not answer.is_success:
            raise PlacementError(f"{what}: {answer.status_code} {answer.text[:500]}")
        return answer

    def allocation_candidates(self, params: Sequence[tuple[str, str]]) -> dict[str, Any]:
        """Placement's answer, read."""
        # orjson: an answer of a thousand candidates is megabytes, four times faster to read.
        return orjson.loads(self.allocation_candidates_body(params))  # type: ignore[no-any-return]

    def allocation_candidates_body(self, params: Sequence[tuple[str, str]]) -> bytes:
        """Placement's answer as it sent it (the scheduler reads it its own way); a trait it
        has never heard of (a port's physical network no agent reports, say) is answered 400,
        which for a scheduler means no candidate."""
        answer = call(self.client, "GET", "/allocation_candidates", params=list(params))
        if answer.status_code == 400 and _UNKNOWN_TRAIT in answer.text:
            return _NO_CANDIDATES
        return self._ok(answer, "GET /allocation_candidates").content

    def claim(
        self,
        consumer: str,
        allocations: Mapping[str, Any],
        project_id: str,
        user_id: str,
        consumer_generation: int | None = None,
    ) -> bool:
        """Write the consumer's allocations; False when Placement says another writer won."""
        body = {
            "allocations": allocations,
            "project_id": project_id,
            "user_id": user_id,
            "consumer_generation": consumer_generation,
            "consumer_type": "INSTANCE",
        }
        answer = call(self.client, "PUT", f"/allocations/{consumer}", json=body)
        if answer.status_code == 409:
            return False
        self._ok(answer, f"PUT /allocations/{consumer}")
        return True

    def claim_together(self, claims: Sequence[NewClaim]) -> bool:
        """Write several new consumers' allocations in one atomic request (POST
        /allocations); False when Placement refuses any of them, and then none is written."""
        if not claims:
            return True
        body = {
            claim.consumer: {
                "allocations": claim.allocations,
                "project_id": claim.project_id,
                "user_id": claim.user_id,
                "consumer_generation": None,
                "consumer_type": "INSTANCE",
            }
            for claim in claims
        }
        answer = call(self.client, "POST", "/allocations", json=body)
        if answer.status_code == 409:
            return False
        self._ok(answer, "POST /allocations")
        return True

    def allocations(self, consumer: str) -> dict[str, Any]:
        answer = call(self.client, "GET", f"/allocations/{consumer}")
        return self._ok(answer, f"GET /allocations/{consumer}").json()  # type: ignore[no-any-return]

    def move_allocations(self, source: str, target: str, target_type: str) -> bool:
        """Give ``target`` every allocation ``source`` holds (replacing what ``target`` held) and
        leave ``source`` holding nothing, in one atomic write (POST /allocations), under both
        consumers' generations; a writer in between means reading again. False when ``source``
        holds nothing. A move parks the server's source allocation on its migration this way,
        and a revert or a failed move gives it back."""
        for _ in range(3):
            held = self.allocations(source)
            if not held.get("allocations"):
                return False
            current = self.allocations(target)
            owner = {"project_id": held["project_id"], "user_id": held["user_id"]}
            body = {
                target: {
                    "allocations": {
                        rp: {"resources": a["resources"]} for rp, a in held["allocations"].items()
                    },
                    "consumer_generation": current.get("consumer_generation"),
                    "consumer_type": target_type,
                    **owner,
                },
                source: {
                    "allocations": {},
                    "consumer_generation": held.get("consumer_generation"),
                    "consumer_type": held.get("consumer_type", "INSTANCE"),
                    **owner,
                },
            }
            answer = call(self.client, "POST", "/allocations", json=body)
            if answer.status_code != 409 or "consumer generation" not in answer.text.lower():
                self._ok(answer, f"POST /allocations ({source} -> {target})")
                return True
        raise PlacementError(f"the allocations of {source} and {target} kept changing under us")

    def release(self, consumer: str) -> None:
        """Remove every allocation of the consumer; nothing to remove is fine (idempotent)."""
        answer = call(self.client, "DELETE", f"/allocations/{consumer}")
        if answer.status_code not in (204, 404):
            self._ok(answer, f"DELETE /allocations/{consumer}")

    # -- the compute nodes' providers (host agents report them) ----------------------------------

    def provider(self, uuid: str) -> dict[str, Any] | None:
        answer = call(self.client, "GET", f"/resource_providers/{uuid}")
        if answer.status_code == 404:
            return None
        return self._ok(answer, f"GET /resource_providers/{uuid}").json()  # type: ignore[no-any-return]

    def ensure_provider(self, uuid: str, name: str) -> dict[str, Any]:
        found = self.provider(uuid)
        if found is not None:
            return found
        answer = call(self.client, "POST", "/resource_providers", json={"uuid": uuid, "name": name})
        if answer.status_code == 409:
            found = self.provider(uuid)
            if found is not None:
                return found
        return self._ok(answer, "POST /resource_providers").json()  # type: ignore[no-any-return]

    def report_provider(
        self, uuid: str, name: str, inventories: Mapping[str, Mapping[str, Any]], traits: set[str]
    ) -> int:
        """Create the provider or bring it up to date: its inventories replaced, ``traits``
        added (keeping those others put there). Its generation after."""
        # Every write to a provider moves its generation on: at 0 it holds nothing yet, and a
        # fleet's first start need not read what it is about to write.
        empty = self.ensure_provider(uuid, name)["generation"] == 0
        generation = self._replace(
            uuid, "inventories", lambda _current: dict(inventories),
            {"inventories": {}, "resource_provider_generation": 0} if empty else None,
        )  # fmt: skip
        return self.update_traits(
            uuid, traits, set(),
            {"traits": [], "resource_provider_generation": generation} if empty else None,
        )  # fmt: skip

    def report_providers(
        self,
        providers: Sequence[NodeProvider],
        recorded: Mapping[str, tuple[str | None, int | None]],
        reported: Callable[[], None] = lambda: None,
        threads: int = 8,
    ) -> dict[str, int]:
        """``report_provider`` for many compute nodes at once, each provider's generation after.

        One listing says which exist and at which generation. One whose generation and
        fingerprint are still those ``recorded`` when it was last reported (nobody wrote to it
        since) is not read again: a restart of a fleet costs that one listing. New ones are
        made without reads and their inventories written many per request (the reshaper,
        where Placement's policy allows it); the rest are brought up to date one by one.
        ``reported`` is called once per provider done."""
        shown = self._listing([p.uuid for p in providers])
        generations: dict[str, int] = {}
        new: list[NodeProvider] = []
        changed: list[NodeProvider] = []
        for provider in providers:
            current = shown.get(provider.uuid)
            if current is None:
                new.append(provider)
            elif recorded.get(provider.uuid) == (provider.fingerprint(), current["generation"]):
                generations[provider.uuid] = current["generation"]
                reported()
            else:
                changed.append(provider)

        def update(provider: NodeProvider) -> int:
            generation = self.report_provider(
                provider.uuid, provider.name, provider.inventories, set(provider.traits)
            )
            reported()
            return generation

        # Each custom trait once for the lot, not once per new provider that has it.
        self._make_custom_traits({trait for provider in new for trait in provider.traits})
        with ThreadPoolExecutor(threads) as pool:
            made = dict(zip([p.uuid for p in new], pool.map(self._make, new), strict=True))
            # Made by someone else meanwhile: the long way, as for the changed ones.
            changed += [p for p in new if made[p.uuid] is None]
            generations |= zip([p.uuid for p in changed], pool.map(update, changed), strict=True)
            fresh = {p.uuid: (p, made[p.uuid]) for p in new if made[p.uuid] is not None}
            generations |= self._write_inventories(fresh, pool)
        for _ in fresh:
            reported()
        return generations

    def _listing(self, uuids: Sequence[str]) -> dict[str, dict[str, Any]]:
        """Providers by uuid: those of ``uuids``, or more (one listing of all for many)."""
        params = {"uuid": uuids[0]} if len(uuids) == 1 else {}
        answer = call(self.client, "GET", "/resource_providers", params=params)
        found = self._ok(answer, "GET /resource_providers").json()["resource_providers"]
        return {p["uuid"]: p for p in found}

    def _make(self, provider: NodeProvider) -> int | None:
        """Create the provider with its traits (custom ones made already), without reading (it
        holds nothing yet); the generation its inventories are to be written at, or None when
        it already existed or another writer came in between."""
        body = {"uuid": provider.uuid, "name": provider.name}
        answer = call(self.client, "POST", "/resource_providers", json=body)
        if answer.status_code == 409:
            return None
        generation: int = self._ok(answer, "POST /resource_providers").json()["generation"]
        body = {"traits": sorted(provider.traits), "resource_provider_generation": generation}
        answer = call(self.client, "PUT", f"/resource_providers/{provider.uuid}/traits", json=body)
        if answer.status_code == 409:
            return None
        path = f"PUT /resource_providers/{provider.uuid}/traits"
        return int(self._ok(answer, path).json()["resource_provider_generation"])

    def _write_inventories(
        self,
        fresh: Mapping[str, tuple[NodeProvider, int]],
        pool: ThreadPoolExecutor,
    ) -> dict[str, int]:
        """The inventories of providers just made, at the generation they were made with,
        through the reshaper (no allocations to move) many per request; where Placement's
        policy refuses it, or a batch failed, one provider at a time. Their generations after."""
        uuids = list(fresh)
        generations: dict[str, int] = {}
        for start in range(0, len(uuids), INVENTORY_BATCH):
            chunk = uuids[start : start + INVENTORY_BATCH]
            body = {
                "inventories": {
                    uuid: {
                        "resource_provider_generation": fresh[uuid][1],
                        "inventories": {
                            rc: dict(inv) for rc, inv in fresh[uuid][0].inventories.items()
                        },
                    }
                    for uuid in chunk
                },
                "allocations": {},
            }
            if call(self.client, "POST", "/reshaper", json=body).status_code == 204:
                continue
            # Placement's default policy gives the reshaper to the service role only.
            rest = uuids[start:]
            written = pool.map(lambda uuid: self._put_inventories(*fresh[uuid]), rest)
            generations |= zip(rest, written, strict=True)
            break
        if len(generations) < len(uuids):
            # The reshaper does not answer generations: one listing tells them all.
            shown = self._listing(uuids)
            generations = {u: shown[u]["generation"] for u in uuids} | generations
        return generations

    def _put_inventories(self, provider: NodeProvider, generation: int) -> int:
        body = {
            "inventories": {rc: dict(inv) for rc, inv in provider.inventories.items()},
            "resource_provider_generation": generation,
        }
        path = f"/resource_providers/{provider.uuid}/inventories"
        answer = call(self.client, "PUT", path, json=body)
        if answer.status_code == 409:
            # Another writer in between: the long way.
            return self.report_provider(
                provider.uuid, provider.name, provider.inventories, set(provider.traits)
            )
        return int(self._ok(answer, f"PUT {path}").json()["resource_provider_generation"])

    def _make_custom_traits(self, traits: Iterable[str]) -> None:
        for trait in sorted(traits):
            if trait.startswith("CUSTOM_"):
                call(self.client, "PUT", f"/traits/{trait}")

    def set_inventories(self, uuid: str, inventories: Mapping[str, Mapping[str, Any]]) -> None:
        """Replace the provider's inventories."""
        self._replace(uuid, "inventories", lambda _current: dict(inventories))

    def update_traits(
        self, uuid: str, add: set[str], remove: set[str], current: Mapping[str, Any] | None = None
    ) -> int:
        """Add and remove traits, keeping those others put there (the network's, an operator's);
        the provider's generation after."""
        self._make_custom_traits(add)
        return self._replace(
            uuid, "traits", lambda current: sorted((set(current) | add) - remove), current
        )

    def update_aggregates(self, uuid: str, add: set[str], remove: set[str]) -> None:
        """Add and remove aggregates, keeping the others (routed segments' are the network's)."""
        self._replace(uuid, "aggregates", lambda current: sorted((set(current) | add) - remove))

    def _replace(
        self,
        uuid: str,
        part: str,
        wanted_of: Callable[[Any], Any],
        current: Mapping[str, Any] | None = None,
    ) -> int:
        """Read a provider's inventories, traits or aggregates (unless ``current`` is what a
        read would answer) and write what ``wanted_of`` makes of them, under the provider's
        generation; another writer in between means reading again (three times at most). The
        provider's generation after the write."""
        path = f"/resource_providers/{uuid}/{part}"
        for _ in range(3):
            if current is None:
                current = self._ok(call(self.client, "GET", path), f"GET {path}").json()
            wanted = wanted_of(current[part])
            if _same(wanted, current[part]):
                return int(current["resource_provider_generation"])
            body = {
                part: wanted,
                "resource_provider_generation": current["resource_provider_generation"],
            }
            answer = call(self.client, "PUT", path, json=body)
            if answer.status_code != 409 or "generation" not in answer.text:
                return int(self._ok(answer, f"PUT {path}").json()["resource_provider_generation"])
            current = None
        raise PlacementError(f"the {part} of {uuid} kept changing under us")


def _same(wanted: Any, current: Any) -> bool:
    if isinstance(wanted, list):
        return set(wanted) == set(current)
    return bool(wanted == current)


__all__ = ["NodeProvider", "PlacementClient", "PlacementError", "ServiceUnavailable"]
