"""Who sees and changes what, with the Networking API's default semantics.

A project sees its own resources and shared ones; admins (and other services, such as the compute
service binding ports) see and change everything. Some attributes are the operator's alone: the
``provider:*`` attributes and segments of a network, every ``binding:*`` attribute of a port, and
the ``shared`` and ``router:external`` flags; others never see or set them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from berth.common.context import RequestContext
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


def is_privileged(context: RequestContext) -> bool:
    return context.is_admin or "service" in context.roles


def can_see(context: RequestContext, owner: str, shared: bool = False) -> bool:
    return shared or is_privileged(context) or owner == (context.project_id or "")


def require_owner(context: RequestContext, owner: str, what: str) -> None:
    """Changing a resource takes its project or an admin; others get a 403 naming it."""
    if not is_privileged(context) and owner != (context.project_id or ""):
        raise exceptions.NotAuthorized(f"The policy does not allow this change of {what}.")


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
