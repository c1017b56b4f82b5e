"""docs/policy.md and Placement's policy defaults say the same: every rule's row in the doc's
tables (operations, default, legacy default, scope) is read back and compared with the rule."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from oslo_policy import policy as oslo_policy

from berth.placement.policy import default_rules
from berth.placement.service import PlacementService
from tests.conftest import wsgi_client

DOC = Path(__file__).parents[2] / "docs" / "policy.md"


def _tables(text: str) -> dict[str, list[str]]:
    """Each table row of the doc by its first cell's rule name: the remaining cells."""
    rows: dict[str, list[str]] = {}
    for line in text.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if line.startswith("|") and re.fullmatch(r"`[^`]+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1:]
    return rows


def _code(cell: str) -> list[str]:
    return re.findall(r"`([^`]+)`", cell)


def _scope(rule: oslo_policy.RuleDefault) -> str:
    return ", ".join(rule.scope_types) if rule.scope_types else "none"


def test_every_rule_row_of_the_doc_is_the_rules_default() -> None:
    rows = _tables(DOC.read_text())
    rules = {rule.name: rule for rule in default_rules()}
    assert set(rows) == set(rules)
    for name, rule in rules.items():
        cells = rows[name]
        if isinstance(rule, oslo_policy.DocumentedRuleDefault):
            operations, default, scope = cells
            wanted = [f"{op['method']} {op['path']}" for op in rule.operations]
            assert _code(operations) == wanted, name
        else:
            default, legacy, scope = cells
            expected = [rule.deprecated_rule.check_str] if rule.deprecated_rule else []
            assert _code(legacy) == expected, name
        assert _code(default) == [rule.check_str], name
        assert scope == _scope(rule), name


@pytest.mark.parametrize(
    ("roles", "own", "other"),
    [
        ("reader", 200, 403),
        # A Keystone member's token: member implies reader.
        ("member,reader", 200, 403),
        # The doc's warning: a token with member alone (noauth2's X-Roles) is not a reader.
        ("member", 403, 403),
        ("Reader", 200, 403),
        ("admin", 200, 200),
    ],
)
def test_who_may_read_a_projects_usages_is_what_the_doc_says(
    placement_service: PlacementService, roles: str, own: int, other: int
) -> None:
    with wsgi_client(placement_service) as client:
        client.headers.update({"x-auth-token": "alice:p1", "x-roles": roles})
        for project, status in (("p1", own), ("p2", other)):
            answer = client.get(
                f"/usages?project_id={project}",
                headers={"openstack-api-version": "placement 1.9"},
            )
            assert answer.status_code == status, (roles, project, answer.text)
