"""Who sees and changes what, with the Networking API's default semantics.

A project's readers see its resources, and those shared with the project (``rbac``); its members
also change them, except QoS policies and their rules, which only admins change; admins (and
other services, such as the compute service binding ports) see and change everything. Some attributes are the
operator's alone: the ``provider:*`` attributes and segments of a network, every ``binding:*``
attribute of a port, and the ``shared`` and ``router:external`` flags; others never see or set them.

Roles are upstream's secure-RBAC defaults and every rule is project-scoped, as upstream's are.
Two settings, which the network app attaches to each request's context (a :class:`PolicyContext`),
relax that: ``enforce_new_defaults = false`` adds the legacy defaults, where any token of a project
reads and changes what the project owns whatever its roles (QoS policies stay the admins':
their legacy default was the operator's alone too); ``enforce_scope = false`` ignores a system-scoped
token's scope, which upstream always checks: a system-scoped admin then acts as any admin.
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any

from berth.common.context import RequestContext
from berth.config import NetworkSettings
from berth.network import exceptions

ADMIN_ONLY_ATTRIBUTES = frozenset(
    {
        "provider:network_type",
        "provider:physical_network",
        "provider:segmentation_id",
        "segments",
        "binding:host_id",
        "binding:profile",
        "binding:vif_type",
        "binding:vif_details",
        "resource_request",
    }
)
# binding:vnic_type is the user's to choose (a direct port for SR-IOV), so it stays visible;
# resource_request is for the compute service that schedules the port.


@dataclass(frozen=True)
class PolicyContext(RequestContext):
    """A request's caller with the policy settings it is judged under (a plain
    :class:`RequestContext` is judged under the defaults, upstream's)."""

    enforce_new_defaults: bool = True
    enforce_scope: bool = True


def judged_under(context: RequestContext, settings: NetworkSettings) -> PolicyContext:
    """``context`` carrying ``settings``' enforce_new_defaults and enforce_scope."""
    caller = {f.name: getattr(context, f.name) for f in fields(RequestContext)}
    return PolicyContext(
        **caller,
        enforce_new_defaults=settings.enforce_new_defaults,
        enforce_scope=settings.enforce_scope,
    )


def in_scope(context: RequestContext) -> bool:
    """Whether a rule applies to the token at all: every rule is project-scoped, so a
    system-scoped token is refused by all of them, whatever its roles, unless scope is ignored."""
    enforce = not isinstance(context, PolicyContext) or context.enforce_scope
    return not (enforce and context.system_scope)


def is_privileged(context: RequestContext) -> bool:
    return in_scope(context) and (context.is_admin or context.has_role("service"))


def _holds(context: RequestContext, project: str, role: str) -> bool:
    """Whether the caller has ``role`` in ``project``. Under the legacy defaults any token of a
    project counts as its reader and member (the legacy rules asked only for the project)."""
    if not in_scope(context) or not project or project != context.project_id:
        return False
    legacy = isinstance(context, PolicyContext) and not context.enforce_new_defaults
    return (legacy and role in ("reader", "member")) or context.has_role(role)


def can_see(context: RequestContext, owner: str, shared: bool = False) -> bool:
    """Readers of the owner's project, admins and services see a resource; anyone sees a shared
    one; an out-of-scope token sees nothing (upstream hides it: a show is 404)."""
    if not in_scope(context):
        return False
    return shared or is_privileged(context) or _holds(context, owner, "reader")


def visible_to(context: RequestContext) -> str | None:
    """Whose resources a listing shows besides shared ones: everyone's (None) to admins and
    services, the caller's project to its readers, no project's ("") to others."""
    if is_privileged(context):
        return None
    project = context.project_id or ""
    return project if _holds(context, project, "reader") else ""


def require_owner(context: RequestContext, owner: str | Collection[str], what: str) -> None:
    """Changing a resource takes a member of its project (or of one of several that may change
    it), or an admin; others get a 403 naming it."""
    owners = [owner] if isinstance(owner, str) else owner
    if not (is_privileged(context) or any(_holds(context, o, "member") for o in owners)):
        raise exceptions.NotAuthorized(f"The policy does not allow this change of {what}.")


def require_member(context: RequestContext, project: str, action: str) -> None:
    """Creating something in ``project`` takes a member of it, or an admin."""
    if not (is_privileged(context) or _holds(context, project, "member")):
        raise exceptions.NotAuthorized(f"The policy does not allow {action}.")


def require_privileged(context: RequestContext, action: str) -> None:
    if not is_privileged(context):
        raise exceptions.NotAuthorized(f"The policy does not allow {action}.")


def check_attributes(
    context: RequestContext, body: Mapping[str, Any], names: Iterable[str]
) -> None:
    """Refuse a request that sets an operator-only attribute without the right to."""
    if is_privileged(context):
        return
    for name in names:
        if name in body:
            raise exceptions.NotAuthorized(f"The policy does not allow setting {name}.")


def visible(context: RequestContext, view: dict[str, Any]) -> dict[str, Any]:
    """The view without the attributes this caller may not see."""
    if is_privileged(context):
        return view
    return {k: v for k, v in view.items() if k not in ADMIN_ONLY_ATTRIBUTES}
