"""Reads kept for the length of a port request, or recalled by a later one
(berth.network.store.remembered)."""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path

import sqlalchemy as sa
from sqlalchemy import event
from sqlalchemy.engine import Connection

from berth.common.db import Database
from berth.network.store.remembered import (
    forget,
    kept,
    on_demand,
    recall,
    remembered,
    remembering,
)

reads: list[tuple[str, frozenset[str]]] = []
table = {"net-a": "alpha", "net-b": "beta"}


@remembered
def names(conn: object, ids: Collection[str], *, prefix: str = "") -> list[str]:
    reads.append((prefix, frozenset(ids)))
    return [prefix + table[i] for i in sorted(ids)]


def setup_function() -> None:
    reads.clear()
    table.update({"net-a": "alpha", "net-b": "beta"})


def test_outside_a_scope_every_call_reads() -> None:
    names(object(), ["net-a"])
    table["net-a"] = "changed"
    assert names(object(), ["net-a"]) == ["changed"]
    assert len(reads) == 2


def test_in_a_scope_the_same_read_is_made_once_whatever_the_connection() -> None:
    with remembering():
        first = names(object(), ["net-a", "net-b"])
        table["net-a"] = "changed"
        # Another transaction of the same request, the ids in another order: the same read.
        again = names(object(), {"net-b", "net-a"})
    assert first == again == ["alpha", "beta"]
    assert reads == [("", frozenset({"net-a", "net-b"}))]


def test_other_arguments_are_other_reads() -> None:
    with remembering():
        names(None, ["net-a"])
        names(None, ["net-b"])
        names(None, ["net-a"], prefix="x-")
        names(None, ["net-a"])
    assert len(reads) == 3


def test_what_a_scope_kept_is_gone_after_it() -> None:
    with remembering():
        names(None, ["net-a"])
    table["net-a"] = "changed"
    with remembering():
        assert names(None, ["net-a"]) == ["changed"]
    assert len(reads) == 2


def test_a_scope_is_a_decorator_too() -> None:
    @remembering()
    def handler() -> list[str]:
        names(None, ["net-a"])
        return names(None, ["net-a"])

    assert handler() == handler() == ["alpha"]
    assert len(reads) == 2  # once per run of the handler


def test_forgotten_reads_are_made_again_and_kept_again() -> None:
    with remembering():
        names(None, ["net-a"])
        table["net-a"] = "changed"
        forget()
        assert names(None, ["net-a"]) == names(None, ["net-a"]) == ["changed"]
    assert len(reads) == 2


def test_forgetting_outside_a_scope_does_nothing() -> None:
    forget()
    assert names(None, ["net-a"]) == ["alpha"]


def test_what_a_scope_kept_is_recalled_by_a_later_one() -> None:
    with remembering():
        names(None, ["net-a"])
        earlier = kept()
    table["net-a"] = "changed"
    with remembering():
        recall(earlier)
        assert names(None, ["net-a"]) == ["alpha"]
        assert names(None, ["net-b"]) == ["beta"]
    assert len(reads) == 2  # net-a once, net-b once


def test_a_read_on_demand_begins_a_transaction_only_when_a_read_misses(tmp_path: Path) -> None:
    db = Database(f"sqlite:///{tmp_path / 'on_demand.db'}")
    begun: list[object] = []

    def begin(conn: object) -> None:
        begun.append(conn)

    @remembered
    def one(conn: Connection, value: int) -> int:
        return int(conn.execute(sa.select(sa.literal(value))).scalar_one())

    event.listen(db.engine, "begin", begin)
    with remembering():
        with on_demand(db) as conn:
            assert one(conn, 1) == one(conn, 1) == 1
        assert len(begun) == 1
        with on_demand(db) as conn:
            assert one(conn, 1) == 1
        assert len(begun) == 1
    db.dispose()
