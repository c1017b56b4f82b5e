"""The compute hosts' periodic tasks, run with their heartbeats (every ``report_interval`` in
``berth serve compute``, every heartbeat in ``berth up``): the usage audit, once per audit
period."""

from __future__ import annotations

import datetime as dt
import logging
from collections.abc import Iterable

from berth.compute.host import usage_audit
from berth.compute.host.agent import HostAgent
from berth.config import ComputeSettings

LOG = logging.getLogger(__name__)


def run(agents: Iterable[HostAgent], settings: ComputeSettings, now: dt.datetime) -> None:
    """Each agent's periodic tasks; one that fails is logged and tried again next time."""
    if not settings.instance_usage_audit:
        return
    try:
        usage_audit.audit(list(agents), settings.instance_usage_audit_period, now)
    except Exception:
        LOG.exception("the hosts' usage audit failed; trying again later")
