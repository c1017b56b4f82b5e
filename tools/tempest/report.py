"""Tempest's outcomes by area, and the results file: failures with their error, skips by reason."""

from __future__ import annotations

import json
import re
from collections import Counter, defaultdict
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path

# Areas, first match wins; the pattern is searched in the test's dotted path.
AREAS: tuple[tuple[str, str], ...] = (
    ("compute servers: actions", r"compute\.servers\.test_(server_actions|server_rescue|disk_config)"),
    ("compute servers: metadata, tags, addresses, password",
     r"compute\.servers\.test_(server_metadata|server_tags|server_addresses|server_password)"),
    ("compute servers: instance actions", r"compute\.servers\.test_instance_actions"),
    ("compute servers: interfaces", r"compute\.servers\.test_(attach_interfaces|create_server_multi_nic|device_tagging)"),
    ("compute server groups", r"compute\.servers\.test_server_group"),
    ("compute servers: availability zone", r"compute\.servers\.test_availability_zone"),
    ("compute servers", r"compute\.servers\."),
    ("compute servers (admin)",
     r"compute\.admin\.test_(servers|create_server|delete_server|server_diagnostics|servers_on_multinodes|server_external_events)"),
    ("compute migrations", r"compute\.admin\.test_(live_migration|migrations)"),
    ("compute flavors", r"compute\.(flavors\.|admin\.test_flavors)"),
    ("compute keypairs", r"compute\.(keypairs\.|admin\.test_keypairs)"),
    ("compute limits, quotas", r"compute\.(limits\.|test_quotas|admin\.test_quotas)"),
    ("compute hypervisors", r"compute\.admin\.test_hypervisor"),
    ("compute services, hosts, zones, aggregates",
     r"compute\.admin\.test_(services|hosts|availability_zone|aggregates)"),
    ("compute usage", r"compute\.admin\.test_(simple_tenant_usage|instance_usage_audit_log)"),
    ("compute images", r"compute\.images\."),
    ("compute volumes", r"compute\.(volumes\.|admin\.test_(volume|assisted_volume))"),
    ("compute network proxies (floating IPs, security groups, networks)",
     r"compute\.(floating_ips|security_groups|test_networks|test_tenant_networks|admin\.test_(networks|security_groups|auto_allocate))"),
    ("compute versions, extensions", r"compute\.test_(versions|extensions)"),
    ("compute other", r"tempest\.api\.compute\."),
    ("network networks, subnets", r"network\.test_networks"),
    ("network ports", r"network\.(test_ports|admin\.test_ports|test_allowed_address_pair|test_extra_dhcp)"),
    ("network security groups", r"network\.test_security_groups"),
    ("network routers, floating IPs",
     r"network\.(test_routers|test_floating|admin\.test_(routers|floating|external))"),
    ("network other", r"tempest\.api\.network\."),
    ("qos (neutron-tempest-plugin)", r"neutron_tempest_plugin\.api\.test_qos"),
    ("other", r""),
)  # fmt: skip
_AREAS = tuple((name, re.compile(pattern)) for name, pattern in AREAS)
STATUSES = ("success", "fail", "skip")
# "tempest.lib.exceptions.NotFound: Object not found" or "AssertionError: 1 != 2".
_ERROR_LINE = re.compile(r"^[A-Za-z_][\w.]*(Error|Exception|Failure|Mismatch|[A-Z]\w*): ")


@dataclass(frozen=True)
class Outcome:
    test_id: str
    status: str
    detail: str

    @property
    def path(self) -> str:
        """The dotted path: a class fixture's "setUpClass (tempest.x.Y)" gives "tempest.x.Y"."""
        inner = re.match(r"^\w+ \((.+)\)$", self.test_id)
        return inner.group(1) if inner else self.test_id.split("[", 1)[0]

    @property
    def area(self) -> str:
        return next(name for name, pattern in _AREAS if pattern.search(self.path))

    @property
    def error(self) -> str:
        """The failure's first error line (with tempest's "Details:" line), or a skip's reason."""
        lines = [line for line in self.detail.splitlines() if line.strip()]
        if self.status == "skip":
            return " ".join(lines)[:300]
        for i in range(len(lines) - 1, -1, -1):
            if _ERROR_LINE.match(lines[i]):
                details = (
                    [lines[i + 1]]
                    if i + 1 < len(lines) and lines[i + 1].startswith("Details:")
                    else []
                )
                return " ".join([lines[i], *details])[:400]
        return (lines[-1] if lines else "")[:400]


def load(path: Path) -> list[Outcome]:
    outcomes = []
    for line in path.read_text().splitlines():
        record = json.loads(line)
        outcomes.append(Outcome(record["id"], record["status"], record["detail"]))
    return outcomes


def by_area(outcomes: Iterable[Outcome]) -> dict[str, Counter[str]]:
    counts: dict[str, Counter[str]] = {name: Counter() for name, _ in AREAS}
    for outcome in outcomes:
        status = outcome.status if outcome.status in STATUSES else "fail"
        counts[outcome.area][status] += 1
    return {name: count for name, count in counts.items() if count}


def table(outcomes: list[Outcome]) -> str:
    """A markdown table: area, passed, failed, skipped, and a total row."""
    rows = ["| area | passed | failed | skipped |", "|---|---:|---:|---:|"]
    total: Counter[str] = Counter()
    for area, count in by_area(outcomes).items():
        rows.append(f"| {area} | {count['success']} | {count['fail']} | {count['skip']} |")
        total.update(count)
    rows.append(
        f"| **total** | **{total['success']}** | **{total['fail']}** | **{total['skip']}** |"
    )
    return "\n".join(rows)


def results_text(outcomes: list[Outcome], heading: str) -> str:
    """The results file: the table, each failure with its error line, each skip under its reason."""
    failed = [o for o in outcomes if o.status not in ("success", "skip")]
    skipped: dict[str, list[str]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.status == "skip":
            skipped[outcome.error or "(no reason given)"].append(outcome.test_id)
    parts = [heading, "", table(outcomes), "", f"## Failed ({len(failed)})", ""]
    for area in by_area(failed):
        parts.append(f"### {area}")
        parts += [
            f"- {o.test_id}\n    {o.error}"
            for o in sorted(failed, key=lambda o: o.test_id)
            if o.area == area
        ]
        parts.append("")
    parts += [f"## Skipped ({sum(map(len, skipped.values()))}), by reason", ""]
    for reason, tests in sorted(skipped.items(), key=lambda item: -len(item[1])):
        parts.append(f"### {reason} ({len(tests)})")
        parts += [f"- {test}" for test in sorted(tests)]
        parts.append("")
    return "\n".join(parts)
