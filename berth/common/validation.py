"""Request bodies checked against JSON schemas before their handlers run: one mechanism for
every API, as Nova and Neutron check theirs.

Each API keeps one table, ``(method, path template)`` to what that write's body must be (a
schema, or for Compute the schemas per microversion); ``guarded`` puts the check in front of
the handlers of its route table, and the API's OpenAPI document takes its request bodies from
the same table. A schema holds a body to its shape: the keys, their types, the lengths and
ranges the database columns hold. What needs parsing or a lookup stays the domain's to check.

How a failure is worded and refused is each API's own (``Invalid`` carries what it needs).
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

import jsonschema
import orjson

Schema = Mapping[str, Any]
Route = tuple[str, str]
R = TypeVar("R")
S = TypeVar("S")
T = TypeVar("T")
V = TypeVar("V")

# The most of a refused value a message shows: a hostile body may be long.
SHOWN_CHARACTERS = 200

# Values every API takes for the same column types.
MAX_INT = 2**31 - 1
# An integer, or a string of one (Neutron, and clients of Nova, send both).
INTEGER_TEXT = "^ *[-+]?[0-9]{1,19} *$"
# true or false, or the strings of them in any case (Neutron's converter takes both). A
# schema's "description" is what a refusal says the value is not (see ``_reason``).
BOOLEAN: dict[str, Any] = {
    "description": "a boolean",
    "anyOf": [
        {"type": "boolean"},
        {
            "description": "a boolean",
            "type": "string",
            "pattern": "^([Tt][Rr][Uu][Ee]|[Ff][Aa][Ll][Ss][Ee])$",
        },
    ],
}


def integer(low: int, high: int, *, text: bool = True) -> dict[str, Any]:
    """An integer from ``low`` to ``high``; with ``text``, also a string of digits (whose range
    the domain checks once it has parsed it)."""
    number = {"type": "integer", "minimum": low, "maximum": high}
    if not text:
        return number
    words = f"an integer from {low} to {high}"
    return {
        "description": words,
        "anyOf": [number, {"description": words, "type": "string", "pattern": INTEGER_TEXT}],
    }


def string(most: int, least: int = 0, *, nullable: bool = False) -> dict[str, Any]:
    """A string of ``least`` to ``most`` characters (or null)."""
    return {
        "type": ["string", "null"] if nullable else "string",
        "minLength": least,
        "maxLength": most,
    }


@dataclass(frozen=True)
class Invalid:
    """Why a body failed its schema: where (the keys down to the value, ``[]`` for the body
    itself), the value, and what is wrong with it."""

    path: tuple[str | int, ...]
    value: Any
    reason: str

    @property
    def field(self) -> str:
        """``server/name``; ``body`` for the body itself."""
        return "/".join(str(part) for part in self.path) or "body"

    @property
    def attribute(self) -> str:
        """The last key on the way to the value (``name`` of ``networks/0/name``)."""
        named = [part for part in self.path if isinstance(part, str)]
        return named[-1] if named else "body"

    @property
    def shown(self) -> str:
        """The value as a message shows it, cut short."""
        text = orjson.dumps(self.value).decode()
        if len(text) <= SHOWN_CHARACTERS:
            return text
        return text[:SHOWN_CHARACTERS] + "..."


def first_error(body: Any, schema: Schema) -> Invalid | None:
    """The most telling way ``body`` fails ``schema``; None when it is valid."""
    validator = cached_validator(schema, jsonschema.Draft202012Validator)
    error = jsonschema.exceptions.best_match(validator.iter_errors(body))
    if error is None:
        return None
    return Invalid(tuple(error.absolute_path), error.instance, _reason(error))


def may_be_absent(schema: Schema) -> bool:
    """Whether a write held to ``schema`` may go without a body: the schema takes null."""
    return first_error(None, schema) is None


def _reason(error: jsonschema.ValidationError) -> str:
    """The library's words, without the whole value they quote when it is long; for a value
    that matches none of a schema's forms or not its pattern, what it should be, when the
    schema says (its "description"), rather than the forms, the regular expression, or that
    an object should be empty."""
    words = error.schema.get("description") if isinstance(error.schema, Mapping) else None
    if words and error.validator in ("anyOf", "pattern", "maxProperties"):
        return f"{_quoted(error.instance)} is not {words}"
    message = str(error.message)
    quoted = repr(error.instance)
    if len(quoted) > SHOWN_CHARACTERS and quoted in message:
        message = message.replace(quoted, "the value")
    return message


def _quoted(value: Any) -> str:
    quoted = repr(value)
    return quoted if len(quoted) <= SHOWN_CHARACTERS else "the value"


# By identity: the schemas are module constants, built once and never changed.
_VALIDATORS: dict[tuple[int, Callable[[Schema], Any]], tuple[Schema, Any]] = {}


def cached_validator(schema: Schema, make: Callable[[Schema], V]) -> V:
    """The validator ``make`` builds for ``schema`` (a jsonschema validator class, or a function
    that builds one), built once per schema and kind rather than at every request."""
    key = (id(schema), make)
    found = _VALIDATORS.get(key)
    if found is None or found[0] is not schema:
        found = _VALIDATORS[key] = (schema, make(schema))
    return found[1]  # type: ignore[no-any-return]


def guarded(
    routes: Mapping[str, Mapping[str, Callable[[R], T]]],
    bodies: Mapping[Route, S],
    check: Callable[[R, S], None],
) -> dict[str, dict[str, Callable[[R], T]]]:
    """``routes`` with ``check(request, bodies[route])`` before each handler that has a body in
    ``bodies``: the check raises the API's refusal, and the handler runs only on a valid body."""
    return {
        path: {
            method: _guard(handler, bodies[(method, path)], check)
            if (method, path) in bodies
            else handler
            for method, handler in methods.items()
        }
        for path, methods in routes.items()
    }


def _guard(handler: Callable[[R], T], schema: S, check: Callable[[R, S], None]) -> Callable[[R], T]:
    @functools.wraps(handler)
    def checked(request: R) -> T:
        check(request, schema)
        return handler(request)

    return checked
