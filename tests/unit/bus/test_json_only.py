"""Only what JSON can carry goes on any bus: the sender hears of it at once."""

from __future__ import annotations

import enum
import math
from typing import Any

import pytest

from berth.bus.message import decode_reply, encode_request, encode_result
from tests.unit.bus.conftest import NewBus
from tests.unit.bus.endpoints import Recorder


class Flavor:
    vcpus = 2


NOT_JSON: list[tuple[str, dict[str, Any], type[Exception], str]] = [
    ("a set", {"hosts": {"host1"}}, TypeError, "hosts is a set"),
    ("an object", {"flavor": Flavor()}, TypeError, "flavor is a Flavor"),
    ("bytes", {"data": b"x"}, TypeError, "data is a bytes"),
    ("deep inside", {"spec": {"hosts": [1, {2}]}}, TypeError, "spec['hosts'][1] is a set"),
    ("a key that is no string", {"spec": {1: "a"}}, TypeError, "has the key 1"),
    ("NaN", {"weight": math.nan}, ValueError, "weight is nan"),
    ("infinity", {"weight": math.inf}, ValueError, "weight is inf"),
]


@pytest.mark.parametrize(
    ("kwargs", "error", "words"),
    [case[1:] for case in NOT_JSON],
    ids=[case[0] for case in NOT_JSON],
)
async def test_a_cast_or_call_with_what_json_cannot_carry_fails_at_the_caller(
    new_bus: NewBus, kwargs: dict[str, Any], error: type[Exception], words: str
) -> None:
    async with new_bus() as bus:
        recorder = Recorder()
        bus.serve("conductor", recorder)
        with pytest.raises(error, match=words.replace("[", r"\[")):
            await bus.cast("conductor", "note", **kwargs)
        with pytest.raises(error, match=words.replace("[", r"\[")):
            await bus.call("conductor", "echo", **kwargs)
        await bus.cast("conductor", "note", marker=True)
        await recorder.received.reach(1)
        assert recorder.received.entries == [{"marker": True}]


async def test_a_cast_with_bad_arguments_fails_even_with_no_server(new_bus: NewBus) -> None:
    async with new_bus() as bus:
        with pytest.raises(TypeError):
            await bus.cast("compute.host1", "note", hosts={"host1"})


def test_a_structure_that_contains_itself_is_refused() -> None:
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(ValueError, match="contains itself"):
        encode_request("note", {"loop": loop})


def test_the_same_object_twice_is_no_cycle() -> None:
    shared = {"vcpus": 2}
    assert '"a": {"vcpus": 2}' in encode_request("note", {"a": shared, "b": [shared, shared]})


@pytest.mark.parametrize("method", ["", "select-destinations", "1st", None])
def test_a_method_name_is_an_identifier(method: Any) -> None:
    with pytest.raises(ValueError):
        encode_request(method, {})


@pytest.mark.parametrize("value", [None, True, 3, 2.5, "x", [1, "a"], {"a": {"b": [None]}}])
def test_json_values_round_trip(value: Any) -> None:
    assert decode_reply(encode_result(value)) == value


class Kind(enum.StrEnum):
    SERVER = "server"


class Level(enum.IntEnum):
    HIGH = 3


def test_str_and_int_subclasses_travel_as_their_plain_values() -> None:
    body = encode_request("note", {"kind": Kind.SERVER, "levels": {Kind.SERVER: Level.HIGH}})
    assert '"kind": "server"' in body
    assert '{"server": 3}' in body


def test_a_deep_structure_is_judged_all_the_way_down() -> None:
    deep: Any = "leaf"
    for _ in range(200):
        deep = [deep]
    assert decode_reply(encode_result(deep)) == deep
    bad: Any = {1.5}
    for _ in range(200):
        bad = {"next": bad}
    with pytest.raises(TypeError, match=r"\['next'\]\['next'\].* is a set"):
        encode_result(bad)
