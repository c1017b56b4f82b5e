"""Copy a placement cloud from a Berth database into upstream Placement's database (PostgreSQL).

The two schemas hold the same tables with the same columns, except that upstream also stamps the
trait, aggregate and aggregate-membership rows, and that ids of resource classes, traits and
consumer types are each service's own: upstream numbers its standard resource classes by their
place in os-resource-classes and its custom ones from 10000, and fills its traits table at start.
So rows are copied with their ids (providers, consumers, projects, users, aggregates, inventories,
allocations) and every class, trait and consumer type id is translated by name. Custom resource
classes and traits are created through upstream's own API first, so they get the ids upstream
gives them; the standard ones must already be there (upstream writes them when it starts).

Rows move as COPY streams from one database to the other with the translation done in the
SELECT, so no row passes through Python: a 10,000-tree cloud (60,000 providers, a million
allocations) copies in seconds. ``ANALYZE`` follows, as after Berth's own bulk load.
"""

from __future__ import annotations

from urllib.parse import quote

import httpx
import psycopg
import sqlalchemy as sa

from bench.placement_bench import _HEADERS

# Tables copied as they are: (table, columns). Order respects the foreign keys.
_PLAIN = (
    ("projects", "id, external_id, created_at, updated_at"),
    ("users", "id, external_id, created_at, updated_at"),
    ("placement_aggregates", "id, uuid"),
    (
        "resource_providers",
        "id, uuid, name, generation, root_provider_id, parent_provider_id, created_at, updated_at",
    ),
    ("resource_provider_aggregates", "resource_provider_id, aggregate_id"),
)
# Tables whose id sequences must move past the copied ids.
_SEQUENCES = (
    "projects", "users", "placement_aggregates", "resource_providers", "inventories",
    "consumers", "allocations",
)  # fmt: skip


def libpq_url(url: str) -> str:
    """A SQLAlchemy PostgreSQL URL (``postgresql+psycopg://...``) as libpq takes it."""
    return sa.make_url(url).set(drivername="postgresql").render_as_string(hide_password=False)


def copy_cloud(berth_url: str, upstream_url: str, upstream_api: str) -> dict[str, int]:
    """Copy every provider, inventory, trait and aggregate membership, consumer and allocation
    of the Berth database at ``berth_url`` into the empty upstream database at ``upstream_url``,
    whose server answers at ``upstream_api``. Returns the rows copied per table."""
    with (
        psycopg.connect(libpq_url(berth_url)) as src,
        psycopg.connect(libpq_url(upstream_url)) as dst,
    ):
        held = dst.execute(
            "SELECT (SELECT count(*) FROM resource_providers) + (SELECT count(*) FROM consumers)"
        ).fetchone()
        if held and held[0]:
            raise RuntimeError("the upstream database already holds providers or consumers")
        classes = _translation(src, dst, upstream_api, "resource_classes", "resource_classes")
        traits = _translation(src, dst, upstream_api, "traits", "traits")
        types = _consumer_types(src, dst)
        counts = {}
        for table, columns in _PLAIN:
            counts[table] = _stream(src, dst, table, columns, f"SELECT {columns} FROM {table}")
        counts["resource_provider_traits"] = _stream(
            src, dst, "resource_provider_traits", "resource_provider_id, trait_id",
            f"SELECT t.resource_provider_id, m.new FROM resource_provider_traits t "
            f"JOIN {_values(traits)} ON m.old = t.trait_id",
        )  # fmt: skip
        inventory = (
            "id, resource_provider_id, resource_class_id, total, reserved, min_unit, max_unit, "
            "step_size, allocation_ratio, created_at, updated_at"
        )
        counts["inventories"] = _stream(
            src, dst, "inventories", inventory,
            f"SELECT i.id, i.resource_provider_id, m.new, i.total, i.reserved, i.min_unit, "
            f"i.max_unit, i.step_size, i.allocation_ratio, i.created_at, i.updated_at "
            f"FROM inventories i JOIN {_values(classes)} ON m.old = i.resource_class_id",
        )  # fmt: skip
        consumer_type = f"(SELECT m.new FROM {_values(types)} WHERE m.old = c.consumer_type_id)"
        counts["consumers"] = _stream(
            src, dst, "consumers",
            "id, uuid, project_id, user_id, generation, consumer_type_id, created_at, updated_at",
            f"SELECT c.id, c.uuid, c.project_id, c.user_id, c.generation, {consumer_type}, "
            f"c.created_at, c.updated_at FROM consumers c",
        )  # fmt: skip
        counts["allocations"] = _stream(
            src, dst, "allocations",
            "id, resource_provider_id, consumer_id, resource_class_id, used, created_at, "
            "updated_at",
            f"SELECT a.id, a.resource_provider_id, a.consumer_id, m.new, a.used, a.created_at, "
            f"a.updated_at FROM allocations a JOIN {_values(classes)} ON m.old = a.resource_class_id",
        )  # fmt: skip
        _check_counts(src, counts)
        for table in ("resource_provider_traits", "resource_provider_aggregates"):
            dst.execute(f"UPDATE {table} SET created_at = now()")
        dst.execute("UPDATE placement_aggregates SET created_at = now()")
        for table in _SEQUENCES:
            dst.execute(
                f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), "
                f"greatest((SELECT max(id) FROM {table}), 1))"
            )
        dst.commit()
    with psycopg.connect(libpq_url(upstream_url), autocommit=True) as dst:
        dst.execute("ANALYZE")
    return counts


def _translation(
    src: psycopg.Connection, dst: psycopg.Connection, api: str, table: str, path: str
) -> dict[int, int]:
    """Berth's id -> upstream's id for every name of ``table`` that Berth's rows use; custom names
    upstream lacks are created through its API (``PUT /<path>/<name>``)."""
    used = {
        "resource_classes": "SELECT resource_class_id FROM inventories "
        "UNION SELECT resource_class_id FROM allocations",
        "traits": "SELECT trait_id FROM resource_provider_traits",
    }[table]
    ours = dict(src.execute(f"SELECT id, name FROM {table} WHERE id IN ({used})").fetchall())
    theirs = _names(dst, table)
    missing = sorted(set(ours.values()) - set(theirs))
    with httpx.Client(base_url=api, headers=_HEADERS, timeout=60) as client:
        for name in missing:
            if not name.startswith("CUSTOM_"):
                raise RuntimeError(f"upstream has no standard {table} {name}: is it synced?")
            client.put(f"/{path}/{quote(name)}").raise_for_status()
    theirs = _names(dst, table)
    return {old: theirs[name] for old, name in ours.items()}


def _names(conn: psycopg.Connection, table: str) -> dict[str, int]:
    conn.commit()  # a fresh snapshot: the API may just have added names
    return {name: id_ for id_, name in conn.execute(f"SELECT id, name FROM {table}").fetchall()}


def _consumer_types(src: psycopg.Connection, dst: psycopg.Connection) -> dict[int, int]:
    """Consumer types have no API of their own upstream (a claim names one): insert by name."""
    ours = dict(src.execute("SELECT id, name FROM consumer_types").fetchall())
    for name in ours.values():
        dst.execute(
            "INSERT INTO consumer_types (name, created_at) VALUES (%s, now()) "
            "ON CONFLICT (name) DO NOTHING",
            (name,),
        )
    theirs = _names(dst, "consumer_types")
    return {old: theirs[name] for old, name in ours.items()}


def _values(mapping: dict[int, int]) -> str:
    """An inline table ``m(old, new)`` of an id translation (a few dozen rows at most)."""
    rows = (
        ", ".join(f"({old}, {new})" for old, new in mapping.items())
        or "(NULL::integer, NULL::integer)"
    )
    return f"(VALUES {rows}) AS m(old, new)"


def _stream(
    src: psycopg.Connection, dst: psycopg.Connection, table: str, columns: str, select: str
) -> int:
    """COPY the rows of ``select`` from ``src`` into ``table`` of ``dst``; the rows copied."""
    with (
        src.cursor().copy(f"COPY ({select}) TO STDOUT") as out,
        dst.cursor().copy(f"COPY {table} ({columns}) FROM STDIN") as into,
    ):
        for block in out:
            into.write(block)
    row = dst.execute(f"SELECT count(*) FROM {table}").fetchone()
    return int(row[0]) if row else 0


def _check_counts(src: psycopg.Connection, counts: dict[str, int]) -> None:
    """Every row arrived: a name that failed to translate would have dropped rows in a join."""
    for table, copied in counts.items():
        row = src.execute(f"SELECT count(*) FROM {table}").fetchone()
        if row is None or int(row[0]) != copied:
            raise RuntimeError(f"{table}: {copied} rows copied of {row[0] if row else '?'}")
