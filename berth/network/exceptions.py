"""The network service's refusals. Each class name is the ``type`` clients see in a
``NeutronError`` document, so names are part of the API: never rename one."""

from __future__ import annotations


class NetworkServiceError(Exception):
    """A request the service refuses, with a message fit for the caller."""

    status = 500

    @property
    def type(self) -> str:
        return type(self).__name__


class BadRequest(NetworkServiceError):
    status = 400


class ServiceUnavailable(NetworkServiceError):
    """The service's database cannot be reached for the moment (503); retrying may work."""

    status = 503


class InvalidInput(BadRequest):
    pass


class RequestEntityTooLarge(NetworkServiceError):
    status = 413


class Unauthorized(NetworkServiceError):
    """No credentials (401)."""

    status = 401


class NotAuthorized(NetworkServiceError):
    """Credentials, but not the right to do this (403)."""

    status = 403


class MethodNotAllowed(NetworkServiceError):
    status = 405


class NotFound(NetworkServiceError):
    status = 404


class Conflict(NetworkServiceError):
    status = 409


class NetworkNotFound(NotFound):
    def __init__(self, network_id: str) -> None:
        super().__init__(f"Network {network_id} could not be found.")


class SegmentNotFound(NotFound):
    def __init__(self, segment_id: str) -> None:
        super().__init__(f"Segment {segment_id} could not be found.")


class SubnetNotFound(NotFound):
    def __init__(self, subnet_id: str) -> None:
        super().__init__(f"Subnet {subnet_id} could not be found.")


class PortNotFound(NotFound):
    def __init__(self, port_id: str) -> None:
        super().__init__(f"Port {port_id} could not be found.")


class QosPolicyNotFound(NotFound):
    def __init__(self, policy_id: str) -> None:
        super().__init__(f"QoS policy {policy_id} could not be found.")


class QosRuleNotFound(NotFound):
    def __init__(self, rule_id: str, policy_id: str) -> None:
        super().__init__(f"QoS rule {rule_id} for policy {policy_id} could not be found.")


class AgentNotFound(NotFound):
    def __init__(self, agent_id: str) -> None:
        super().__init__(f"Agent {agent_id} could not be found.")


class PortBindingNotFound(NotFound):
    def __init__(self, port_id: str, host: str) -> None:
        super().__init__(f"Binding for port {port_id} for host {host} could not be found.")


class RbacPolicyNotFound(NotFound):
    def __init__(self, entry_id: str) -> None:
        super().__init__(f"RBAC policy with ID {entry_id} could not be found.")


class RbacPolicyInUse(Conflict):
    """Removing (or retargeting) the entry would take an object away from a project using it."""


class DuplicateRbacPolicy(Conflict):
    pass


class NetworkInUse(Conflict):
    pass


class SegmentInUse(Conflict):
    pass


class SubnetInUse(Conflict):
    pass


class ServicePortInUse(Conflict):
    """The port is a router's or a floating IP's: it goes with them."""


class RouterNotFound(NotFound):
    def __init__(self, router_id: str) -> None:
        super().__init__(f"Router {router_id} could not be found.")


class FloatingIPNotFound(NotFound):
    def __init__(self, floatingip_id: str) -> None:
        super().__init__(f"Floating IP {floatingip_id} could not be found.")


class RouterInterfaceNotFound(NotFound):
    pass


class ExternalGatewayForFloatingIPNotFound(NotFound):
    pass


class RouterInUse(Conflict):
    pass


class RouterInterfaceNotFoundForSubnet(NotFound):
    pass


class RouterInterfaceInUseByFloatingIP(Conflict):
    pass


class RouterInterfaceInUseByRoute(Conflict):
    pass


class RouterExternalGatewayInUseByFloatingIp(Conflict):
    pass


class FloatingIPPortAlreadyAssociated(Conflict):
    pass


class PortInUse(Conflict):
    pass


class QosPolicyInUse(Conflict):
    pass


class SegmentationIdInUse(Conflict):
    pass


class MacAddressInUse(Conflict):
    pass


class PortBound(Conflict):
    pass


class IpAddressInUse(Conflict):
    pass


class IpAddressGenerationFailure(Conflict):
    pass


class PortBindingAlreadyExists(Conflict):
    pass


class PortBindingAlreadyActive(Conflict):
    def __init__(self, port_id: str, host: str) -> None:
        super().__init__(f"Binding for port {port_id} on host {host} is already active.")


class PortBindingError(Conflict):
    """The port cannot be bound on that host; the message says which check failed."""


class QosRuleConflict(Conflict):
    pass


class QosPolicyChangeRefused(Conflict):
    """A bound port's allocation cannot follow its new QoS request; the message begins with one
    of the codes of ``allocation_change.Reason``."""


class QoSPolicyDefaultAlreadyExists(Conflict):
    pass


class OverQuota(Conflict):
    """A create took its project over a quota limit."""


class SecurityGroupNotFound(NotFound):
    def __init__(self, group_id: str) -> None:
        super().__init__(f"Security group {group_id} does not exist")


class SecurityGroupRuleNotFound(NotFound):
    def __init__(self, rule_id: str) -> None:
        super().__init__(f"Security group rule {rule_id} does not exist")


class SecurityGroupInUse(Conflict):
    pass


class SecurityGroupCannotRemoveDefault(Conflict):
    pass


class SecurityGroupCannotUpdateDefault(Conflict):
    pass


class SecurityGroupDefaultAlreadyExists(Conflict):
    pass


class SecurityGroupRuleExists(Conflict):
    pass


class SecurityGroupRuleInvalidProtocol(BadRequest):
    pass


class SecurityGroupRemoteGroupAndRemoteIpPrefix(BadRequest):
    pass


class SecurityGroupProtocolRequiredWithPorts(BadRequest):
    pass


class SecurityGroupInvalidPortValue(BadRequest):
    pass


class SecurityGroupInvalidPortRange(BadRequest):
    pass


class SecurityGroupInvalidIcmpValue(BadRequest):
    pass


class SecurityGroupMissingIcmpType(BadRequest):
    pass


class SecurityGroupInvalidProtocolForPortRange(BadRequest):
    pass


class SecurityGroupEthertypeConflictWithProtocol(BadRequest):
    pass


class PortSecurityAndIPRequiredForSecurityGroups(BadRequest):
    pass


class PortSecurityPortHasSecurityGroup(Conflict):
    pass
