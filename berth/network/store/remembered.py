"""Reads a port request repeats, made once.

A port request reads its network, the network's segments and subnets, the QoS rules in effect
and the network's grants several times over: its checks, its binding plan and its answer each
read them again, a statement each time (a binding was 30 statements). Within ``remembering()``
the reads marked ``@remembered`` are kept, per argument, until the scope ends: the request's
write transaction and the read of its answer see one snapshot of those tables. A port request
writes ports, addresses, bindings and security group links, never a table these reads read, so
nothing it does makes what is kept stale; a scope is only opened around such requests, and
around a network's show and listing, which write nothing (their check of the caller's sight and
their view ask the same grants). Reads
made ahead of the write transaction are checked inside it, and forgotten if another request
changed them in between (``berth.network.read_ahead``), which also carries them to later
requests (``kept``, ``recall``) while their revisions hold. A port write's answer is mostly made
of such reads: ``on_demand`` begins its read transaction only if one of them misses.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Collection, Iterator, Mapping
from contextlib import ExitStack, contextmanager
from contextvars import ContextVar
from typing import Any, ParamSpec, TypeVar, cast

from sqlalchemy.engine import Connection

from berth.common.db import Database

P = ParamSpec("P")
R = TypeVar("R")

_KEPT: ContextVar[dict[tuple[Any, ...], Any] | None] = ContextVar("remembered_reads", default=None)


@contextmanager
def remembering() -> Iterator[None]:
    """Keep the marked reads made in this scope (a decorator too: a handler's whole run)."""
    token = _KEPT.set({})
    try:
        yield
    finally:
        _KEPT.reset(token)


def forget() -> None:
    """Drop what the scope kept (nothing outside one): the next reads go to the database. For
    reads made before a write transaction that found them changed since (``read_ahead``)."""
    memory = _KEPT.get()
    if memory is not None:
        memory.clear()


def kept() -> dict[tuple[Any, ...], Any]:
    """What the scope has kept so far (a copy), for a later scope to ``recall``."""
    memory = _KEPT.get()
    return dict(memory) if memory is not None else {}


def recall(reads: Mapping[tuple[Any, ...], Any]) -> None:
    """Keep ``reads`` (an earlier scope's ``kept``) in this scope, as if it had made them: the
    caller knows that nothing they read has changed since."""
    memory = _KEPT.get()
    if memory is not None:
        memory.update(reads)


def _key_part(value: Any) -> Any:
    # A collection of ids asks the same whatever its order: the reads order their answers. (An
    # id, the usual argument, is told apart first: the check against the abstract Collection
    # costs several times more.)
    if value is None or isinstance(value, str):
        return value
    if isinstance(value, Collection):
        return frozenset(value)
    return value


def remembered(read: Callable[P, R]) -> Callable[P, R]:
    """``read`` (its first argument a connection) answered from the scope's memory when the
    scope made the same read before, in any transaction. Its answer is shared: callers only
    read it."""

    @functools.wraps(read)
    def kept(*args: P.args, **kwargs: P.kwargs) -> R:
        memory = _KEPT.get()
        if memory is None:
            return read(*args, **kwargs)
        key = (read, *map(_key_part, args[1:]))
        if kwargs:
            key += tuple(sorted((name, _key_part(value)) for name, value in kwargs.items()))
        if key not in memory:
            memory[key] = read(*args, **kwargs)
        return memory[key]  # type: ignore[no-any-return]

    return kept


class _OnDemand:
    """Stands for a read transaction's connection, and begins the transaction when first used."""

    def __init__(self, db: Database, stack: ExitStack) -> None:
        self._db = db
        self._stack = stack
        self._conn: Connection | None = None

    def __getattr__(self, name: str) -> Any:
        if self._conn is None:
            self._conn = self._stack.enter_context(self._db.read())
        return getattr(self._conn, name)


@contextmanager
def on_demand(db: Database) -> Iterator[Connection]:
    """A read transaction begun by its first statement, so none when every read made through
    it is remembered: a transaction's begin and end cost more than a remembered answer, and
    on SQLite each gives up the interpreter lock to the other threads."""
    with ExitStack() as stack:
        yield cast(Connection, _OnDemand(db, stack))
