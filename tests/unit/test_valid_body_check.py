"""The valid body's quick check (``berth.common.validation``) only ever takes what jsonschema
takes, for every schema of every API: bodies drawn near each schema (each keyword's boundaries,
its patterns, wrong types, unknown keys, tricky values) and checked both ways."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from berth.common import validation
from berth.compute.api.schemas import server
from berth.network.api.schemas import ports
from tests.unit.test_request_validation import _schemas

SCHEMAS = _schemas()

# Values that sit on the edges of JSON Schema's types and of Python's.
TRICKY: list[Any] = [
    None, True, False, 0, 1, -1, 1.0, 1.5, 2**31, 2**31 - 1, 2**64, "", "x", "true", "TRUE",
    " 12 ", "12\n", "true\n", "a" * 256, "\u00e9" * 10, [], {}, ["a", "a"], [1, True], [1, 1.0],
    {"a": 1}, "auto", "AUTO", "00000000-0000-0000-0000-000000000001",
]  # fmt: skip

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=6,
)


def near(schema: Any, depth: int = 0) -> st.SearchStrategy[Any]:
    """Values close to what ``schema`` takes: mostly shaped by it, sometimes not at all."""
    anything = st.sampled_from(TRICKY) | json_values
    if not isinstance(schema, Mapping) or depth > 6:
        return anything
    options = [anything]
    if "enum" in schema:
        options.append(st.sampled_from(list(schema["enum"])))
    for branch in schema.get("anyOf", []):
        options.append(near(branch, depth + 1))
    types = schema.get("type", [])
    for kind in [types] if isinstance(types, str) else types:
        options.append(_shaped(schema, kind, depth))
    if not types and ("properties" in schema or "required" in schema):
        options.append(_shaped(schema, "object", depth))
    return st.one_of(*options)


def _shaped(schema: Mapping[str, Any], kind: str, depth: int) -> st.SearchStrategy[Any]:
    if kind == "string":
        return _strings(schema)
    if kind in ("integer", "number"):
        low, high = schema.get("minimum", -(2**40)), schema.get("maximum", 2**40)
        edges = st.sampled_from([low - 1, low, high, high + 1, float(low), float(high) + 0.5])
        return edges | st.integers(low - 2, high + 2)
    if kind == "array":
        least = schema.get("minItems", 0)
        return st.lists(
            near(schema.get("items", {}), depth + 1), min_size=max(0, least - 1), max_size=least + 3
        )
    if kind == "object":
        return _objects(schema, depth)
    return st.sampled_from(TRICKY)


def _strings(schema: Mapping[str, Any]) -> st.SearchStrategy[str]:
    least, most = schema.get("minLength", 0), schema.get("maxLength", 300)
    lengths = st.sampled_from([max(0, least - 1), least, most, most + 1])
    options = [lengths.map(lambda n: "a" * n), st.text(max_size=12)]
    if "pattern" in schema:
        options.append(st.from_regex(schema["pattern"]))
        options.append(st.from_regex(schema["pattern"], fullmatch=True))
    return st.one_of(*options)


def _objects(schema: Mapping[str, Any], depth: int) -> st.SearchStrategy[dict[str, Any]]:
    named = dict(schema.get("properties", {}))
    for pattern, sub in schema.get("patternProperties", {}).items():
        named[f"re:{pattern}"] = sub
    keys = sorted(set(named) | set(schema.get("required", [])))

    required = set(schema.get("required", []))

    @st.composite
    def build(draw: st.DrawFn) -> dict[str, Any]:
        body: dict[str, Any] = {}
        for key in keys:
            # A required key is mostly there, any other one half the time.
            if draw(st.integers(0, 9)) == 0 if key in required else draw(st.booleans()):
                continue
            name = key
            if key.startswith("re:"):
                name = draw(st.from_regex(key[3:]).filter(lambda k: len(k) < 20))
            body[name] = draw(near(named.get(key, {}), depth + 1))
        if draw(st.integers(0, 4)) == 0:
            body[draw(st.text(max_size=6))] = draw(st.sampled_from(TRICKY))
        return body

    return build()


@pytest.mark.parametrize(("api", "route", "schema"), SCHEMAS, ids=lambda p: str(p)[:60])
@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(data=st.data())
def test_the_quick_check_takes_only_what_jsonschema_takes(
    api: str, route: tuple[str, str], schema: Mapping[str, Any], data: st.DataObject
) -> None:
    check = validation._surely_valid(schema)
    if check is None:
        return
    body = data.draw(near(schema))
    if check(body):
        assert jsonschema.Draft202012Validator(schema).is_valid(body), body


def test_the_schemas_a_boot_sends_are_checked_quickly() -> None:
    """The port's create and binding and the server's create have a quick check, and it takes
    the bodies a boot sends (jsonschema is asked only about the others)."""
    port = {"port": {"network_id": "n", "name": "p", "binding:vnic_type": "normal"}}
    binding = {"port": {"binding:host_id": "host-1", "binding:profile": {}, "device_id": "d"}}
    boot = {
        "server": {"name": "vm", "flavorRef": "1", "imageRef": "i", "networks": [{"uuid": "n"}]}
    }
    for schema, body in (
        (ports.CREATE, port),
        (ports.UPDATE, binding),
        (server.CREATE_BY_VERSION[0][1], boot),
    ):
        check = validation._surely_valid(schema)
        assert check is not None and check(body)
        assert validation.first_error(body, schema) is None


def test_most_schemas_have_a_quick_check() -> None:
    checked = [schema for _, _, schema in SCHEMAS if validation._surely_valid(schema) is not None]
    assert len(checked) == len(SCHEMAS)
