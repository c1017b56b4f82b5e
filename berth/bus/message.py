"""The wire format: what a request and a reply are, whatever carries them.

A request is a method name and keyword arguments; a reply is a value or an error. Both travel as JSON
text, in-process too, so a message that would not survive a real broker fails at the sender here and
now rather than in a deployment. The receiver works on its own decoded copy: a sender that changes a
dict after casting it changes nothing on the other side, as over a network.

Tuples arrive as lists, as they would from JSON. A dict key must be a string: JSON would turn ``1``
into ``"1"`` silently, and the receiver would look it up in vain.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from typing import Any

from berth.bus.errors import NoSuchMethod, RemoteError

# An AMQP name is at most 255 bytes, and the RabbitMQ bus puts a topic inside longer names (its
# namespace and a dot before it, a fan-out queue's 40-byte suffix after it: see berth.bus.oslo);
# every backend refuses a topic one of them could not carry.
MAX_TOPIC_BYTES = 192


@dataclass(frozen=True)
class Request:
    method: str
    kwargs: dict[str, Any]


def check_topic(topic: str) -> None:
    if not isinstance(topic, str) or not topic:
        raise ValueError(f"a topic is a non-empty string, not {topic!r}")
    if any(char.isspace() for char in topic) or len(topic.encode()) > MAX_TOPIC_BYTES:
        raise ValueError(f"topic {topic!r}: no spaces, at most {MAX_TOPIC_BYTES} bytes")


def encode_request(method: str, kwargs: dict[str, Any]) -> str:
    """The request as JSON text; TypeError (or ValueError for NaN) names the argument JSON cannot carry."""
    if not isinstance(method, str) or not method.isidentifier():
        raise ValueError(f"a method name is an identifier, not {method!r}")
    if not _plain(kwargs):
        for name, value in kwargs.items():
            _check_json(value, f"{method}({name}=…)", name, set())
    return json.dumps({"method": method, "kwargs": kwargs})


def decode_request(body: str) -> Request:
    data = json.loads(body)
    return Request(method=data["method"], kwargs=data["kwargs"])


def encode_result(value: Any) -> str:
    if not _plain(value):
        _check_json(value, "the reply", "value", set())
    return json.dumps({"result": value})


def encode_error(exc: BaseException) -> str:
    """A method's failure, as a class name and a message.

    A ``RemoteError`` from a call the method made itself passes on the original type and message,
    so a caller two hops away can still tell a ``NoValidHost`` from anything else.
    """
    if isinstance(exc, RemoteError):
        exc_type, message = exc.exc_type, exc.message
    else:
        exc_type, message = type(exc).__name__, str(exc)
    return json.dumps({"error": {"kind": "remote", "type": exc_type, "message": message}})


def encode_no_such_method(method: str) -> str:
    return json.dumps({"error": {"kind": "no_such_method", "method": method}})


def decode_reply(body: str) -> Any:
    """The value the method returned, or its failure raised as ``RemoteError`` or ``NoSuchMethod``."""
    data = json.loads(body)
    error = data.get("error")
    if error is None:
        return data["result"]
    if error["kind"] == "no_such_method":
        raise NoSuchMethod(error["method"])
    raise RemoteError(error["type"], error["message"])


# Deeper than this, the quick walk leaves the value to _check_json (which also finds a cycle).
_PLAIN_DEPTH = 64


def _plain(value: Any, depth: int = 0) -> bool:
    """True when JSON carries ``value`` exactly, told quickly: only the plain types themselves
    (no subclasses, which _check_json judges), no path kept for a message. Every message is
    walked this way; only one it cannot vouch for is walked again by _check_json, to accept a
    subclass or name what JSON cannot carry."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)
    if depth >= _PLAIN_DEPTH:
        return False
    if kind is dict:
        for key, item in value.items():
            if type(key) is not str or not _plain(item, depth + 1):
                return False
        return True
    if kind is list or kind is tuple:
        # A loop, not all() over a generator: this runs on every message, and the generator
        # costs a third of the walk.
        for item in value:  # noqa: SIM110
            if not _plain(item, depth + 1):
                return False
        return True
    return False


def _check_json(value: Any, where: str, path: str, open_containers: set[int]) -> None:
    # bool is an int, and str and int subclasses (StrEnum, IntEnum) encode as their plain values.
    if value is None or isinstance(value, str | int):
        return
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"{where}: {path} is {value}, which JSON cannot carry")
        return
    if not isinstance(value, dict | list | tuple):
        raise TypeError(
            f"{where}: {path} is a {type(value).__name__}, which JSON cannot carry; "
            "send only dicts, lists, strings, numbers, booleans and None"
        )
    if id(value) in open_containers:
        raise ValueError(f"{where}: {path} contains itself")
    open_containers.add(id(value))
    if isinstance(value, dict):
        for key, item in value.items():
            if not isinstance(key, str):
                raise TypeError(f"{where}: {path} has the key {key!r}; JSON keys are strings")
            _check_json(item, where, f"{path}[{key!r}]", open_containers)
    else:
        for index, item in enumerate(value):
            _check_json(item, where, f"{path}[{index}]", open_containers)
    open_containers.discard(id(value))
