"""/extensions: the legacy listing of the v2 API's extensions, as Nova keeps it.

Since v2.1 the extensions are part of the API and microversions say what changes; Nova still
answers the old listing, frozen, the same in every deployment, and clients no longer read
features from it. Berth answers the same frozen listing: it names the extensions, it does not
say which resources this cloud serves (the route table does; docs/compute.md lists them).
"""

from __future__ import annotations

from typing import Any

from starlette.responses import Response

from berth.compute import exceptions
from berth.compute.api.request import ComputeRequest

# Every entry shows these, as upstream's frozen listing does.
_UPDATED = "2014-12-03T00:00:00Z"
_NAMESPACE = "http://docs.openstack.org/compute/ext/fake_xml"

# (alias, name, what it added to the v2 API)
_EXTENSIONS: tuple[tuple[str, str, str], ...] = (
    ("os-access-ips", "AccessIPs", "accessIPv4 and accessIPv6 on servers"),
    ("os-admin-actions", "AdminActions", "reset a server's state, inject network info"),
    ("os-admin-password", "AdminPassword", "change a server's password"),
    ("os-agents", "Agents", "guest agent builds"),
    ("os-aggregates", "Aggregates", "host aggregates"),
    ("os-assisted-volume-snapshots", "AssistedVolumeSnapshots", "volume snapshots"),
    ("os-attach-interfaces", "AttachInterfaces", "a server's network interfaces"),
    ("os-availability-zone", "AvailabilityZone", "availability zones"),
    ("os-baremetal-nodes", "BareMetalNodes", "bare metal nodes"),
    ("os-block-device-mapping", "BlockDeviceMapping", "block device mappings at boot"),
    ("os-cells", "Cells", "cells"),
    ("os-certificates", "Certificates", "certificates"),
    ("os-cloudpipe", "Cloudpipe", "VPN instances"),
    ("os-config-drive", "ConfigDrive", "config drives"),
    ("os-console-auth-tokens", "ConsoleAuthTokens", "console connection tokens"),
    ("os-console-output", "ConsoleOutput", "a server's console output"),
    ("os-consoles", "Consoles", "consoles"),
    ("os-create-backup", "CreateBackup", "server backups"),
    ("os-deferred-delete", "DeferredDelete", "soft-deleted servers: restore, force delete"),
    ("os-evacuate", "Evacuate", "evacuating a server from a failed host"),
    ("os-extended-availability-zone", "ExtendedAvailabilityZone", "a server's zone"),
    ("os-extended-server-attributes", "ExtendedServerAttributes", "a server's host details"),
    ("os-extended-status", "ExtendedStatus", "a server's vm, task and power states"),
    ("os-extended-volumes", "ExtendedVolumes", "a server's attached volumes"),
    ("os-fixed-ips", "FixedIPs", "fixed addresses"),
    ("os-flavor-access", "FlavorAccess", "private flavors' projects"),
    ("os-flavor-extra-specs", "FlavorExtraSpecs", "flavors' extra specs"),
    ("os-flavor-manage", "FlavorManage", "creating and deleting flavors"),
    ("os-flavor-rxtx", "FlavorRxtx", "flavors' rxtx_factor"),
    ("os-floating-ip-dns", "FloatingIpDns", "DNS entries of floating addresses"),
    ("os-floating-ip-pools", "FloatingIpPools", "floating address pools"),
    ("os-floating-ips", "FloatingIps", "floating addresses"),
    ("os-floating-ips-bulk", "FloatingIpsBulk", "floating addresses in bulk"),
    ("os-fping", "Fping", "pinging servers"),
    ("os-hide-server-addresses", "HideServerAddresses", "hiding addresses while building"),
    ("os-hosts", "Hosts", "compute hosts"),
    ("os-hypervisors", "Hypervisors", "hypervisors"),
    ("os-instance-actions", "InstanceActions", "a server's actions and their events"),
    ("os-instance-usage-audit-log", "OSInstanceUsageAuditLog", "instance usage audit logs"),
    ("os-keypairs", "Keypairs", "key pairs"),
    ("os-lock-server", "LockServer", "locking servers"),
    ("os-migrate-server", "MigrateServer", "cold and live migration"),
    ("os-migrations", "Migrations", "migrations"),
    ("os-multinic", "Multinic", "adding and removing fixed addresses"),
    ("os-multiple-create", "MultipleCreate", "several servers in one request"),
    ("os-networks", "Networks", "networks"),
    ("os-networks-associate", "NetworkAssociationSupport", "network associations"),
    ("os-pause-server", "PauseServer", "pausing servers"),
    ("os-personality", "Personality", "files injected at boot"),
    ("os-preserve-ephemeral-rebuild", "PreserveEphemeralOnRebuild", "rebuilds that keep data"),
    ("os-quota-class-sets", "QuotaClasses", "quota classes"),
    ("os-quota-sets", "Quotas", "quotas"),
    ("os-remote-consoles", "RemoteConsoles", "remote consoles"),
    ("os-rescue", "Rescue", "rescuing servers"),
    ("os-scheduler-hints", "SchedulerHints", "scheduler hints at boot"),
    ("os-security-group-default-rules", "SecurityGroupDefaultRules", "default group rules"),
    ("os-security-groups", "SecurityGroups", "security groups"),
    ("os-server-diagnostics", "ServerDiagnostics", "a server's diagnostics"),
    ("os-server-external-events", "ServerExternalEvents", "events from other services"),
    ("os-server-group-quotas", "ServerGroupQuotas", "server group quotas"),
    ("os-server-groups", "ServerGroups", "server groups"),
    ("os-server-password", "ServerPassword", "a server's encrypted password"),
    ("os-server-sort-keys", "ServerSortKeys", "sorting server lists"),
    ("os-server-start-stop", "ServerStartStop", "starting and stopping servers"),
    ("os-services", "Services", "compute services"),
    ("os-shelve", "Shelve", "shelving servers"),
    ("os-simple-tenant-usage", "SimpleTenantUsage", "projects' usage"),
    ("os-suspend-server", "SuspendServer", "suspending servers"),
    ("os-tenant-networks", "OSTenantNetworks", "a project's networks"),
    ("os-used-limits", "UsedLimits", "used quota in limits"),
    ("os-user-data", "UserData", "user data at boot"),
    ("os-virtual-interfaces", "VirtualInterfaces", "a server's virtual interfaces"),
    ("os-volumes", "Volumes", "volumes"),
    ("flavors", "Flavors", "flavors"),
    ("images", "Images", "images"),
    ("ips", "Ips", "a server's addresses"),
    ("limits", "Limits", "limits"),
    ("server-metadata", "ServerMetadata", "a server's metadata"),
    ("servers", "Servers", "servers"),
    ("versions", "Versions", "API versions"),
)


def _transform(alias: str, name: str, what: str) -> dict[str, Any]:
    """``{"alias": "os-hosts", "name": "Hosts", "description": "...", "links": [],
    "namespace": "...", "updated": "2014-12-03T00:00:00Z"}``"""
    return {
        "alias": alias,
        "name": name,
        "description": f"The v2 extension for {what}.",
        "links": [],
        "namespace": _NAMESPACE,
        "updated": _UPDATED,
    }


def index(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:extensions")
    return req.respond({"extensions": [_transform(*entry) for entry in _EXTENSIONS]})


def show(req: ComputeRequest) -> Response:
    req.authorize("os_compute_api:extensions")
    alias = req.param("alias")
    for entry in _EXTENSIONS:
        if entry[0] == alias:
            return req.respond({"extension": _transform(*entry)})
    raise exceptions.NotFound(f"Extension {alias} could not be found.")
