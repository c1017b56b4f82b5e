"""An immutable in-memory view of every provider, built from the database in one read.

The solver and the provider-list filter work only on a ``Snapshot``; it holds what upstream reads
with a dozen queries per request (capacities, usages, traits, aggregates, trees) plus indexes
derived once (trees by root, sharing providers, providers by aggregate).
"""

from __future__ import annotations

import contextlib
from collections import defaultdict
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

import sqlalchemy as sa

from berth.placement import capacity
from berth.placement.store import schema
from berth.placement.store.inventories import inventory_of

SHARING_TRAIT = "MISC_SHARES_VIA_AGGREGATE"


@dataclass(frozen=True, slots=True)
class Inventory(capacity.Inventory):
    """An inventory and how much of it is already allocated."""

    used: int = 0

    def fits(self, amount: int) -> bool:
        """Whether one more allocation of ``amount`` fits, by the same rule claims are held to."""
        return capacity.fit(self, amount, self.used + amount, self.used) is None


@dataclass(frozen=True, slots=True)
class Provider:
    uuid: str
    name: str
    generation: int = 0
    parent_uuid: str | None = None
    root_uuid: str = ""
    inventories: Mapping[str, Inventory] = field(default_factory=dict)
    traits: frozenset[str] = frozenset()
    aggregates: frozenset[str] = frozenset()

    @property
    def is_sharing(self) -> bool:
        return SHARING_TRAIT in self.traits


@dataclass(frozen=True, slots=True)
class Snapshot:
    """Providers by uuid in database id order, plus the known class and trait names.

    Build with ``Snapshot.build`` (or ``load_snapshot``) so the indexes are filled in.
    """

    providers: Mapping[str, Provider]
    resource_classes: frozenset[str]
    traits: frozenset[str]
    trees: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    by_aggregate: Mapping[str, frozenset[str]] = field(default_factory=dict)
    has_trees: bool = False
    # Traits listed in summaries come in the order they were created, as upstream lists them.
    trait_rank: Mapping[str, int] = field(default_factory=dict)

    @classmethod
    def build(
        cls,
        providers: Iterable[Provider],
        resource_classes: Iterable[str],
        traits: Iterable[str],
    ) -> Snapshot:
        """``traits`` are every known trait name, oldest first."""
        traits = list(traits)
        by_uuid = {p.uuid: p for p in providers}
        trees: dict[str, list[str]] = defaultdict(list)
        by_agg: dict[str, set[str]] = defaultdict(set)
        for p in by_uuid.values():
            trees[p.root_uuid].append(p.uuid)
            for agg in p.aggregates:
                by_agg[agg].add(p.uuid)
        return cls(
            providers=by_uuid,
            resource_classes=frozenset(resource_classes),
            traits=frozenset(traits),
            trait_rank={name: rank for rank, name in enumerate(traits)},
            trees={root: tuple(members) for root, members in trees.items()},
            by_aggregate={agg: frozenset(members) for agg, members in by_agg.items()},
            has_trees=any(p.parent_uuid for p in by_uuid.values()),
        )

    def root_of(self, uuid: str) -> str:
        return self.providers[uuid].root_uuid

    def roots(self) -> list[str]:
        """Root uuids in id order."""
        return [p.uuid for p in self.providers.values() if p.parent_uuid is None]

    def ancestors(self, uuid: str) -> set[str]:
        """The provider and every provider above it."""
        found = set()
        current: str | None = uuid
        while current is not None:
            found.add(current)
            current = self.providers[current].parent_uuid
        return found

    def in_aggregates(self, any_ofs: Iterable[frozenset[str]]) -> set[str]:
        """Providers that belong, each by itself, to one aggregate of every any-of set."""
        result: set[str] | None = None
        for any_of in any_ofs:
            members = set().union(*(self.by_aggregate.get(agg, ()) for agg in any_of))
            result = members if result is None else result & members
        return result if result is not None else set(self.providers)

    def sharing_anchors(self, uuid: str) -> set[str]:
        """Roots of every provider sharing an aggregate with ``uuid`` (its own root included
        when it has any aggregate): the trees a sharing provider may serve."""
        aggs = self.providers[uuid].aggregates
        members = set().union(*(self.by_aggregate[agg] for agg in aggs))
        return {self.providers[m].root_uuid for m in members}


def load_snapshot(conn: sa.Connection) -> Snapshot:
    """Read every provider with its inventories, usages, traits and aggregates.

    Runs a fixed handful of queries inside one transaction so the view is consistent.
    """
    rp = schema.resource_providers
    with conn.begin() if not conn.in_transaction() else contextlib.nullcontext():
        rc_names = dict(
            conn.execute(
                sa.select(schema.resource_classes.c.id, schema.resource_classes.c.name)
            ).all()
        )
        t = schema.traits
        trait_names = dict(conn.execute(sa.select(t.c.id, t.c.name).order_by(t.c.id)).all())
        rows = conn.execute(
            sa.select(
                rp.c.id,
                rp.c.uuid,
                rp.c.name,
                rp.c.generation,
                rp.c.parent_provider_id,
                rp.c.root_provider_id,
            ).order_by(rp.c.id)
        ).all()
        uuid_of = {row.id: row.uuid for row in rows}
        used = _usages(conn)
        inventories: dict[int, dict[str, Inventory]] = defaultdict(dict)
        inv = schema.inventories
        for row in conn.execute(sa.select(inv)).all():
            inventories[row.resource_provider_id][rc_names[row.resource_class_id]] = Inventory(
                **inventory_of(row).fields(),
                used=used.get((row.resource_provider_id, row.resource_class_id), 0),
            )
        traits: dict[int, set[str]] = defaultdict(set)
        rpt = schema.resource_provider_traits
        for rp_id, trait_id in conn.execute(
            sa.select(rpt.c.resource_provider_id, rpt.c.trait_id)
        ).all():
            traits[rp_id].add(trait_names[trait_id])
        aggs: dict[int, set[str]] = defaultdict(set)
        rpa, agg = schema.resource_provider_aggregates, schema.placement_aggregates
        for rp_id, agg_uuid in conn.execute(
            sa.select(rpa.c.resource_provider_id, agg.c.uuid).join(
                agg, agg.c.id == rpa.c.aggregate_id
            )
        ).all():
            aggs[rp_id].add(agg_uuid)
    providers = [
        Provider(
            uuid=row.uuid,
            name=row.name,
            generation=row.generation,
            parent_uuid=uuid_of.get(row.parent_provider_id),
            root_uuid=uuid_of.get(row.root_provider_id, row.uuid),
            inventories=inventories.get(row.id, {}),
            traits=frozenset(traits.get(row.id, ())),
            aggregates=frozenset(aggs.get(row.id, ())),
        )
        for row in rows
    ]
    return Snapshot.build(providers, rc_names.values(), trait_names.values())


def _usages(conn: sa.Connection) -> dict[tuple[int, int], int]:
    alloc = schema.allocations
    query = sa.select(
        alloc.c.resource_provider_id, alloc.c.resource_class_id, sa.func.sum(alloc.c.used)
    ).group_by(alloc.c.resource_provider_id, alloc.c.resource_class_id)
    # int(): MySQL returns SUM as Decimal.
    return {(rp_id, rc_id): int(total) for rp_id, rc_id, total in conn.execute(query).all()}
