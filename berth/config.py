"""One settings model for every Berth service.

Precedence, highest first: command-line options (applied by ``berth.cli``), environment variables
(``BERTH_<SECTION>__<FIELD>``, e.g. ``BERTH_PLACEMENT__DATABASE_URL``), the TOML config file (``--config``
or ``BERTH_CONFIG``), then the defaults below, which need no file at all.
"""

from __future__ import annotations

import os
import tomllib
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator
from pydantic_settings import BaseSettings, PydanticBaseSettingsSource, SettingsConfigDict

from berth.bus.url import parse_bus_url
from berth.compute import audit_periods

CONFIG_ENV = "BERTH_CONFIG"
DEFAULT_DATA_DIR = Path("~/.local/share/berth")


AuthStrategy = Literal["noauth2", "keystone"]


def _auth_strategy() -> Any:
    return Field(
        "noauth2",
        description="How requests are authenticated: keystone validates tokens with "
        "keystonemiddleware against [keystone_authtoken]; noauth2 trusts X-Auth-Token "
        "(development and benchmarks only).",
    )


def _enforce_new_defaults() -> Any:
    return Field(
        True,
        description="Apply only the secure-RBAC policy defaults (admin, member, reader, service), "
        "as upstream does by default; false also allows what each rule's legacy default allows.",
    )


def _enforce_scope() -> Any:
    return Field(
        True,
        description="Refuse a token whose scope (system, project) a rule does not declare, as "
        "upstream always does; false ignores scope (a system-scoped admin acts as any admin).",
    )


def _keepalive_requests() -> Any:
    return Field(
        100,
        ge=0,
        description="With several workers, close a kept-alive connection after this many "
        "requests, so that clients reconnect and spread over the workers (0: never).",
    )


class KeystoneAuthtokenSettings(BaseModel):
    """[keystone_authtoken]: the Keystone the APIs validate tokens with (auth_strategy =
    "keystone"), and the service user the services call each other as. Options not listed here
    are passed to keystonemiddleware's auth_token as they are."""

    model_config = ConfigDict(extra="allow")

    www_authenticate_uri: str | None = Field(
        None, description="Public identity endpoint that a refused client is told to use."
    )
    auth_url: str | None = Field(
        None, description="Identity endpoint the service user authenticates at."
    )
    auth_type: str = Field("password", description="keystoneauth plugin of the service user.")
    username: str | None = Field(None, description="The service user's name.")
    password: str | None = Field(None, description="The service user's password.")
    project_name: str = Field("service", description="The service user's project.")
    user_domain_name: str = Field("Default", description="The service user's domain.")
    project_domain_name: str = Field("Default", description="Domain of the service project.")
    region_name: str | None = Field(None, description="Region of the identity endpoint.")
    interface: str = Field(
        "public", description="Catalog interface used to reach the identity service."
    )
    service_token_roles: list[str] = Field(
        default_factory=lambda: ["service"],
        description="A service token (X-Service-Token) must carry one of these roles.",
    )
    service_token_roles_required: bool = Field(
        True, description="Refuse service tokens without one of service_token_roles."
    )
    token_cache_time: int = Field(
        300, ge=0, description="Seconds a validated token is remembered by each process."
    )

    def auth_token_options(self) -> dict[str, Any]:
        """The options keystonemiddleware's auth_token takes, unset ones left out."""
        return {k: v for k, v in self.model_dump().items() if v is not None}


class PlacementSettings(BaseModel):
    """The Placement service."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address the Placement API listens on.")
    port: int = Field(8778, description="TCP port of the Placement API.")
    workers: int = Field(1, ge=1, description="Number of API worker processes.")
    keepalive_requests: int = _keepalive_requests()
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the placement database; default: a SQLite file in data_dir.",
    )
    auth_strategy: AuthStrategy = _auth_strategy()
    policy_file: str | None = Field(
        None, description="YAML or JSON file whose rules override the default policies."
    )
    enforce_new_defaults: bool = _enforce_new_defaults()
    enforce_scope: bool = _enforce_scope()
    cors_allowed_origins: list[str] = Field(
        default_factory=list, description="Origins allowed to make cross-site requests (CORS)."
    )
    randomize_allocation_candidates: bool = Field(
        False,
        description="Shuffle allocation candidates before applying limit, so that a limited "
        "answer is not always the same providers.",
    )
    max_allocation_candidates: int = Field(
        1000,
        ge=-1,
        description="Upper bound on the candidates one request returns, whatever limit it asks "
        "for, and the limit of a request that gives none (-1: unbounded, as upstream's default; "
        "a request without a limit may then need more memory than a worker has).",
    )
    allocation_candidates_budget: float = Field(
        1.5,
        gt=0,
        description="Seconds of processor time one allocation candidates search may take; a "
        "search that needs more is stopped and answered with 400 saying why.",
    )
    verify_index: bool = Field(
        False,
        description="Debugging aid: after every update of a worker's in-memory candidate index, "
        "rebuild it from the database and fail the request if the two differ. Slow.",
    )
    allocation_conflict_retry_count: int = Field(
        10,
        ge=0,
        description="How many times a reshaper write retries internally when a provider "
        "generation changed under it before answering 409. Allocation writes lock their "
        "providers and wait instead of retrying.",
    )


class NetworkSettings(BaseModel):
    """The network service (OpenStack Networking v2.0 API)."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address the Networking API listens on.")
    port: int = Field(9696, description="TCP port of the Networking API.")
    workers: int = Field(1, ge=1, description="Number of API worker processes.")
    keepalive_requests: int = _keepalive_requests()
    database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the network database; default: a SQLite file in data_dir.",
    )
    placement_url: str | None = Field(
        None,
        description="Base URL of the Placement API the agents' providers are published to "
        "(e.g. http://127.0.0.1:8778); none: providers are not published.",
    )
    placement_token: str = Field(
        "admin",
        description="X-Auth-Token the network service sends to Placement while its "
        "auth_strategy is noauth2 (an admin); with keystone it calls as the service user.",
    )
    placement_sync_interval: float = Field(
        60.0,
        gt=0,
        description="Seconds between full Placement sync passes (writes also wake the sync).",
    )
    auth_strategy: AuthStrategy = _auth_strategy()
    base_mac: str = Field(
        "fa:16:3e:00:00:00",
        description="MAC addresses of new ports keep this prefix (its first three octets) and "
        "get random low octets.",
    )
    tenant_network_type: Literal["vxlan", "geneve"] = Field(
        "vxlan",
        description="Segment type of a network created without provider attributes; it gets "
        "the lowest free segmentation id.",
    )
    global_physnet_mtu: int = Field(
        1500, ge=68, description="MTU of the physical networks; a flat or VLAN network's MTU."
    )
    tunnel_overhead: int = Field(
        50,
        ge=0,
        description="Bytes an overlay (VXLAN, Geneve) takes from the physical MTU.",
    )
    agent_down_time: int = Field(
        75,
        ge=1,
        description="Seconds without a heartbeat after which an agent counts as dead and its "
        "host can no longer bind ports.",
    )
    pagination_max_limit: int = Field(
        1000,
        ge=1,
        description="The most items one list page returns, whatever limit it asks for.",
    )
    quota_network: int = Field(
        100, ge=-1, description="Networks a project may own unless its quota says (-1: no limit)."
    )
    quota_subnet: int = Field(
        100, ge=-1, description="Subnets a project may own unless its quota says (-1: no limit)."
    )
    quota_port: int = Field(
        500, ge=-1, description="Ports a project may own unless its quota says (-1: no limit)."
    )
    quota_rbac_policy: int = Field(
        10,
        ge=-1,
        description="RBAC policies (grants of a network or QoS policy to other projects) a "
        "project may own unless its quota says (-1: no limit).",
    )
    quota_security_group: int = Field(
        10,
        ge=-1,
        description="Security groups a project may own unless its quota says (-1: no limit).",
    )
    quota_security_group_rule: int = Field(
        100,
        ge=-1,
        description="Security group rules a project may own unless its quota says (-1: no limit).",
    )
    quota_router: int = Field(
        10, ge=-1, description="Routers a project may own unless its quota says (-1: no limit)."
    )
    quota_floatingip: int = Field(
        50,
        ge=-1,
        description="Floating IPs a project may own unless its quota says (-1: no limit).",
    )
    enforce_new_defaults: bool = _enforce_new_defaults()
    enforce_scope: bool = _enforce_scope()


class ComputeSettings(BaseModel):
    """The compute service: its API, conductors, scheduler and host agents."""

    model_config = ConfigDict(extra="forbid")

    host: str = Field("127.0.0.1", description="Address the Compute API listens on.")
    port: int = Field(8774, description="TCP port of the Compute API.")
    auth_strategy: AuthStrategy = _auth_strategy()
    api_database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of the compute API database (cells, mappings, flavors, "
        "build requests); default: a SQLite file in data_dir.",
    )
    cell0_database_url: str | None = Field(
        None,
        description="SQLAlchemy URL of cell0, where servers that never got a host are kept; "
        "default: a SQLite file in data_dir.",
    )
    default_availability_zone: str = Field(
        "nova", description="The availability zone of hosts in no zone-carrying aggregate."
    )
    policy_file: str | None = Field(
        None, description="YAML or JSON file whose rules override the default Compute policies."
    )
    enforce_new_defaults: bool = _enforce_new_defaults()
    enforce_scope: bool = _enforce_scope()
    cpu_allocation_ratio: float = Field(
        4.0, gt=0, description="VCPU allocation ratio a compute host reports to Placement."
    )
    ram_allocation_ratio: float = Field(
        1.0, gt=0, description="MEMORY_MB allocation ratio a compute host reports."
    )
    disk_allocation_ratio: float = Field(
        1.0, gt=0, description="DISK_GB allocation ratio a compute host reports."
    )
    reserved_host_memory_mb: int = Field(
        512, ge=0, description="Memory a compute host keeps for itself (reserved MEMORY_MB)."
    )
    reserved_host_disk_mb: int = Field(
        0, ge=0, description="Disk a compute host keeps for itself (reserved DISK_GB, rounded up)."
    )
    allow_resize_to_same_host: bool = Field(
        False,
        description="Let a resize choose the server's own host (where it fits both flavors "
        "for a while); cold migration always leaves the host.",
    )
    max_attempts: int = Field(
        3,
        ge=1,
        description="Hosts a server may be tried on: the chosen one and up to max_attempts - 1 "
        "alternates in the same cell.",
    )
    host_subset_size: int = Field(
        1,
        ge=1,
        description="Pick at random among this many best hosts (spreads concurrent builds).",
    )
    placement_limit: int = Field(
        1000, ge=1, description="The limit of the scheduler's allocation candidates query."
    )
    scheduler_batching: bool = Field(
        True,
        description="Schedule concurrent requests of the same shape (flavor, image, project, "
        "zone, port requests; no hints or group) in one pass: one Placement query and host "
        "read for all, each placed in turn on what the earlier ones left.",
    )
    enabled_filters: list[str] | None = Field(
        None,
        description="Scheduler filters in the order they run; none: every filter Berth has "
        "(docs/compute.md lists them).",
    )
    weigher_multipliers: dict[str, float] = Field(
        default_factory=dict,
        description="Multiplier per weigher name (e.g. RAMWeigher = -1.0 stacks instead of "
        "spreading); a weigher not named keeps its default.",
    )
    transport_url: str = Field(
        "memory://",
        description="The API-level bus (super-conductor, scheduler): memory:// in one process, "
        "rabbit://user:password@host:5672/vhost across processes. Each cell's bus is in its "
        "cell mapping.",
    )
    rpc_response_timeout: float = Field(
        60.0, gt=0, description="Seconds a call on the bus waits for its answer."
    )
    placement_url: str | None = Field(
        None,
        description="Placement's endpoint for the compute services run apart "
        "(e.g. http://127.0.0.1:8778).",
    )
    network_url: str | None = Field(
        None,
        description="The Networking API's endpoint for the compute services run apart "
        "(e.g. http://127.0.0.1:9696).",
    )
    image_url: str | None = Field(
        None,
        description="The Image API's endpoint for the compute hosts run apart, which upload "
        "snapshots to it (e.g. http://127.0.0.1:8774/image).",
    )
    service_token: str = Field(
        "admin",
        description="X-Auth-Token the compute services send to Placement and network while "
        "auth_strategy is noauth2; with keystone they call as the service user.",
    )
    service_down_time: float = Field(
        60.0, gt=0, description="Seconds without a heartbeat after which a compute host is down."
    )
    report_interval: float = Field(
        10.0, gt=0, description="Seconds between a compute host's heartbeats."
    )
    stuck_build_timeout: float = Field(
        600.0,
        gt=0,
        description="Seconds after which a build that nothing happened to is ended in ERROR "
        "(and gives back what it held) by the super-conductors' recovery.",
    )
    queue_retry_interval: float = Field(
        5.0,
        gt=0,
        description="Seconds between the super-conductors' passes over the servers that wait "
        "for room (a flavor's berth:queue_timeout or the queue_timeout hint): room freed by a "
        "delete or a move is taken within one interval.",
    )
    shelved_offload_time: int = Field(
        0,
        ge=-1,
        le=0,
        description="Seconds a shelved server keeps its host before it is offloaded: 0 offloads "
        "at once, -1 never (until shelveOffload). Berth has no periodic offload, so a later "
        "offload is refused.",
    )
    graceful_shutdown_timeout: float = Field(
        30.0,
        ge=0,
        description="On SIGTERM, seconds a compute service waits for the work it has taken.",
    )
    instance_usage_audit: bool = Field(
        True,
        description="Each compute host counts, once per audit period, the servers it ran in the "
        "period before (os-instance_usage_audit_log shows it).",
    )
    instance_usage_audit_period: str = Field(
        "month",
        description="The audit period: hour, day, month or year, optionally @offset (the minute, "
        "hour, day or month at which periods start: month@15).",
    )
    reclaim_instance_interval: int = Field(
        0,
        ge=0,
        description="Seconds a deleted server stays SOFT_DELETED (restorable) before its host "
        "reclaims it; 0 deletes at once.",
    )

    @field_validator("transport_url")
    @classmethod
    def _bus_url(cls, value: str) -> str:
        parse_bus_url(value)
        return value

    @field_validator("instance_usage_audit_period")
    @classmethod
    def _audit_period(cls, value: str) -> str:
        return audit_periods.check_spec(value)


class ImageSettings(BaseModel):
    """The Image API (served beside the Compute API, at /image) and its data store."""

    data_dir: Path | None = Field(
        None,
        description="The directory of image data files (one per image); default: images/ in "
        "data_dir.",
    )
    image_size_cap: int = Field(
        1024**4,
        ge=0,
        description="The largest image data an upload may bring, in bytes (larger: 413).",
    )


class UpSettings(BaseModel):
    """``berth up``: every service in one process."""

    model_config = ConfigDict(extra="forbid")

    one_cpu: bool = Field(
        True,
        description="Once started, run every thread of the process on one CPU (the least busy "
        "then): its Python runs under one interpreter lock, and handing the lock between "
        "CPUs costs more than the second CPU gives (docs/performance.md). false: the system "
        "spreads the threads.",
    )


class Settings(BaseSettings):
    """Berth's settings."""

    model_config = SettingsConfigDict(
        env_prefix="BERTH_", env_nested_delimiter="__", extra="forbid"
    )

    data_dir: Path = Field(DEFAULT_DATA_DIR, description="Where embedded databases are kept.")
    log_level: str = Field("INFO", description="Python logging level of the services.")
    keepalive_timeout: int = Field(
        75,
        ge=1,
        description="Seconds every HTTP API keeps an idle kept-alive connection open (nginx's "
        "default). Longer than the pauses of polling clients (the openstack CLI's --wait polls "
        "every 5 s): a server that closes a connection as the client reuses it resets that "
        "request.",
    )
    placement: PlacementSettings = Field(default_factory=PlacementSettings)
    network: NetworkSettings = Field(default_factory=NetworkSettings)
    compute: ComputeSettings = Field(default_factory=ComputeSettings)
    image: ImageSettings = Field(default_factory=ImageSettings)
    up: UpSettings = Field(default_factory=UpSettings)
    keystone_authtoken: KeystoneAuthtokenSettings = Field(default_factory=KeystoneAuthtokenSettings)

    @field_validator("data_dir")
    @classmethod
    def _expand_home(cls, value: Path) -> Path:
        return value.expanduser()

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        return (init_settings, env_settings, _TomlFileSource(settings_cls))

    def placement_database_url(self) -> str:
        return self.placement.database_url or f"sqlite:///{self.data_dir / 'placement.db'}"

    def compute_api_database_url(self) -> str:
        return self.compute.api_database_url or f"sqlite:///{self.data_dir / 'compute_api.db'}"

    def cell0_database_url(self) -> str:
        return self.compute.cell0_database_url or f"sqlite:///{self.data_dir / 'cell0.db'}"

    def image_data_dir(self) -> Path:
        return self.image.data_dir or self.data_dir / "images"

    def network_database_url(self) -> str:
        return self.network.database_url or f"sqlite:///{self.data_dir / 'network.db'}"


class _TomlFileSource(PydanticBaseSettingsSource):
    """Reads the file named by ``BERTH_CONFIG``, if any."""

    def __init__(self, settings_cls: type[BaseSettings]) -> None:
        super().__init__(settings_cls)
        path = os.environ.get(CONFIG_ENV)
        self._data: dict[str, Any] = {}
        if path:
            with open(path, "rb") as f:
                self._data = tomllib.load(f)

    def get_field_value(self, field: Any, field_name: str) -> tuple[Any, str, bool]:
        return self._data.get(field_name), field_name, False

    def __call__(self) -> dict[str, Any]:
        return dict(self._data)


def load(config_file: str | None = None, **overrides: Any) -> Settings:
    """Settings from defaults, the config file, the environment and explicit overrides."""
    if config_file:
        os.environ[CONFIG_ENV] = config_file
    return Settings(**overrides)


def sample_config() -> str:
    """A commented TOML sample with every setting at its default, generated from the model."""
    lines = ["# Berth sample configuration, generated by `berth config sample`.", ""]
    lines += _describe(Settings, Settings.model_construct(), prefix="")
    return "\n".join(lines).rstrip() + "\n"


def _describe(model: type[BaseModel], value: BaseModel, prefix: str) -> list[str]:
    out: list[str] = []
    nested: list[tuple[str, type[BaseModel], BaseModel]] = []
    for name, field in model.model_fields.items():
        current = getattr(value, name)
        if isinstance(current, BaseModel):
            nested.append((name, type(current), current))
            continue
        env = f"BERTH_{prefix.upper()}{'__' if prefix else ''}{name.upper()}"
        out.append(f"# {field.description} (env: {env})")
        out.append(
            f"# {name} = {_toml(current)}" if current is None else f"{name} = {_toml(current)}"
        )
        out.append("")
    for name, sub_model, sub_value in nested:
        out.append(f"[{name}]")
        doc = (sub_model.__doc__ or "").strip()
        out += [f"# {line.strip()}" for line in doc.splitlines()]
        out += _describe(sub_model, sub_value, prefix=name)
    return out


def _toml(value: Any) -> str:
    if value is None:
        return '""'
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return repr(value)
    if isinstance(value, list):
        return "[" + ", ".join(_toml(v) for v in value) + "]"
    if isinstance(value, dict):
        return "{" + ", ".join(f"{k} = {_toml(v)}" for k, v in value.items()) + "}"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'
