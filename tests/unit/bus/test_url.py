"""Bus URLs, and the buses they name."""

from __future__ import annotations

import pytest

from berth.bus import BusClosed, Buses, InMemoryBus, MemoryURL, RabbitURL, parse_bus_url
from berth.bus.rabbit import RabbitBus


@pytest.mark.parametrize(
    ("url", "parsed"),
    [
        ("memory://", MemoryURL("default")),
        ("memory:///", MemoryURL("default")),
        ("memory://cell1", MemoryURL("cell1")),
        ("rabbit://broker", RabbitURL(host="broker")),
        (
            "rabbit://berth:s3cr%40t@broker.example:5673/cell1",
            RabbitURL("broker.example", 5673, "berth", "s3cr@t", "cell1"),
        ),
        ("rabbit://u:p@broker/", RabbitURL("broker", 5672, "u", "p", "/")),
        ("rabbit://u:p@broker/%2F", RabbitURL("broker", 5672, "u", "p", "/")),
        ("rabbit://u:p@[::1]:5672/cell1", RabbitURL("::1", 5672, "u", "p", "cell1")),
    ],
)
def test_a_bus_url_parses(url: str, parsed: MemoryURL | RabbitURL) -> None:
    assert parse_bus_url(url) == parsed


@pytest.mark.parametrize(
    "url",
    [
        "",
        "amqp://u:p@broker/",
        "kafka://broker",
        "memory://cell1/extra",
        "rabbit://",
        "rabbit://u:p@broker:99999/",
        "rabbit://u:p@broker:port/",
        "rabbit://u:p@h1:5672,u:p@h2:5672/",
        "rabbit://u:p@broker/a/b",
        "rabbit://u:p@broker/?ssl=1",
    ],
)
def test_a_malformed_bus_url_is_a_value_error(url: str) -> None:
    with pytest.raises(ValueError):
        parse_bus_url(url)


def test_a_password_never_shows() -> None:
    url = parse_bus_url("rabbit://berth:hunter2@broker:5672/cell1")
    assert "hunter2" not in repr(url)
    assert str(url) == "rabbit://berth:***@broker:5672/cell1"
    with pytest.raises(ValueError) as caught:
        parse_bus_url("rabbit://berth:hunter2@broker:port/cell1")
    assert "hunter2" not in str(caught.value)


def test_str_gives_the_url_back() -> None:
    assert str(MemoryURL()) == "memory://"
    assert str(MemoryURL("cell1")) == "memory://cell1"
    assert str(RabbitURL("broker")) == "rabbit://broker:5672/%2F"


async def test_one_memory_name_is_one_bus() -> None:
    buses = Buses()
    cell1 = buses.connect("memory://cell1")
    assert isinstance(cell1, InMemoryBus)
    assert buses.connect(MemoryURL("cell1")) is cell1
    assert buses.connect("memory://cell2") is not cell1
    assert buses.connect("memory://") is buses.connect("memory://default")
    await buses.close()


async def test_buses_close_every_bus_they_gave_out() -> None:
    buses = Buses()
    cell1 = buses.connect("memory://cell1")
    cell2 = buses.connect("rabbit://u:p@broker.invalid:5672/cell2")
    await buses.close()
    for bus in (cell1, cell2):
        with pytest.raises(BusClosed):
            await bus.cast("conductor", "note")


def test_one_rabbit_url_is_one_bus_and_nothing_connects_yet() -> None:
    buses = Buses()
    cell1 = buses.connect("rabbit://berth:hunter2@broker.invalid:5672/cell1")
    assert isinstance(cell1, RabbitBus)
    assert buses.connect(RabbitURL("broker.invalid", 5672, "berth", "hunter2", "cell1")) is cell1
    assert buses.connect("rabbit://berth:hunter2@broker.invalid:5672/cell2") is not cell1
    assert buses.connect("rabbit://berth:other@broker.invalid:5672/cell1") is not cell1
    assert "hunter2" not in repr(cell1)


def test_an_unknown_scheme_names_the_known_ones() -> None:
    with pytest.raises(ValueError, match=r"unknown scheme 'kafka'; use memory://.* or rabbit://"):
        Buses().connect("kafka://broker")
