"""Statements with ``column IN (values)`` that stay cheap for the short lists writes look up.

SQLAlchemy's expanding parameter renders the statement's SQL again at every execution, for the
list's length: a third of the cost of looking up a provider's three traits. ``InList`` keeps a
statement per length for short lists, with one plain parameter per value, and the expanding one
for long lists (a reshape's hundreds of providers), which would otherwise fill the cache.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Generic, TypeVar

import sqlalchemy as sa
from sqlalchemy.sql.expression import ColumnElement

S = TypeVar("S", bound=sa.Executable)

# The longest list that gets a statement of its own.
SHORT = 16


class InList(Generic[S]):
    """``make(column IN (values))``, executed as ``conn.execute(*statement(values, **others))``."""

    def __init__(
        self, column: ColumnElement[Any], make: Callable[[ColumnElement[bool]], S], name: str
    ) -> None:
        self.column = column
        self.make = make
        self.name = name
        self._long = make(column.in_(sa.bindparam(name, expanding=True)))
        self._short: dict[int, S] = {}

    def __call__(self, values: Sequence[Any], **others: Any) -> tuple[S, dict[str, Any]]:
        if len(values) > SHORT:
            return self._long, {self.name: list(values), **others}
        statement = self._short.get(len(values))
        if statement is None:
            names = [f"{self.name}_{i}" for i in range(len(values))]
            statement = self.make(self.column.in_([sa.bindparam(n) for n in names]))
            self._short[len(values)] = statement
        params = {f"{self.name}_{i}": value for i, value in enumerate(values)}
        return statement, params | others
