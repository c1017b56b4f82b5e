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
import numbers
import re
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
    surely_valid = cached_validator(schema, _surely_valid)
    if surely_valid is not None and surely_valid(body):
        return None
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


# -- the valid body's quick check ----------------------------------------------------------------
#
# jsonschema spends about 40 µs on a port's body, most of it making a validator for each
# subschema it descends into. A valid body (nearly every one) is told apart in a tenth of that by
# a check built once per schema from the keywords Berth's schemas use, each as jsonschema reads
# it. The check only ever answers "valid" for what jsonschema takes: for a value it is unsure of
# (a float for an integer, an enum of numbers, a keyword it does not know anywhere in the
# schema), or one that fails, it answers False and jsonschema decides, and words the error.

Check = Callable[[Any], bool]

# Keywords that only annotate (Draft202012Validator without a format checker asserts no format).
_ANNOTATIONS = frozenset({"description", "title", "default", "examples", "$comment", "format"})
_TYPES: dict[str, Check] = {
    "object": lambda v: isinstance(v, dict),
    "array": lambda v: isinstance(v, list),
    "string": lambda v: isinstance(v, str),
    "boolean": lambda v: isinstance(v, bool),
    "null": lambda v: v is None,
    "integer": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "number": lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
}


class _Unknown(Exception):
    """A schema with something the quick check does not read as jsonschema does."""


def _surely_valid(schema: Schema) -> Check | None:
    """The quick check of ``schema``, None when it has a keyword the check does not know."""
    try:
        return _check_of(schema)
    except _Unknown:
        return None


def _check_of(schema: Any) -> Check:
    if schema is True:
        return lambda _: True
    if not isinstance(schema, Mapping):
        raise _Unknown
    checks = [_keyword(schema, key, value) for key, value in schema.items()]
    known = [check for check in checks if check is not None]
    return lambda v: all(check(v) for check in known)


def _keyword(schema: Schema, key: str, value: Any) -> Check | None:
    if key in _ANNOTATIONS:
        return None
    if key in ("type", "enum", "anyOf"):
        return _general(key, value)
    if key in ("properties", "required", "patternProperties", "additionalProperties"):
        return _objects(schema, key, value)
    if key in ("propertyNames", "minProperties", "maxProperties"):
        return _object_size_and_names(key, value)
    if key in ("minLength", "maxLength", "pattern"):
        return _strings(key, value)
    if key in ("minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"):
        return _numbers(key, value)
    if key in ("items", "minItems", "maxItems", "uniqueItems"):
        return _arrays(schema, key, value)
    raise _Unknown


def _general(key: str, value: Any) -> Check:
    if key == "type":
        names = [value] if isinstance(value, str) else list(value)
        if not all(name in _TYPES for name in names):
            raise _Unknown
        kinds = [_TYPES[name] for name in names]
        return lambda v: any(kind(v) for kind in kinds)
    if key == "enum":
        # Strings, null and booleans only, each equal to a member of its own type (jsonschema
        # tells true from 1); anything else is jsonschema's to compare.
        members = list(value)
        return lambda v: (
            (v is None or isinstance(v, (str, bool)))
            and any(type(m) is type(v) and m == v for m in members)
        )
    branches = [_check_of(branch) for branch in value]
    return lambda v: any(branch(v) for branch in branches)


def _objects(schema: Schema, key: str, value: Any) -> Check:
    if key == "properties":
        named = [(name, _check_of(sub)) for name, sub in value.items()]
        return lambda v: (
            not isinstance(v, dict) or all(check(v[name]) for name, check in named if name in v)
        )
    if key == "required":
        wanted = list(value)
        return lambda v: not isinstance(v, dict) or all(name in v for name in wanted)
    if key == "patternProperties":
        patterns = [(pattern, _check_of(sub)) for pattern, sub in value.items()]
        return lambda v: (
            not isinstance(v, dict)
            or all(
                check(item)
                for pattern, check in patterns
                for k, item in v.items()
                if re.search(pattern, k)
            )
        )
    # additionalProperties: the keys neither named nor matched, found as jsonschema finds them
    # (the patterns joined into one expression).
    named_keys = schema.get("properties", {})
    joined = "|".join(schema.get("patternProperties", {}))
    extra = None if value is True or value is False else _check_of(value)

    def extras_pass(v: Any) -> bool:
        if value is True or not isinstance(v, dict):
            return True
        extras = [k for k in v if k not in named_keys and not (joined and re.search(joined, k))]
        if not extras:
            return True
        return extra is not None and all(extra(v[k]) for k in extras)

    return extras_pass


def _object_size_and_names(key: str, value: Any) -> Check:
    if key == "propertyNames":
        names = _check_of(value)
        return lambda v: not isinstance(v, dict) or all(names(k) for k in v)
    if key == "minProperties":
        return lambda v: not isinstance(v, dict) or len(v) >= value
    return lambda v: not isinstance(v, dict) or len(v) <= value


def _strings(key: str, value: Any) -> Check:
    if key == "minLength":
        return lambda v: not isinstance(v, str) or len(v) >= value
    if key == "maxLength":
        return lambda v: not isinstance(v, str) or len(v) <= value
    return lambda v: not isinstance(v, str) or re.search(value, v) is not None


def _numbers(key: str, value: Any) -> Check:
    compare = {
        "minimum": lambda v: v >= value,
        "maximum": lambda v: v <= value,
        "exclusiveMinimum": lambda v: v > value,
        "exclusiveMaximum": lambda v: v < value,
    }[key]
    # (A number other than an int or a float, which no JSON body holds, is jsonschema's.)
    return lambda v: (
        isinstance(v, bool)
        or not isinstance(v, numbers.Number)
        or (isinstance(v, (int, float)) and compare(v))
    )


def _arrays(schema: Schema, key: str, value: Any) -> Check:
    if key == "items":
        if "prefixItems" in schema:
            raise _Unknown
        each = _check_of(value)
        return lambda v: not isinstance(v, list) or all(each(item) for item in v)
    if key == "minItems":
        return lambda v: not isinstance(v, list) or len(v) >= value
    if key == "maxItems":
        return lambda v: not isinstance(v, list) or len(v) <= value
    if not value:
        return lambda _: True
    # Unique strings only: jsonschema's equality of other values is its own.
    return lambda v: (
        not isinstance(v, list)
        or (all(isinstance(item, str) for item in v) and len(set(v)) == len(v))
    )


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
