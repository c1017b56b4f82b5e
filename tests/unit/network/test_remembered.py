"""Reads kept for the length of a port request (berth.network.store.remembered)."""

from __future__ import annotations

from collections.abc import Collection

from berth.network.store.remembered import forget, remembered, remembering

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
