"""Events other services send about a server (``os-server-external-events``), as its host
handles them:

- ``network-changed``: the server's ports changed in the network service (an address added or
  removed): its ``network_info`` is read again from the network service, port by port; a port
  that no longer exists leaves it.
- ``network-vif-deleted`` (the tag names the port): the port was deleted; it leaves
  ``network_info``.
- ``network-vif-plugged`` and ``network-vif-unplugged``: upstream's hosts wait for them while
  plugging VIFs; a simulated host plugs none and waits for nothing, so they change nothing.
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from berth.compute.clients.network import NetworkError
from berth.compute.db import instances
from berth.compute.host.interfaces import refreshed
from berth.compute.objects.build import PortEntry

if TYPE_CHECKING:
    from berth.compute.host.agent import HostAgent

LOG = logging.getLogger(__name__)

NETWORK_CHANGED = "network-changed"
VIF_DELETED = "network-vif-deleted"


def handle(agent: HostAgent, instance_uuid: str, name: str, tag: str | None) -> None:
    with agent.db.read() as conn:
        row = instances.get(conn, instance_uuid, include_deleted=False)
    if row is None or row["host"] != agent.host:
        return
    entries = [PortEntry.from_json(entry) for entry in row["network_info"]]
    if name == NETWORK_CHANGED:
        now = [found for entry in entries if (found := _read(agent, entry)) is not None]
    elif name == VIF_DELETED and tag:
        now = [entry for entry in entries if entry.port_id != tag]
    else:
        LOG.debug("%s: event %s (%s) needs nothing of a simulated host", instance_uuid, name, tag)
        return
    with agent.db.write() as conn:
        instances.update(conn, instance_uuid, {"network_info": [e.to_json() for e in now]})


def _read(agent: HostAgent, entry: PortEntry) -> PortEntry | None:
    """The entry as the network service has the port now; None when the port is gone."""
    try:
        return refreshed(agent.network, entry)
    except NetworkError as exc:
        if exc.status == 404:
            return None
        raise
