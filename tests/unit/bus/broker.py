"""A RabbitMQ test's own corner of the broker, and its cleanup."""

from __future__ import annotations

from typing import Any

import kombu

from berth.bus.message import check_topic
from berth.bus.oslo import Names
from berth.bus.rabbit import RabbitBus, RabbitServer
from berth.bus.url import RabbitURL


class TracedRabbitBus(RabbitBus):
    """A RabbitBus that remembers the topics it put on the broker, for ``delete_namespace``."""

    def __init__(self, url: RabbitURL, **options: Any) -> None:
        super().__init__(url, **options)
        self.topics: set[str] = set()

    async def cast(self, topic: str, method: str, /, **kwargs: Any) -> None:
        self.topics.add(topic)
        await super().cast(topic, method, **kwargs)

    async def fanout(self, topic: str, method: str, /, **kwargs: Any) -> None:
        self.topics.add(topic)
        await super().fanout(topic, method, **kwargs)

    def serve(self, topic: str, endpoint: object, *, concurrency: int = 1) -> RabbitServer:
        self.topics.add(topic)
        return super().serve(topic, endpoint, concurrency=concurrency)


def connection(url: RabbitURL) -> kombu.Connection:
    return kombu.Connection(
        hostname=url.host,
        port=url.port,
        userid=url.username,
        password=url.password,
        virtual_host=url.virtual_host,
    )


def delete_namespace(url: RabbitURL, namespace: str, topics: set[str]) -> None:
    """Delete what buses of ``namespace`` left on the broker for ``topics``.

    Servers delete their fan-out queues as they stop; reply queues expire after half an hour.
    """
    names = Names(namespace)
    with connection(url) as broker:
        channel = broker.default_channel
        for topic in filter(_routable, topics):
            channel.queue_delete(names.topic(topic))
            channel.queue_delete(names.server_queue(topic))
            channel.exchange_delete(names.fanout_exchange(topic))
        channel.exchange_delete(names.exchange)


def _routable(topic: str) -> bool:
    try:
        check_topic(topic)
    except ValueError:
        return False
    return True
