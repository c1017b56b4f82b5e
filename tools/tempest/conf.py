"""tempest.conf from what a running Berth has.

Every value is either read from the cloud (``CloudFacts``) or states a fact about Berth: which
optional Nova and Neutron features it implements. A feature Berth does not have is turned off here
so that its tests are skipped with tempest's own reason rather than failing.
"""

from __future__ import annotations

import configparser
from pathlib import Path

from berth.compute.scheduler.filters import DEFAULT_FILTERS
from tools.tempest.cloud import PUBLIC_NETWORK, CloudFacts

# Simulated hosts boot in a fraction of a second; a state that has not come in this time never will.
BUILD_TIMEOUT = 90

# Optional compute features (tempest's [compute-feature-enabled]) and whether Berth has each.
COMPUTE_FEATURES = {
    "resize": True,
    "cold_migration": True,
    "live_migration": True,
    # Simulated hosts share no storage: every live migration copies the disk.
    "block_migration_for_live_migration": True,
    "can_migrate_between_any_hosts": True,
    "shelve": True,
    "shelve_migrate": False,
    "interface_attach": True,
    "pause": True,
    "suspend": True,
    # The simulated guests keep an admin password, a console log and a rescue image.
    "change_password": True,
    "console_output": True,
    "rescue": True,
    # Stable device rescue needs 2.87 (above the microversions served) and snapshots.
    "stable_rescue": False,
    # createImage, createBackup, and shelving's <name>-shelved image (docs/compute.md, "Images
    # and snapshots").
    "snapshot": True,
    # OS-DCF:diskConfig is kept and shown; personality files, user data and the config drive
    # reach the simulated guest. No metadata service serves guests.
    "disk_config": True,
    "personality": True,
    "config_drive": True,
    "metadata_service": False,
    # A create answers an adminPass (Nova's enable_instance_password = true); tempest's
    # response schema refuses one when this is off.
    "enable_instance_password": True,
    "vnc_console": False,
    "spice_console": False,
    "serial_console": False,
    "attach_encrypted_volume": False,
    "swap_volume": False,
    "volume_backed_live_migration": False,
    "volume_multiattach": False,
    "ide_bus": False,
    "unified_limits": False,
}


def render(facts: CloudFacts, workdir: Path) -> configparser.ConfigParser:
    """tempest.conf for the cloud of ``facts``; tempest's log and lock files go in ``workdir``."""
    conf = configparser.ConfigParser(interpolation=None)
    conf.optionxform = str  # type: ignore[assignment,method-assign]
    conf.read_dict(
        {
            "DEFAULT": {"log_dir": str(workdir), "log_file": "tempest.log", "debug": "true"},
            "auth": {
                # Berth's Keystone lets its admin make projects and users: one set per test class.
                "use_dynamic_credentials": "true",
                # No routers in Berth: tempest's per-project network, subnet and router cannot be
                # made, so servers use the shared network instead (fixed_network_name).
                "create_isolated_networks": "false",
                "admin_username": facts.admin.username,
                "admin_password": facts.admin.password,
                "admin_project_name": facts.admin.project_name,
                "admin_domain_name": "Default",
                "default_credentials_domain_name": "Default",
            },
            "identity": {
                "uri_v3": facts.identity_v3,
                "auth_version": "v3",
                "region": "RegionOne",
                "v3_endpoint_type": "public",
            },
            "identity-feature-enabled": {"api_v2": "false", "api_v3": "true"},
            "compute": {
                "image_ref": facts.image_ref,
                "image_ref_alt": facts.image_ref_alt,
                "flavor_ref": facts.flavor_ref,
                "flavor_ref_alt": facts.flavor_ref_alt,
                "fixed_network_name": facts.shared_network,
                "min_compute_nodes": str(min(facts.compute_hosts, 2)),
                "min_microversion": facts.compute_min_version,
                "max_microversion": facts.compute_max_version,
                "build_timeout": str(BUILD_TIMEOUT),
                "build_interval": "1",
                "region": "RegionOne",
            },
            "compute-feature-enabled": {
                **{name: _bool(on) for name, on in COMPUTE_FEATURES.items()},
                "scheduler_enabled_filters": ",".join(DEFAULT_FILTERS),
            },
            "image": {"region": "RegionOne", "build_timeout": str(BUILD_TIMEOUT)},
            "image-feature-enabled": {"api_v2": _bool(facts.image_api)},
            "network": {
                "region": "RegionOne",
                "project_network_cidr": "10.100.0.0/16",
                "public_network_id": facts.public_network_id,
                "floating_network_name": PUBLIC_NETWORK,
                "project_networks_reachable": "false",
                "build_timeout": str(BUILD_TIMEOUT),
                "build_interval": "1",
            },
            "network-feature-enabled": {
                "api_extensions": ",".join(facts.network_extensions),
                "ipv6": "true",
                # ipv6_ra_mode and ipv6_address_mode are kept on IPv6 subnets (docs/network.md).
                "ipv6_subnet_attributes": "true",
                "floating_ips": _bool("router" in facts.network_extensions),
                "port_security": _bool("port-security" in facts.network_extensions),
                "port_admin_state_change": "true",
            },
            "service_available": {
                "nova": "true",
                "neutron": "true",
                "glance": _bool(facts.image_api),
                "placement": "true",
                "keystone": "true",
                "cinder": "false",
                "swift": "false",
                "horizon": "false",
            },
            "validation": {"run_validation": "false"},
            "oslo_concurrency": {"lock_path": str(workdir / "locks")},
        }
    )
    return conf


def write(conf: configparser.ConfigParser, path: Path) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w") as out:
        conf.write(out)


def _bool(value: bool) -> str:
    return "true" if value else "false"
