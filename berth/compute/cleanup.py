"""Giving back what a server held: its allocation, its ports' bindings and addresses, and the
ports the compute service made for it. Every step is idempotent (a message delivered twice, a
cleanup after a half-done one), so any path may call it again."""

from __future__ import annotations

import logging
from collections.abc import Iterable

from berth.compute.clients.network import NetworkClient, NetworkError
from berth.compute.clients.placement import PlacementClient
from berth.compute.objects.build import PortEntry

LOG = logging.getLogger(__name__)


def release_ports(network: NetworkClient, ports: Iterable[PortEntry]) -> None:
    """Delete the ports the compute service created; unbind and hand back the user's own."""
    for port in ports:
        port_id = port.port_id
        try:
            if port.created_by_compute:
                network.delete_port(port_id)
            else:
                network.update_port(
                    port_id,
                    **{
                        "binding:host_id": "",
                        "binding:profile": {},
                        "device_id": "",
                        "device_owner": "",
                    },
                )
        except NetworkError as exc:
            if exc.status != 404:
                raise
            LOG.info("port %s was already gone", port_id)


def release_server(
    placement: PlacementClient,
    network: NetworkClient,
    instance_uuid: str,
    ports: Iterable[PortEntry],
) -> None:
    """Everything a server held outside the compute databases."""
    placement.release(instance_uuid)
    release_ports(network, ports)
