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


def skip_reason(outcome: Outcome) -> str:
    """A skip's reason with what differs between classes left out, so that alike skips group."""
    reason = outcome.error or "(no reason given)"
    reason = re.sub(r"^\w+ skipped as ", "", reason)
    return re.sub(
        r"^The microversion range\[[^]]*\] of this test",
        "The microversion range of this test",
        reason,
    )


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


def per_test(outcomes: list[Outcome], listed: Iterable[str]) -> list[Outcome]:
    """One outcome per listed test. A class that fails or is skipped in setUpClass runs none of
    its tests, and stestr reports the class once: its tests take that outcome here. A class
    fixture stays a record of its own only where it stands for no listed test (a tearDownClass
    failure, after the tests ran)."""
    reported = {o.test_id for o in outcomes}
    setups = {o.path: o for o in outcomes if o.test_id.startswith("setUpClass (")}
    tests = [o for o in outcomes if not o.test_id.startswith("setUpClass (")]
    expanded = set()
    for test_id in listed:
        test_class = test_id.split("[", 1)[0].rsplit(".", 1)[0]
        if test_id not in reported and test_class in setups:
            setup = setups[test_class]
            tests.append(Outcome(test_id, setup.status, setup.detail))
            expanded.add(test_class)
    return tests + [o for path, o in setups.items() if path not in expanded]


def results_text(outcomes: list[Outcome], tests: list[Outcome], heading: str) -> str:
    """The results file: the table of ``tests`` (see per_test), then each failure of
    ``outcomes`` (a class setup once) with its error line, and the skips under their reason."""
    per_class = Counter(o.test_id.split("[", 1)[0].rsplit(".", 1)[0] for o in tests)
    failed = [o for o in outcomes if o.status not in ("success", "skip")]
    failed_tests = sum(o.status not in ("success", "skip") for o in tests)
    skipped: dict[str, list[str]] = defaultdict(list)
    for outcome in outcomes:
        if outcome.status == "skip":
            skipped[skip_reason(outcome)].append(_named(outcome, per_class))
    skipped_tests = Counter(skip_reason(o) for o in tests if o.status == "skip")
    parts = [heading, "", table(tests), "", f"## Failed ({failed_tests} tests)", ""]
    for area in by_area(failed):
        parts.append(f"### {area}")
        parts += [
            f"- {_named(o, per_class)}\n    {o.error}"
            for o in sorted(failed, key=lambda o: o.test_id)
            if o.area == area
        ]
        parts.append("")
    parts += [f"## Skipped ({sum(skipped_tests.values())} tests), by reason", ""]
    for reason, names in sorted(skipped.items(), key=lambda item: -skipped_tests[item[0]]):
        parts.append(f"### {reason} ({skipped_tests[reason]} tests)")
        parts += [f"- {name}" for name in sorted(names)]
        parts.append("")
    return "\n".join(parts)


def _named(outcome: Outcome, per_class: Counter[str]) -> str:
    """A class setup's id with how many tests it stood for."""
    if outcome.test_id.startswith("setUpClass (") and per_class[outcome.path]:
        return f"{outcome.test_id}: {per_class[outcome.path]} tests"
    return outcome.test_id
