"""Placement's quick acceptor (``berth.placement.api.acceptor``) never says yes to a body that
jsonschema refuses, on every request schema Placement has, for generated bodies and for valid
ones with one value changed; and it does say yes to the bodies a fleet's registration sends,
which is what it is for."""

from __future__ import annotations

import importlib
import pkgutil
from typing import Any

import jsonschema
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import berth.placement.api.schemas as schemas_package
from berth.placement.api import request
from berth.placement.api.acceptor import acceptor

UUID = "2a0e6a1e-3e0c-4c70-8f11-3c6b35b0b5a1"


def _request_schemas() -> dict[str, dict[str, Any]]:
    found = {}
    for module in pkgutil.iter_modules(schemas_package.__path__):
        if module.name == "replies":
            continue
        loaded = importlib.import_module(f"{schemas_package.__name__}.{module.name}")
        for name, value in vars(loaded).items():
            if name.isupper() and isinstance(value, dict) and "type" in value:
                found[f"{module.name}.{name}"] = value
    return found


SCHEMAS = _request_schemas()


def _vocabulary(schema: Any, words: set[str]) -> set[str]:
    """Every property name and pattern-matching key a schema mentions, for keys to try."""
    if isinstance(schema, dict):
        for key, value in schema.items():
            if key == "properties":
                words |= set(value)
            if key == "required":
                words |= set(value)
            _vocabulary(value, words)
    elif isinstance(schema, list):
        for value in schema:
            _vocabulary(value, words)
    return words


KEYS = sorted(
    set().union(*(_vocabulary(s, set()) for s in SCHEMAS.values()))
    | {UUID, UUID.replace("-", ""), "VCPU", "CUSTOM_GOLD", "custom_x", "", "x"}
)
LEAVES = st.one_of(
    st.none(),
    st.booleans(),
    st.sampled_from([0, 1, -1, 2**31 - 1, 2**31, 1.0, 1.5, -0.0, 1e300]),
    st.integers(),
    st.sampled_from(
        [UUID, UUID.upper(), "{" + UUID + "}", "not-a-uuid", "", "VCPU", "CUSTOM_GOLD", "x" * 300]
    ),
    st.text(max_size=5),
)
VALUES = st.recursive(
    LEAVES,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(KEYS), inner, max_size=6)
    ),
    max_leaves=25,
)


def _is_valid(schema: dict[str, Any], body: Any) -> bool:
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    return not any(validator.iter_errors(body))


def _accept(schema: dict[str, Any]) -> Any:
    accept = acceptor(schema, jsonschema.FormatChecker())
    assert accept is not None
    return accept


@pytest.mark.parametrize("name", sorted(SCHEMAS))
@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(body=VALUES)
def test_never_accepts_what_jsonschema_refuses(name: str, body: Any) -> None:
    schema = SCHEMAS[name]
    if _accept(schema)(body):
        assert _is_valid(schema, body)


REGISTRATION_BODIES = [
    ("resource_provider.POST_V1_14", {"uuid": UUID, "name": "host-1"}),
    ("resource_provider.POST_V1_14", {"uuid": UUID, "name": "a:b", "parent_provider_uuid": UUID}),
    ("trait.PUT_PROVIDER_TRAITS", {"traits": ["COMPUTE_NODE"], "resource_provider_generation": 0}),
    (
        "inventory.INVENTORIES",
        {
            "resource_provider_generation": 1,
            "inventories": {
                "VCPU": {
                    "total": 32,
                    "reserved": 0,
                    "min_unit": 1,
                    "max_unit": 32,
                    "step_size": 1,
                    "allocation_ratio": 16.0,
                },
                "CUSTOM_X": {"total": 1},
            },
        },
    ),
    (
        "reshaper.POST_V1_38",
        {
            "inventories": {
                UUID: {
                    "resource_provider_generation": 2,
                    "inventories": {"NET_BW_EGR_KILOBIT_PER_SEC": {"total": 10, "reserved": 0}},
                }
            },
            "allocations": {},
        },
    ),
]


@pytest.mark.parametrize(("name", "body"), REGISTRATION_BODIES)
def test_accepts_registration_bodies(name: str, body: Any) -> None:
    assert _is_valid(SCHEMAS[name], body)
    assert _accept(SCHEMAS[name])(body)


def _paths(value: Any, path: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [path]
    if isinstance(value, dict):
        for key, inner in value.items():
            found += _paths(inner, (*path, key))
    elif isinstance(value, list):
        for index, inner in enumerate(value):
            found += _paths(inner, (*path, index))
    return found


def _changed(body: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy: Any = dict(body) if isinstance(body, dict) else list(body)
    copy[path[0]] = _changed(body[path[0]], path[1:], new)
    return copy


@pytest.mark.parametrize(("name", "body"), REGISTRATION_BODIES)
@settings(max_examples=200, deadline=None)
@given(data=st.data())
def test_one_value_changed(name: str, body: Any, data: st.DataObject) -> None:
    path = data.draw(st.sampled_from(_paths(body)))
    changed = _changed(body, path, data.draw(VALUES))
    if _accept(SCHEMAS[name])(changed):
        assert _is_valid(SCHEMAS[name], changed)


def test_refusals_are_jsonschemas_own() -> None:
    """A body the acceptor turns away is worded by jsonschema, as before it existed."""
    body = {"traits": ["COMPUTE_NODE"], "resource_provider_generation": "0"}
    with pytest.raises(request.HTTPError) as refused:
        request.validate(body, SCHEMAS["trait.PUT_PROVIDER_TRAITS"])
    assert refused.value.status == 400
    assert "'0' is not of type 'integer'" in refused.value.detail
    assert "Failed validating 'type'" in refused.value.detail


def test_unknown_keywords_go_the_long_way() -> None:
    assert acceptor({"type": "string", "enum": ["a"]}, jsonschema.FormatChecker()) is None
    assert acceptor({"$ref": "#/definitions/x"}, jsonschema.FormatChecker()) is None
