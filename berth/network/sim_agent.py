"""Simulated network agents: an Open vSwitch or SR-IOV agent per host that reports its state.

A real agent wires ports on its host and tells the network service what the host can give
(bridges or physical functions, their physical networks, bandwidths, packet rate) with a
heartbeat. The simulated one only reports, over the Networking API's state-report extension
(``POST /v2.0/agents``), so it works against a network service in this process or another.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Mapping
from typing import Any

import httpx

from berth.network.model import AGENT_BINARIES

LOG = logging.getLogger(__name__)


class SimulatedAgent:
    def __init__(
        self,
        client: httpx.Client,
        host: str,
        agent_type: str,
        configurations: Mapping[str, Any],
        interval: float = 30.0,
    ) -> None:
        self.client = client
        self.host = host
        self.agent_type = agent_type
        self.configurations = dict(configurations)
        # Well inside the service's agent_down_time (75 s by default).
        self.interval = interval
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

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

    def start(self) -> None:
        self.report()
        self._thread = threading.Thread(
            target=self._loop, name=f"agent-{self.host}-{self.agent_type}", daemon=True
        )
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            try:
                self.report()
            except (httpx.HTTPError, RuntimeError) as exc:
                # The next heartbeat tries again; the service marks us dead if none arrive.
                LOG.warning("heartbeat failed: %s", exc)
