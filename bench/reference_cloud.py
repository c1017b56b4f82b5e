"""The reference cloud of issue 3, written straight into a placement database (the bulk path).

N compute-node trees, each of six providers::

    cnI  VCPU 64 (x4.0), MEMORY_MB 262144 (4096 reserved), DISK_GB 2000
     |   HW_CPU_X86_AVX2, COMPUTE_VOLUME_MULTI_ATTACH, CUSTOM_GOLD on about a quarter
     +-- cnI:ovs-agent     NET_PACKET_RATE_KILOPACKET_PER_SEC 1000, CUSTOM_VNIC_TYPE_NORMAL
     |    +-- cnI:br-ex    NET_BW_EGR/IGR 10,000,000, CUSTOM_PHYSNET_PUBLIC, CUSTOM_VNIC_TYPE_NORMAL
     +-- cnI:sriov-agent   CUSTOM_VNIC_TYPE_DIRECT
          +-- cnI:ens1f0   NET_BW_EGR/IGR 25,000,000, CUSTOM_PHYSNET_PHYSNET1, CUSTOM_VNIC_TYPE_DIRECT
          +-- cnI:ens1f1   NET_BW_EGR/IGR 25,000,000, CUSTOM_PHYSNET_PHYSNET2, CUSTOM_VNIC_TYPE_DIRECT

Plus one wide host with eight identical PF children (upstream's candidate explosion case). Hosts
spread over 20 rack aggregates; 4 sharing DISK_GB providers, each in 5 racks; then random
allocations bringing about half of CPU and memory and a third of bandwidth into use. Rows are
inserted in bulk (COPY on PostgreSQL, LOAD DATA on MariaDB), a few thousand trees at a time, in one
transaction: the same rows the API would write, much faster.
"""

from __future__ import annotations

import csv
import functools
import operator
import random
import tempfile
import uuid
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import sqlalchemy as sa
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.common.timeutils import utcnow
from berth.placement.store import changes, names, schema

RACKS = 20
NICS = ("br-ex", "ens1f0", "ens1f1")
WIDE_PFS = 8
SHARED_DISKS = 4
BW_CLASSES = ("NET_BW_EGR_KILOBIT_PER_SEC", "NET_BW_IGR_KILOBIT_PER_SEC")
CUSTOM_TRAITS = (
    "CUSTOM_GOLD",
    "CUSTOM_VNIC_TYPE_NORMAL",
    "CUSTOM_VNIC_TYPE_DIRECT",
    "CUSTOM_PHYSNET_PUBLIC",
    "CUSTOM_PHYSNET_PHYSNET1",
    "CUSTOM_PHYSNET_PHYSNET2",
)


@dataclass
class Cloud:
    """What was built: the rack aggregates, the roots and every provider's uuid."""

    racks: list[str]
    roots: list[str] = field(default_factory=list)
    wide_root: str = ""
    providers: int = 0
    allocations: int = 0


def _uuid(rng: random.Random) -> str:
    return str(uuid.UUID(int=rng.getrandbits(128), version=4))


# One row to insert, by column name.
Row = dict[str, Any]


class _Rows:
    """Rows to insert, with explicit ids so one bulk insert per table is enough."""

    def __init__(self, first_id: int) -> None:
        self.next_id = first_id
        self.providers: list[Row] = []
        self.inventories: list[Row] = []
        self.traits: list[Row] = []
        self.aggregates: list[Row] = []
        self.capacity: dict[tuple[int, str], int] = {}
        self.now = utcnow()

    def provider(self, name: str, uid: str, parent: int | None, root: int | None) -> int:
        pid = self.next_id
        self.next_id += 1
        self.providers.append(
            {
                "id": pid,
                "uuid": uid,
                "name": name,
                "generation": 1,
                "parent_provider_id": parent,
                "root_provider_id": root or pid,
                "created_at": self.now,
            }
        )
        return pid

    def inventory(self, pid: int, rc: int, name: str, total: int, **extra: Any) -> None:
        row = {
            "resource_provider_id": pid,
            "resource_class_id": rc,
            "total": total,
            "reserved": extra.get("reserved", 0),
            "min_unit": 1,
            "max_unit": total,
            "step_size": 1,
            "allocation_ratio": extra.get("allocation_ratio", 1.0),
            "created_at": self.now,
        }
        self.inventories.append(row)
        self.capacity[pid, name] = int((total - row["reserved"]) * row["allocation_ratio"])


# Trees written per round of inserts: keeps the builder's memory flat at any N.
_BATCH = 2000


def build(db: Database, n: int, seed: int, batch: int = _BATCH) -> Cloud:
    """Write the reference cloud of ``n`` trees into an empty, migrated database, ``batch``
    trees per round of inserts."""
    rng = random.Random(seed)
    with _bulk(db) as bulk, bulk.write() as conn:
        # Written around the store, so every index must reload.
        changes.publish_everything(conn)
        _ensure_traits(conn)
        rc = names.resource_class_ids(
            conn,
            ["VCPU", "MEMORY_MB", "DISK_GB", "NET_PACKET_RATE_KILOPACKET_PER_SEC", *BW_CLASSES],
        )
        tr = names.trait_ids(
            conn,
            [*CUSTOM_TRAITS, "HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH",
             "MISC_SHARES_VIA_AGGREGATE"],
        )  # fmt: skip
        next_id = (conn.scalar(sa.select(sa.func.max(schema.resource_providers.c.id))) or 0) + 1
        cloud = Cloud(racks=[_uuid(rng) for _ in range(RACKS)])
        agg_ids = _aggregates(conn, cloud.racks)
        owner = _owner(conn)

        def make(start: int, first_id: int) -> tuple[_Rows, list[Row], list[Row]]:
            rows = _Rows(first_id)
            trees = [
                _tree(rows, rng, i, rc, tr, cloud, agg_ids)
                for i in range(start, min(n, start + batch))
            ]
            return (rows, *_instances(rng, trees, rows, rc, owner))

        # One thread makes the next batch while the database takes this one (the driver lets
        # go of the GIL while it waits). Batches are made in order, so the cloud is the same.
        with _checks_after(conn), ThreadPoolExecutor(max_workers=1) as maker:
            ahead = maker.submit(make, 0, next_id)
            for start in range(0, n, batch):
                rows, consumers, allocations = ahead.result()
                next_id = rows.next_id
                if start + batch < n:
                    ahead = maker.submit(make, start + batch, next_id)
                _write(conn, rows)
                _insert(conn, schema.consumers, consumers)
                _insert(conn, schema.allocations, allocations)
                cloud.providers += len(rows.providers)
                cloud.allocations += len(consumers)
        rows = _Rows(next_id)
        for d in range(SHARED_DISKS):
            pid = rows.provider(f"shared-disk-{d}", _uuid(rng), None, None)
            rows.inventory(pid, rc["DISK_GB"], "DISK_GB", 100000)
            rows.traits.append(
                {"resource_provider_id": pid, "trait_id": tr["MISC_SHARES_VIA_AGGREGATE"]}
            )
            for r in range(5):
                rows.aggregates.append(
                    {"resource_provider_id": pid, "aggregate_id": agg_ids[(d * 5 + r) % RACKS]}
                )
        cloud.wide_root = _wide_tree(rows, rng, rc, tr)
        _write(conn, rows)
        cloud.providers += len(rows.providers)
        if conn.dialect.name == "postgresql":
            # Ids were given explicitly; move the sequence past them for providers made later.
            conn.execute(
                sa.text(
                    "SELECT setval(pg_get_serial_sequence('resource_providers', 'id'), "
                    "(SELECT max(id) FROM resource_providers))"
                )
            )
    _analyze(db)
    return cloud


def _analyze(db: Database) -> None:
    """Give the planner statistics for tables that were empty a moment ago. Autovacuum would get
    there in time; until it does, PostgreSQL plans a claim's lookups as if the tables were tiny
    and scans 600,000 providers for each (measured: 3 claims/s instead of 40)."""
    if db.backend == "postgresql":
        with db.engine.connect() as conn:
            conn.execute(sa.text("ANALYZE"))
            conn.commit()
    elif db.backend == "mysql":
        with db.engine.connect() as conn:
            tables = ", ".join(t.name for t in schema.metadata.sorted_tables)
            conn.execute(sa.text(f"ANALYZE TABLE {tables}"))
            conn.commit()


# The tables the load fills, and so the ones whose checks wait until it is done.
_BULK_TABLES = (
    schema.resource_providers,
    schema.inventories,
    schema.resource_provider_traits,
    schema.resource_provider_aggregates,
    schema.consumers,
    schema.allocations,
)


@contextmanager
def _checks_after(conn: Connection) -> Iterator[None]:
    """Foreign keys and plain indexes made once, after the rows are in, rather than row by row.

    PostgreSQL checks each row's foreign keys with a trigger (one index lookup per key per row)
    and keeps each index up to date row by row. So its foreign keys and non-unique indexes are
    dropped in the load's transaction and made again at its end: each index in one sort, each
    key checked in one join, so a bad row still fails the load. MariaDB is told to skip the
    checks for the session, as its own dumps do when they are loaded. Unique constraints and
    primary keys stay: they catch a repeated uuid at once."""
    if conn.dialect.name == "postgresql":
        keys = [fk for table in _BULK_TABLES for fk in table.foreign_key_constraints]
        indexes = [ix for table in _BULK_TABLES for ix in table.indexes if not ix.unique]
        for fk in keys:
            conn.execute(sa.schema.DropConstraint(fk))
        for ix in indexes:
            conn.execute(sa.schema.DropIndex(ix))
        yield
        for ix in indexes:
            conn.execute(sa.schema.CreateIndex(ix))
        for fk in keys:
            conn.execute(sa.schema.AddConstraint(fk))
    else:
        if conn.dialect.name == "mysql":
            # The load's own connection (``_bulk``), closed after it: nothing else runs so.
            conn.execute(sa.text("SET foreign_key_checks = 0"))
        yield


def _write(conn: Connection, rows: _Rows) -> None:
    _insert(conn, schema.resource_providers, rows.providers)
    _insert(conn, schema.inventories, rows.inventories)
    _insert(conn, schema.resource_provider_traits, rows.traits)
    _insert(conn, schema.resource_provider_aggregates, rows.aggregates)


@contextmanager
def _bulk(db: Database) -> Iterator[Database]:
    """The database to load through: on MariaDB, the same one over connections allowed to send
    files (``LOAD DATA LOCAL INFILE``, its COPY), with the same write hooks; else ``db``."""
    if db.backend != "mysql":
        yield db
        return
    url = sa.make_url(db.url).update_query_dict({"local_infile": "1"})
    bulk = Database(url.render_as_string(hide_password=False), db.write_hooks)
    try:
        yield bulk
    finally:
        bulk.dispose()


def _load_data(cursor: Any, table: sa.Table, columns: list[str], rows: list[Row]) -> None:
    """MariaDB's bulk path: the rows as a tab-separated file the server reads in one statement.
    The builder's values are numbers, times and plain names (no tab, newline or backslash);
    None is written as ``\\N``."""
    with tempfile.NamedTemporaryFile("w", suffix=".tsv", newline="") as data:
        write = csv.writer(
            data, delimiter="\t", quoting=csv.QUOTE_NONE, lineterminator="\n"
        ).writerows
        write([["\\N" if row[c] is None else row[c] for c in columns] for row in rows])
        data.flush()
        cursor.execute(
            f"LOAD DATA LOCAL INFILE %s INTO TABLE {table.name} CHARACTER SET utf8mb4 "
            f"({', '.join(columns)})",
            (data.name,),
        )


def _insert(conn: Connection, table: sa.Table, rows: list[Row]) -> None:
    """Insert many rows: with COPY on PostgreSQL and LOAD DATA on MariaDB (several times
    faster), on SQLite with the driver's own executemany of one compiled INSERT (SQLAlchemy's
    executemany spends more time preparing each row's parameters than the database spends on
    the row). The rows' values may be converted in place."""
    if not rows:
        return
    columns = list(rows[0])
    cursor = conn.connection.driver_connection.cursor()  # type: ignore[union-attr]
    if conn.dialect.name == "postgresql":
        with cursor.copy(f"COPY {table.name} ({', '.join(columns)}) FROM STDIN") as copy:
            for row in rows:
                copy.write_row([row[c] for c in columns])
        return
    if conn.dialect.name == "mysql":
        _load_data(cursor, table, columns, rows)
        return
    compiled = table.insert().compile(dialect=conn.dialect, column_keys=columns)
    # The dialect's conversions (SQLite keeps times as text), made in place, once per distinct
    # value: the rows of a batch share one timestamp.
    dialect = conn.dialect
    for column in columns:
        process = table.c[column].type.dialect_impl(dialect).bind_processor(dialect)
        if process is not None:
            converted = functools.lru_cache(maxsize=16)(process)
            for row in rows:
                row[column] = converted(row[column])
    # SQLite's placeholders are positional (qmark).
    names = compiled.positiontup or []
    if len(names) == 1:
        data: list[Any] = [(row[names[0]],) for row in rows]
    else:
        pick = operator.itemgetter(*names)
        data = [pick(row) for row in rows]
    cursor.executemany(str(compiled), data)


def _owner(conn: Connection) -> tuple[int, int]:
    """The project and user ids every instance of the reference cloud belongs to."""
    now = utcnow()
    conn.execute(schema.projects.insert(), [{"external_id": "bench", "created_at": now}])
    conn.execute(schema.users.insert(), [{"external_id": "bench", "created_at": now}])
    project = conn.scalar(
        sa.select(schema.projects.c.id).where(schema.projects.c.external_id == "bench")
    )
    user = conn.scalar(sa.select(schema.users.c.id).where(schema.users.c.external_id == "bench"))
    return int(project), int(user)


def _ensure_traits(conn: Connection) -> None:
    existing = set(names.trait_ids(conn, CUSTOM_TRAITS))
    missing = [t for t in CUSTOM_TRAITS if t not in existing]
    if missing:
        conn.execute(schema.traits.insert(), [{"name": t, "created_at": utcnow()} for t in missing])


def _aggregates(conn: Connection, racks: list[str]) -> list[int]:
    conn.execute(schema.placement_aggregates.insert(), [{"uuid": r} for r in racks])
    agg = schema.placement_aggregates
    ids = dict(conn.execute(sa.select(agg.c.uuid, agg.c.id).where(agg.c.uuid.in_(racks))).all())
    return [ids[r] for r in racks]


def _tree(
    rows: _Rows,
    rng: random.Random,
    i: int,
    rc: dict[str, int],
    tr: dict[str, int],
    cloud: Cloud,
    agg_ids: list[int],
) -> dict[str, int]:
    root_uuid = _uuid(rng)
    cloud.roots.append(root_uuid)
    root = rows.provider(f"cn{i}", root_uuid, None, None)
    rows.inventory(root, rc["VCPU"], "VCPU", 64, allocation_ratio=4.0)
    rows.inventory(root, rc["MEMORY_MB"], "MEMORY_MB", 262144, reserved=4096)
    rows.inventory(root, rc["DISK_GB"], "DISK_GB", 2000)
    root_traits = ["HW_CPU_X86_AVX2", "COMPUTE_VOLUME_MULTI_ATTACH"]
    if rng.random() < 0.25:
        root_traits.append("CUSTOM_GOLD")
    rows.traits += [{"resource_provider_id": root, "trait_id": tr[t]} for t in root_traits]
    rows.aggregates.append({"resource_provider_id": root, "aggregate_id": agg_ids[i % RACKS]})
    ovs = rows.provider(f"cn{i}:ovs-agent", _uuid(rng), root, root)
    rows.inventory(ovs, rc["NET_PACKET_RATE_KILOPACKET_PER_SEC"], "PPS", 1000)
    rows.traits.append({"resource_provider_id": ovs, "trait_id": tr["CUSTOM_VNIC_TYPE_NORMAL"]})
    bridge = rows.provider(f"cn{i}:br-ex", _uuid(rng), ovs, root)
    sriov = rows.provider(f"cn{i}:sriov-agent", _uuid(rng), root, root)
    rows.traits.append({"resource_provider_id": sriov, "trait_id": tr["CUSTOM_VNIC_TYPE_DIRECT"]})
    nics = {"br-ex": bridge}
    for name, pid, total, physnet, vnic in (
        ("br-ex", bridge, 10_000_000, "CUSTOM_PHYSNET_PUBLIC", "CUSTOM_VNIC_TYPE_NORMAL"),
        ("ens1f0", None, 25_000_000, "CUSTOM_PHYSNET_PHYSNET1", "CUSTOM_VNIC_TYPE_DIRECT"),
        ("ens1f1", None, 25_000_000, "CUSTOM_PHYSNET_PHYSNET2", "CUSTOM_VNIC_TYPE_DIRECT"),
    ):
        if pid is None:
            pid = rows.provider(f"cn{i}:{name}", _uuid(rng), sriov, root)
            nics[name] = pid
        for bw in BW_CLASSES:
            rows.inventory(pid, rc[bw], bw, total)
        rows.traits += [
            {"resource_provider_id": pid, "trait_id": tr[physnet]},
            {"resource_provider_id": pid, "trait_id": tr[vnic]},
        ]
    return {"root": root, **nics}


def _wide_tree(rows: _Rows, rng: random.Random, rc: dict[str, int], tr: dict[str, int]) -> str:
    """One host with eight identical physical functions: the candidate explosion case."""
    uid = _uuid(rng)
    root = rows.provider("wide", uid, None, None)
    rows.inventory(root, rc["VCPU"], "VCPU", 64, allocation_ratio=4.0)
    for k in range(WIDE_PFS):
        pf = rows.provider(f"wide:pf{k}", _uuid(rng), root, root)
        for bw in BW_CLASSES:
            rows.inventory(pf, rc[bw], bw, 25_000_000)
        rows.traits += [
            {"resource_provider_id": pf, "trait_id": tr["CUSTOM_PHYSNET_PHYSNET1"]},
            {"resource_provider_id": pf, "trait_id": tr["CUSTOM_VNIC_TYPE_DIRECT"]},
        ]
    return uid


def _instances(
    rng: random.Random,
    trees: list[dict[str, int]],
    rows: _Rows,
    rc: dict[str, int],
    owner: tuple[int, int],
) -> tuple[list[Row], list[Row]]:
    """Instances filling about half of CPU and memory; about a third of them hold bandwidth:
    their consumer rows and allocation rows."""
    now = rows.now
    project, user = owner
    consumers: list[Row] = []
    allocations: list[Row] = []
    for tree in trees:
        root = tree["root"]
        bandwidth_left = {nic: rows.capacity[tree[nic], BW_CLASSES[0]] // 3 for nic in NICS}
        vcpu_left = rows.capacity[root, "VCPU"] // 2
        mem_left = rows.capacity[root, "MEMORY_MB"] // 2
        while vcpu_left >= 8 and mem_left >= 8192:
            vcpus, mem = rng.choice([(2, 2048), (4, 4096), (8, 8192)])
            consumer = str(uuid.UUID(int=rng.getrandbits(128), version=4))
            consumers.append(
                {"uuid": consumer, "project_id": project, "user_id": user, "generation": 1,
                 "created_at": now}
            )  # fmt: skip
            used = [(root, "VCPU", vcpus), (root, "MEMORY_MB", mem), (root, "DISK_GB", 20)]
            nic = rng.choice(NICS)
            share = rows.capacity[tree[nic], BW_CLASSES[0]] // 12
            if rng.random() < 0.5 and bandwidth_left[nic] >= share:
                bandwidth_left[nic] -= share
                used += [(tree[nic], bw, share) for bw in BW_CLASSES]
            allocations += [
                {"resource_provider_id": pid, "consumer_id": consumer,
                 "resource_class_id": rc[name], "used": amount, "created_at": now}
                for pid, name, amount in used
            ]  # fmt: skip
            vcpu_left -= vcpus
            mem_left -= mem
    return consumers, allocations
