"""The machinery every service's policy shares: an oslo.policy enforcer over a service's own rule
defaults, configured only from Berth's settings, and the commented-out sample policy file.

Each service (``berth.placement.policy``, ``berth.compute.policy``) declares its upstream rule
names and default check strings and subclasses :class:`PolicyEnforcer` with its own refusal.
"""

from __future__ import annotations

import copy
import json
import logging
import os
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Protocol

from oslo_config import cfg
from oslo_policy import opts as policy_opts
from oslo_policy import policy

from berth.common.context import RequestContext

__all__ = ["PolicyEnforcer", "PolicySettings", "sample_policy_yaml"]

LOG = logging.getLogger(__name__)


class PolicySettings(Protocol):
    """The settings a service's policy is configured from (``PlacementSettings`` has them)."""

    @property
    def policy_file(self) -> str | None: ...

    @property
    def enforce_new_defaults(self) -> bool: ...

    @property
    def enforce_scope(self) -> bool: ...


class PolicyEnforcer:
    """Applies a service's default rules, and the operator's policy file over them, to requests.

    Subclasses set ``forbidden`` (the service's 403 exception, built from a message) and pass their
    rules. Refusals, including a token of the wrong scope, raise ``forbidden``. A rule name that
    was never registered raises oslo.policy's ``PolicyNotRegistered``: that is a bug in the caller.
    """

    forbidden: ClassVar[type[Exception]]

    def __init__(self, settings: PolicySettings, rules: Sequence[policy.RuleDefault]) -> None:
        conf = cfg.ConfigOpts()  # our own, so nothing else in the process can change policy
        policy_opts.set_defaults(conf)  # registers the [oslo_policy] options on it
        # No command line, config files or OS_* variables: Berth's settings are the only source.
        conf(args=[], default_config_files=[], default_config_dirs=[], use_env=False)
        group = "oslo_policy"
        conf.set_override("policy_file", _policy_path(settings.policy_file), group)
        conf.set_override("policy_dirs", [], group)  # one file, as the settings describe
        conf.set_override("enforce_new_defaults", settings.enforce_new_defaults, group)
        if "enforce_scope" in conf.oslo_policy:  # oslo.policy < 6 only; see _without_scope
            conf.set_override("enforce_scope", settings.enforce_scope, group)

        self._enforcer = policy.Enforcer(conf)
        # While legacy defaults apply, oslo.policy would warn once per deprecated rule at every
        # (re)load that its default is changing. That is the normal, documented state of an
        # enforce_new_defaults=false deployment, not something an operator must act on (upstream
        # silences it the same way), and warnings are errors in our tests.
        self._enforcer.suppress_default_change_warnings = True
        registered = list(rules)
        if not settings.enforce_scope:
            registered = [_without_scope(rule) for rule in registered]
        self._enforcer.register_defaults(registered)
        # Load now so that a malformed policy file fails at startup, not on the first request.
        self._enforcer.load_rules()
        # oslo.policy re-reads the policy file when it changes and rebuilds its rule table in
        # place; the lock keeps a check on another worker thread from seeing it half-built.
        self._lock = threading.Lock()
        # Decisions by (rule, target, credentials), for the policy file as it was when they were
        # made: evaluating a rule costs a tenth of a millisecond, and every request asks one.
        # A decision already made is read without the lock, which a check holding it across the
        # file's stat made every request of a busy process queue on.
        self._policy_file = conf.oslo_policy.policy_file
        self._decisions: tuple[tuple[int, int, int] | None, dict[tuple[object, ...], bool]] = (
            self._stat_policy_file(),
            {},
        )

    def check(
        self,
        context: RequestContext,
        rule_name: str,
        target: Mapping[str, Any] | None = None,
    ) -> bool:
        """Whether ``context`` may perform ``rule_name`` on ``target`` (no exception)."""
        if target is None:
            target = {"project_id": context.project_id, "user_id": context.user_id}
        # credentials() carries system_scope; oslo.policy maps it to the system scope itself.
        creds = context.credentials()
        key: tuple[object, ...] | None = (rule_name, _frozen(target), _frozen(creds))
        try:
            hash(key)
        except TypeError:  # a target holding a mapping or a set: decided every time
            key = None
        decisions = self._current_decisions()
        allowed = decisions.get(key) if key is not None else None
        if allowed is None:
            with self._lock:
                # do_raise=False: a failed check and a token of the wrong scope both come back
                # falsy (not PolicyNotAuthorized / InvalidScope), so both become the same 403.
                allowed = bool(
                    self._enforcer.authorize(rule_name, dict(target), creds, do_raise=False)
                )
            if key is not None:
                # Into the table of the file this check saw: if the file changed meanwhile,
                # that table is already replaced, and the decision goes with it.
                decisions[key] = allowed
        if not allowed:
            LOG.debug("Policy %s refused credentials %s", rule_name, creds)
        return bool(allowed)

    def _current_decisions(self) -> dict[tuple[object, ...], bool]:
        """The decisions made for the policy file as it is now (a new, empty table when it
        changed since, or when the table is full)."""
        state = self._stat_policy_file()
        known_state, decisions = self._decisions
        if state != known_state or len(decisions) > _MAX_DECISIONS:
            decisions = {}
            self._decisions = (state, decisions)
        return decisions

    def authorize(
        self,
        context: RequestContext,
        rule_name: str,
        target: Mapping[str, Any] | None = None,
    ) -> None:
        """Return if ``context`` may perform ``rule_name`` on ``target``; raise if not.

        ``target`` defaults to the caller's own project and user, as upstream's does; pass the
        owner of the thing acted on when it can differ.
        """
        if not self.check(context, rule_name, target):
            raise self.forbidden(self.refusal(rule_name))

    def _stat_policy_file(self) -> tuple[int, int, int] | None:
        """What tells a changed policy file (oslo.policy looks at its mtime the same way)."""
        try:
            stat = os.stat(self._policy_file)
        except OSError:
            return None
        return (stat.st_mtime_ns, stat.st_size, stat.st_ino)

    @staticmethod
    def refusal(rule_name: str) -> str:
        return f"Policy does not allow {rule_name} to be performed."


# Past this many distinct (rule, target, credentials) decisions the cache starts again.
_MAX_DECISIONS = 10_000


def _frozen(values: Mapping[str, Any]) -> tuple[tuple[str, Any], ...]:
    """A hashable copy of a target or credentials dictionary (lists become tuples)."""
    return tuple(sorted((k, tuple(v) if isinstance(v, list) else v) for k, v in values.items()))


def _policy_path(policy_file: str | None) -> str:
    """An absolute path for oslo.policy, which would otherwise search ~/ and /etc/ for the name."""
    if policy_file is None:
        # An empty rule file: without one, oslo.policy would pick up any policy.yaml it finds in
        # ~/ or /etc/, which Berth was never told about.
        return os.devnull
    path = Path(policy_file).expanduser().resolve()
    if not path.is_file():
        # oslo.policy would silently fall back to the defaults; an operator who named a file
        # should learn at startup that it is not being applied.
        raise FileNotFoundError(f"policy_file {policy_file!r} does not exist")
    return str(path)


def _without_scope(rule: policy.RuleDefault) -> policy.RuleDefault:
    """``rule`` without scope types, so oslo.policy evaluates it for a token of any scope.

    oslo.policy 6 checks scope whenever a rule declares scope types (it dropped its enforce_scope
    option), so Berth's enforce_scope=false is expressed by registering the rules without them.
    """
    unscoped = copy.deepcopy(rule)
    unscoped.scope_types = None
    return unscoped


def sample_policy_yaml(title: str, setting: str, rules: Sequence[policy.RuleDefault]) -> str:
    """Every rule as a commented-out YAML policy file; uncomment a line to override it.

    ``title`` names the service (``"Placement"``), ``setting`` the option naming the file
    (``"placement.policy_file"``).
    """
    lines = [
        f"# Berth {title} policy defaults, generated by `berth policy sample`.",
        "# Uncomment a rule and change its check string to override it (any rule not named here",
        f"# keeps its default). Point {setting} at the result.",
        "",
    ]
    for rule in rules:
        lines.append(f"# {rule.description}")
        for op in getattr(rule, "operations", []):
            lines.append(f"# {op['method']:<7}{op['path']}")
        if rule.scope_types:
            lines.append(f"# Intended scope(s): {', '.join(rule.scope_types)}")
        if rule.deprecated_rule is not None:
            lines.append(
                f"# Legacy default, also allowed while enforce_new_defaults is false: "
                f"{rule.deprecated_rule.check_str}"
            )
        # JSON strings are valid YAML scalars and quote check strings safely.
        lines.append(f"#{json.dumps(rule.name)}: {json.dumps(rule.check_str)}")
        lines.append("")
    return "\n".join(lines)
