"""oslo.messaging as Berth's bus uses it: imported quietly, configured privately, named apart.

Each bus gets a ``ConfigOpts`` of its own, so nothing of Berth's lands in the global ``CONF`` a
host process may own, and two buses may differ. Everything a bus puts on the broker carries its
namespace (``berth`` unless a test asks for its own): it is the exchange, and the first part of
every queue's name. The exchange alone would not keep Berth apart from an OpenStack on the same
virtual host: oslo names a topic's queue after the topic only, so Berth's ``scheduler`` servers
would consume from Nova's ``scheduler`` queue.
"""

from __future__ import annotations

import importlib
import re
import warnings
from dataclasses import dataclass
from urllib.parse import quote

import kombu
from oslo_config import cfg

from berth.bus.message import MAX_TOPIC_BYTES
from berth.bus.url import RabbitURL

with warnings.catch_warnings():
    # oslo.messaging imports eventlet through oslo.service and futurist, and eventlet and the
    # modules that wrap it warn that they are deprecated. Berth runs oslo.messaging on threads
    # and never uses eventlet: nothing to act on, so these warnings go, for this import only.
    warnings.filterwarnings("ignore", message=r"(?s).*eventlet")
    import oslo_messaging
    from oslo_messaging import opts as oslo_opts

    # The rabbit driver's parts that ``listener`` builds on: below oslo's public API.
    from oslo_messaging._drivers import amqpdriver as amqpdriver
    from oslo_messaging._drivers import common as rpc_common  # noqa: F401

RABBIT = "oslo_messaging_rabbit"

# oslo reads these groups from the conf it is given but registers them only on the global CONF
# (its own test fixture registers them on a conf this way); releases before 18.3 have no tracing.
GLOBAL_ONLY_OPTIONS = (
    ("oslo_messaging._metrics.client", "oslo_messaging_metrics"),
    ("oslo_messaging._tracing.client", "oslo_messaging_tracing"),
)

# How long either side waits for the other's heartbeat before it takes the connection for dead
# and reconnects. oslo sends heartbeats from threads of its own, even while nothing is sent.
HEARTBEAT_SECONDS = 60

# Topic queues and the exchange last as long as the broker runs, whether or not anyone consumes
# (oslo's defaults, fixed here because the queue a cast declares must match oslo's exactly).
DURABLE = False
AUTO_DELETE = False

# oslo names an RPC server's own queue "<topic>.<server>", for messages to one server. Berth
# never sends to one server, so all its servers share one name: one such queue per topic, not one
# per process that ever served it.
SERVER_NAME = "shared"

AMQP_NAME_BYTES = 255
# What oslo puts after a topic in a fan-out queue's name: "_fanout_" and 32 hex digits.
FANOUT_SUFFIX_BYTES = 40
# Room for "<namespace>." in front of the longest topic, and the suffix behind it.
MAX_NAMESPACE_BYTES = AMQP_NAME_BYTES - MAX_TOPIC_BYTES - 1 - FANOUT_SUFFIX_BYTES
NAMESPACE = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class Names:
    """Where a bus's topics live on the broker."""

    namespace: str = "berth"

    def __post_init__(self) -> None:
        if not NAMESPACE.fullmatch(self.namespace) or len(self.namespace) > MAX_NAMESPACE_BYTES:
            raise ValueError(
                f"a bus namespace is 1 to {MAX_NAMESPACE_BYTES} letters, digits, '-' or '_', "
                f"not {self.namespace!r}"
            )

    @property
    def exchange(self) -> str:
        return self.namespace

    def topic(self, topic: str) -> str:
        """The oslo topic, which is also the name of the topic's queue."""
        return f"{self.namespace}.{topic}"

    def server_queue(self, topic: str) -> str:
        return f"{self.topic(topic)}.{SERVER_NAME}"

    def fanout_exchange(self, topic: str) -> str:
        return f"{self.topic(topic)}_fanout"

    def target(self, topic: str, *, server: bool = False) -> oslo_messaging.Target:
        """Where to send to ``topic``; with ``server``, where a server of it listens."""
        return oslo_messaging.Target(
            exchange=self.exchange,
            topic=self.topic(topic),
            server=SERVER_NAME if server else None,
        )


def transport(url: RabbitURL, names: Names) -> oslo_messaging.Transport:
    """An RPC transport to ``url``; it connects when first used, and reconnects by itself."""
    conf = _conf(names)
    where = oslo_messaging.TransportURL(
        conf,
        transport="rabbit",
        # oslo writes the virtual host into a URL as it is, and kombu unquotes it when it reads
        # that URL: quoted, "/" and any other character arrive as they were.
        virtual_host=quote(url.virtual_host, safe=""),
        hosts=[oslo_messaging.TransportHost(url.host, url.port, url.username, url.password)],
    )
    return oslo_messaging.get_rpc_transport(conf, url=where)


def declare_topic_queue(url: RabbitURL, names: Names, topic: str) -> None:
    """Declare ``topic``'s queue as oslo does when a server of the topic starts.

    oslo declares a topic's queue only then, so until a server has started, the broker drops a
    cast to the topic; declared here, the queue keeps the cast for the first server.
    """
    exchange = kombu.Exchange(
        names.exchange, type="topic", durable=DURABLE, auto_delete=AUTO_DELETE
    )
    queue = kombu.Queue(
        names.topic(topic),
        exchange,
        routing_key=names.topic(topic),
        durable=DURABLE,
        auto_delete=AUTO_DELETE,
    )
    with kombu.Connection(
        hostname=url.host,
        port=url.port,
        userid=url.username,
        password=url.password,
        virtual_host=url.virtual_host,
    ) as connection:
        queue(connection.default_channel).declare()


def _conf(names: Names) -> cfg.ConfigOpts:
    conf = cfg.ConfigOpts()
    for group, options in oslo_opts.list_opts():
        conf.register_opts(options, group=group)
    for module, group in GLOBAL_ONLY_OPTIONS:
        try:
            options = getattr(importlib.import_module(module), group)
        except ModuleNotFoundError:
            continue
        conf.register_opts(options, group=group)
    conf.set_override("control_exchange", names.exchange)
    conf.set_override("heartbeat_timeout_threshold", HEARTBEAT_SECONDS, group=RABBIT)
    conf.set_override("amqp_durable_queues", DURABLE, group=RABBIT)
    conf.set_override("amqp_auto_delete", AUTO_DELETE, group=RABBIT)
    return conf
