"""Simulated network agents: an Open vSwitch or SR-IOV agent per host that reports its state.

A real agent wires ports on its host and tells the network service what the host can give
(bridges or physical functions, their physical networks, bandwidths, packet rate) with a
heartbeat. The simulated one only reports, over the Networking API's state-report extension
(``POST /v2.0/agents``), so it works against a network service in this process or another.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import httpx

from berth.network.model import AGENT_BINARIES


class SimulatedAgent:
    def __init__(
        self,
        client: httpx.Client,
        host: str,
        agent_type: str,
        configurations: Mapping[str, Any],
    ) -> None:
        self.client = client
        self.host = host
        self.agent_type = agent_type
        self.configurations = dict(configurations)

    def report(self) -> None:
        """One state report (the heartbeat); raises when the service refuses it."""
        body = {
            "agent_type": self.agent_type,
            "host": self.host,
            "binary": AGENT_BINARIES[self.agent_type],
            "topic": "N/A",
            "configurations": self.configurations,
        }
        answer = self.client.post("/v2.0/agents", json={"agent": body})
        if not answer.is_success:
            raise RuntimeError(
                f"{self.agent_type} on {self.host}: state report refused: "
                f"{answer.status_code} {answer.text}"
            )
