"""What the compute service asks of the network service: ports before scheduling, bindings after.

The compute service acts as a service (admin) on the user's behalf: it creates ports in the
user's project, and only it sets ``binding:*``. The ports it creates say so in their
description, so whoever finds a server's ports by ``device_id`` (after the conductor that made
them died with its list) knows which to delete and which to hand back to the user.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from berth.compute.clients.http import call

# The description of every port the compute service creates (``created_by_compute``).
CREATED_BY_COMPUTE = "Created by the compute service for its server; deleted with it."


def created_by_compute(port: Mapping[str, Any]) -> bool:
    """Whether the compute service made this port (as the network service answered for it)."""
    return port.get("description") == CREATED_BY_COMPUTE


class NetworkError(Exception):
    """The network service refused a request; ``kind`` is its NeutronError type."""

    def __init__(self, status: int, kind: str, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.kind = kind


class BindingRefused(NetworkError):
    """The port cannot be bound on that host (the message names the check and the host)."""


class NetworkClient:
    def __init__(self, client: httpx.Client) -> None:
        self.client = client

    def _answer(self, answer: httpx.Response, key: str | None) -> Any:
        if answer.is_success:
            return answer.json()[key] if key else None
        try:
            error = answer.json()["NeutronError"]
            kind, message = str(error["type"]), str(error["message"])
        except (ValueError, KeyError, TypeError):
            kind, message = "Unknown", answer.text[:500]
        cls = BindingRefused if kind == "PortBindingError" else NetworkError
        raise cls(answer.status_code, kind, message)

    def network(self, network_id: str) -> dict[str, Any]:
        return self._answer(call(self.client, "GET", f"/v2.0/networks/{network_id}"), "network")  # type: ignore[no-any-return]

    def networks(self, **filters: str) -> list[dict[str, Any]]:
        return self._answer(call(self.client, "GET", "/v2.0/networks", params=filters), "networks")  # type: ignore[no-any-return]

    def subnets(self, **filters: str) -> list[dict[str, Any]]:
        return self._answer(call(self.client, "GET", "/v2.0/subnets", params=filters), "subnets")  # type: ignore[no-any-return]

    def ip_availability(self, network_id: str) -> dict[str, Any]:
        answer = call(self.client, "GET", f"/v2.0/network-ip-availabilities/{network_id}")
        return self._answer(answer, "network_ip_availability")  # type: ignore[no-any-return]

    def segments(self, **filters: str) -> list[dict[str, Any]]:
        return self._answer(call(self.client, "GET", "/v2.0/segments", params=filters), "segments")  # type: ignore[no-any-return]

    def qos_policy(self, policy_id: str) -> dict[str, Any]:
        return self._answer(call(self.client, "GET", f"/v2.0/qos/policies/{policy_id}"), "policy")  # type: ignore[no-any-return]

    def port(self, port_id: str) -> dict[str, Any]:
        return self._answer(call(self.client, "GET", f"/v2.0/ports/{port_id}"), "port")  # type: ignore[no-any-return]

    def ports(self, **filters: str | list[str]) -> list[dict[str, Any]]:
        return self._answer(call(self.client, "GET", "/v2.0/ports", params=filters), "ports")  # type: ignore[no-any-return]

    def create_port(self, network_id: str, project_id: str, **attributes: Any) -> dict[str, Any]:
        body = {
            "network_id": network_id,
            "project_id": project_id,
            "description": CREATED_BY_COMPUTE,
            **attributes,
        }
        return self._answer(call(self.client, "POST", "/v2.0/ports", json={"port": body}), "port")  # type: ignore[no-any-return]

    def update_port(self, port_id: str, **attributes: Any) -> dict[str, Any]:
        answer = call(self.client, "PUT", f"/v2.0/ports/{port_id}", json={"port": attributes})
        return self._answer(answer, "port")  # type: ignore[no-any-return]

    def bind(
        self, port_id: str, host: str, allocation: Mapping[str, str] | None = None
    ) -> dict[str, Any]:
        """Bind the port to ``host``; the allocation maps its request groups to providers."""
        profile = {"allocation": dict(allocation)} if allocation else {}
        return self.update_port(port_id, **{"binding:host_id": host, "binding:profile": profile})

    def unbind(self, port_id: str) -> None:
        """Forget the binding (a deferred address goes back); a port gone already is fine."""
        try:
            self.update_port(port_id, **{"binding:host_id": "", "binding:profile": {}})
        except NetworkError as exc:
            if exc.status != 404:
                raise

    def hand_back(self, port_id: str) -> None:
        """Unbind a user's port and detach it from its server, for the user to use again; a port
        gone already is fine."""
        try:
            self.update_port(
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

    def create_binding(
        self, port_id: str, host: str, vnic_type: str, allocation: Mapping[str, str] | None
    ) -> None:
        """An inactive binding of the port for ``host`` (its active one stays where it is): a
        live migration's destination, activated at the switch-over."""
        profile = {"allocation": dict(allocation)} if allocation else {}
        body = {"binding": {"host": host, "vnic_type": vnic_type, "profile": profile}}
        answer = call(self.client, "POST", f"/v2.0/ports/{port_id}/bindings", json=body)
        self._answer(answer, None)

    def delete_binding(self, port_id: str, host: str) -> None:
        """Forget the port's binding for ``host``; one gone already is fine."""
        answer = call(self.client, "DELETE", f"/v2.0/ports/{port_id}/bindings/{host}")
        if answer.status_code != 404:
            self._answer(answer, None)

    def activate(self, port_id: str, host: str) -> None:
        """Make the port's inactive binding for ``host`` the active one (a live migration's
        switch-over); the binding already active is a 409, as upstream's."""
        answer = call(self.client, "PUT", f"/v2.0/ports/{port_id}/bindings/{host}/activate")
        self._answer(answer, None)

    def floatingips(self, **filters: str) -> list[dict[str, Any]]:
        answer = call(self.client, "GET", "/v2.0/floatingips", params=filters)
        return self._answer(answer, "floatingips")  # type: ignore[no-any-return]

    def floatingip(self, floatingip_id: str) -> dict[str, Any]:
        answer = call(self.client, "GET", f"/v2.0/floatingips/{floatingip_id}")
        return self._answer(answer, "floatingip")  # type: ignore[no-any-return]

    def create_floatingip(self, network_id: str, project_id: str) -> dict[str, Any]:
        body = {"floatingip": {"floating_network_id": network_id, "project_id": project_id}}
        answer = call(self.client, "POST", "/v2.0/floatingips", json=body)
        return self._answer(answer, "floatingip")  # type: ignore[no-any-return]

    def update_floatingip(self, floatingip_id: str, **attributes: Any) -> dict[str, Any]:
        body = {"floatingip": attributes}
        answer = call(self.client, "PUT", f"/v2.0/floatingips/{floatingip_id}", json=body)
        return self._answer(answer, "floatingip")  # type: ignore[no-any-return]

    def delete_floatingip(self, floatingip_id: str) -> None:
        self._answer(call(self.client, "DELETE", f"/v2.0/floatingips/{floatingip_id}"), None)

    def delete_port(self, port_id: str) -> None:
        answer = call(self.client, "DELETE", f"/v2.0/ports/{port_id}")
        if answer.status_code != 404:
            self._answer(answer, None)

    # -- security groups (the os-security-groups proxies and a server's groups) ----------------

    def security_groups(self, **filters: str | list[str]) -> list[dict[str, Any]]:
        answer = call(self.client, "GET", "/v2.0/security-groups", params=filters)
        return self._answer(answer, "security_groups")  # type: ignore[no-any-return]

    def security_group(self, group_id: str) -> dict[str, Any]:
        answer = call(self.client, "GET", f"/v2.0/security-groups/{group_id}")
        return self._answer(answer, "security_group")  # type: ignore[no-any-return]

    def create_security_group(self, **attributes: Any) -> dict[str, Any]:
        body = {"security_group": attributes}
        answer = call(self.client, "POST", "/v2.0/security-groups", json=body)
        return self._answer(answer, "security_group")  # type: ignore[no-any-return]

    def update_security_group(self, group_id: str, **attributes: Any) -> dict[str, Any]:
        body = {"security_group": attributes}
        answer = call(self.client, "PUT", f"/v2.0/security-groups/{group_id}", json=body)
        return self._answer(answer, "security_group")  # type: ignore[no-any-return]

    def delete_security_group(self, group_id: str) -> None:
        self._answer(call(self.client, "DELETE", f"/v2.0/security-groups/{group_id}"), None)

    def security_group_rule(self, rule_id: str) -> dict[str, Any]:
        answer = call(self.client, "GET", f"/v2.0/security-group-rules/{rule_id}")
        return self._answer(answer, "security_group_rule")  # type: ignore[no-any-return]

    def create_security_group_rule(self, **attributes: Any) -> dict[str, Any]:
        body = {"security_group_rule": attributes}
        answer = call(self.client, "POST", "/v2.0/security-group-rules", json=body)
        return self._answer(answer, "security_group_rule")  # type: ignore[no-any-return]

    def delete_security_group_rule(self, rule_id: str) -> None:
        answer = call(self.client, "DELETE", f"/v2.0/security-group-rules/{rule_id}")
        self._answer(answer, None)
