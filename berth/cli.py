"""The ``berth`` command."""

from __future__ import annotations

import argparse
import json
import logging
import os
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, get_args

from berth import config
from berth.common import logs
from berth.identity.strategy import IdentityNotConfigured

if TYPE_CHECKING:
    from berth.common.db import Database

LOG = logging.getLogger("berth")


def main(argv: Sequence[str] | None = None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if not hasattr(args, "run"):
        parser.print_help()
        return 2
    if args.config:
        os.environ[config.CONFIG_ENV] = args.config
    try:
        return int(args.run(args) or 0)
    except IdentityNotConfigured as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="berth", description=__doc__)
    parser.add_argument("--config", help="TOML config file (also BERTH_CONFIG)")
    commands = parser.add_subparsers(title="commands")

    up = commands.add_parser("up", help="run every Berth service in one process, with a fleet")
    up.add_argument("--host", default="127.0.0.1", help="listen address")
    up.add_argument("--port", type=int, default=8000, help="listen port")
    up.add_argument("--data-dir", help="where the SQLite files and clouds.yaml go")
    up.add_argument(
        "--fleet", help="YAML fleet of simulated hosts (default: etc/fleet.example.yaml)"
    )
    up.add_argument("--hosts", type=int, help="instead of a fleet file: this many alike OVS hosts")
    up.add_argument(
        "--auth",
        choices=get_args(config.AuthStrategy),
        help="keystone (the default): a real Keystone at /identity validates every token; "
        "noauth2: X-Auth-Token is trusted, for tests and benchmarks (the only choice with "
        "--distributed)",
    )
    up.add_argument(
        "--cells", type=int, default=1, help="with --hosts: spread over this many cells"
    )
    up.add_argument(
        "--distributed",
        action="store_true",
        help="every service its own process, on --transport-url and --database-url",
    )
    up.add_argument("--transport-url", help="with --distributed: rabbit://user:pass@host:5672/")
    up.add_argument(
        "--database-url",
        help="with --distributed: the database server (postgresql://..., mysql://...); "
        "one database per service is made there",
    )
    up.add_argument(
        "--agents", type=int, default=2, help="with --distributed: compute-agent processes"
    )
    up.add_argument(
        "--copies",
        type=int,
        default=1,
        help="with --distributed: copies of the scheduler and of each conductor",
    )
    up.add_argument(
        "--db-prefix",
        default="berth_",
        help="with --distributed: the databases' (and cells' vhosts') name prefix",
    )
    up.add_argument(
        "--base-port",
        type=int,
        default=8000,
        help="with --distributed: placement on +1, network on +2, compute on +3",
    )
    up.set_defaults(run=_up)

    sim = commands.add_parser(
        "sim",
        help="replay a workload through the real scheduler and Placement, faster than real "
        "time, and write a report with plots",
    )
    sim.add_argument(
        "--fleet",
        action="append",
        required=True,
        help="YAML fleet of simulated hosts; give it twice to compare two fleets",
    )
    sim.add_argument("--workload", required=True, help="YAML workload (etc/workload.example.yaml)")
    sim.add_argument("--out", required=True, help="directory for report.html, the PNGs and JSON")
    sim.add_argument(
        "--scheduler",
        action="append",
        default=[],
        help="YAML scheduler settings (weigher_multipliers, host_subset_size, ...); give it "
        "twice to compare two settings on one fleet",
    )
    sim.set_defaults(run=_sim)

    serve = commands.add_parser("serve", help="run one service")
    services = serve.add_subparsers(title="services")
    placement = services.add_parser("placement", help="the Placement API")
    placement.add_argument("--host")
    placement.add_argument("--port", type=int)
    placement.add_argument("--database-url")
    placement.add_argument("--workers", type=int)
    placement.add_argument("--auth", choices=get_args(config.AuthStrategy), dest="auth_strategy")
    placement.add_argument("--policy-file")
    # Both default to true (upstream's behaviour); --no-enforce-... turns one off.
    placement.add_argument("--enforce-new-defaults", action=argparse.BooleanOptionalAction)
    placement.add_argument("--enforce-scope", action=argparse.BooleanOptionalAction)
    placement.add_argument(
        "--cors-allowed-origin",
        action="append",
        dest="cors_allowed_origins",
        help="an origin allowed to make cross-site requests (repeatable)",
    )
    placement.set_defaults(run=_serve_placement)
    network = services.add_parser("network", help="the Networking API (and its Placement sync)")
    network.add_argument("--host")
    network.add_argument("--port", type=int)
    network.add_argument("--database-url")
    network.add_argument("--workers", type=int)
    network.add_argument("--placement-url", help="publish the agents' providers to this Placement")
    network.add_argument("--auth", choices=get_args(config.AuthStrategy), dest="auth_strategy")
    network.set_defaults(run=_serve_network)
    for name, help_text in _COMPUTE_SERVICES.items():
        compute = services.add_parser(name, help=help_text)
        compute.add_argument("--api-database-url", help="the compute API database")
        compute.add_argument("--transport-url", help="the API-level bus (rabbit://...)")
        compute.add_argument("--placement-url", help="e.g. http://127.0.0.1:8778")
        compute.add_argument("--network-url", help="e.g. http://127.0.0.1:9696")
        compute.add_argument("--image-url", help="e.g. http://127.0.0.1:8774/image")
        compute.add_argument("--auth", choices=get_args(config.AuthStrategy), dest="auth_strategy")
        if name == "compute-api":
            compute.add_argument("--host")
            compute.add_argument("--port", type=int)
        if name == "conductor":
            compute.add_argument("--cell", required=True, help="the cell this conductor serves")
        if name == "compute-agent":
            compute.add_argument(
                "--fleet", required=True, help="YAML fleet of the simulated hosts to run"
            )
        compute.set_defaults(run=_serve_compute, service=name)

    manage = commands.add_parser("manage", help="administrative tasks")
    manage_commands = manage.add_subparsers(title="tasks")
    db = manage_commands.add_parser("db", help="database schema")
    db_commands = db.add_subparsers(title="actions")
    cell = manage_commands.add_parser("cell", help="compute cells")
    cell_commands = cell.add_subparsers(title="actions")
    cell_create = cell_commands.add_parser("create", help="map a cell (or cell0)")
    cell_create.add_argument("--name", required=True)
    cell_create.add_argument("--database-url", required=True)
    cell_create.add_argument("--transport-url", default="memory://")
    cell_create.add_argument("--cell0", action="store_true", help="this is cell0")
    cell_create.set_defaults(run=_cell_create)
    cell_list = cell_commands.add_parser("list", help="the mapped cells")
    cell_list.set_defaults(run=_cell_list)
    discover = cell_commands.add_parser(
        "discover-hosts", help="map every compute host found in the cells to its cell"
    )
    discover.set_defaults(run=_discover_hosts)
    audit = manage_commands.add_parser(
        "audit", help="find leaked allocations, orphan ports, wrong bindings, over-commit"
    )
    audit.add_argument(
        "--placement-url", required=True, help="e.g. http://127.0.0.1:8000/placement"
    )
    audit.add_argument("--network-url", required=True, help="e.g. http://127.0.0.1:8000/networking")
    audit.add_argument("--token", default="admin", help="X-Auth-Token for both (noauth2)")
    audit.add_argument(
        "--stuck-after-minutes",
        type=float,
        default=10.0,
        help="a build that nothing happened to for this long is stuck",
    )
    audit.set_defaults(run=_audit)
    placement_tasks = manage_commands.add_parser(
        "placement", help="repair what Placement holds"
    ).add_subparsers(title="actions")
    heal = placement_tasks.add_parser(
        "heal-allocations",
        help="give live servers (and their ports' resource requests) their missing allocations",
    )
    heal.add_argument("--placement-url", required=True, help="e.g. http://127.0.0.1:8000/placement")
    heal.add_argument("--network-url", required=True, help="e.g. http://127.0.0.1:8000/networking")
    heal.add_argument("--token", default="admin", help="X-Auth-Token for both (noauth2)")
    heal.add_argument("--instance", type=_uuid_argument, help="only this server (a UUID)")
    heal.add_argument(
        "--dry-run", action="store_true", help="say what would change; change nothing"
    )
    heal.set_defaults(run=_heal_allocations)
    sync = db_commands.add_parser("sync", help="create or upgrade the placement schema")
    sync.add_argument("--database-url")
    sync.set_defaults(run=_db_sync)
    version = db_commands.add_parser("version", help="print the schema revision")
    version.add_argument("--database-url")
    version.set_defaults(run=_db_version)

    diagnosis = commands.add_parser(
        "diagnosis", help="why the scheduler found no host for a server (admins)"
    )
    diagnosis.add_argument("server", help="the server's id")
    diagnosis.add_argument(
        "--compute-url", required=True, help="e.g. http://127.0.0.1:8000/compute"
    )
    diagnosis.add_argument("--token", default="admin", help="X-Auth-Token (an admin's)")
    diagnosis.add_argument("--json", action="store_true", help="print the document as JSON")
    diagnosis.set_defaults(run=_diagnosis)

    what_if = commands.add_parser(
        "what-if",
        help="where a boot request would go and how many more fit, without booting",
    )
    what_if.add_argument("--compute-url", required=True, help="e.g. http://127.0.0.1:8000/compute")
    what_if.add_argument("--token", default="admin", help="X-Auth-Token")
    what_if.add_argument("--body", type=Path, help="a POST /servers body (JSON file)")
    what_if.add_argument("--flavor", help="flavor id (without --body)")
    what_if.add_argument("--image", help="image id (without --body)")
    what_if.add_argument(
        "--network", action="append", default=[], help="a network id (repeat for more)"
    )
    what_if.add_argument("--port", action="append", default=[], help="a port id (repeat)")
    what_if.add_argument("--availability-zone")
    what_if.add_argument(
        "--hint", action="append", default=[], metavar="KEY=VALUE", help="a scheduler hint"
    )
    what_if.add_argument("--count", type=int, help="how many servers (default 1)")
    what_if.add_argument("--json", action="store_true", help="print the document as JSON")
    what_if.set_defaults(run=_what_if)

    cfg = commands.add_parser("config", help="settings")
    cfg_commands = cfg.add_subparsers(title="actions")
    sample = cfg_commands.add_parser("sample", help="print a documented sample config file")
    sample.set_defaults(run=lambda _a: print(config.sample_config(), end=""))
    show = cfg_commands.add_parser("show", help="print the effective settings as JSON")
    show.set_defaults(run=lambda _a: print(config.load().model_dump_json(indent=2)))

    policy = commands.add_parser("policy", help="authorization rules")
    policy_commands = policy.add_subparsers(title="actions")
    policy_sample = policy_commands.add_parser("sample", help="print every default rule as YAML")
    policy_sample.set_defaults(run=_policy_sample)
    return parser


def _placement_overrides(args: argparse.Namespace) -> dict[str, object]:
    """Command-line options that were given, as settings of the placement section."""
    names = [
        "host",
        "port",
        "database_url",
        "workers",
        "auth_strategy",
        "policy_file",
        "enforce_new_defaults",
        "enforce_scope",
        "cors_allowed_origins",
    ]
    return {n: getattr(args, n) for n in names if getattr(args, n, None) is not None}


def _serve_placement(args: argparse.Namespace) -> int:
    from berth.placement import server

    # Worker processes rebuild their settings from the environment, so options travel there.
    for name, value in _placement_overrides(args).items():
        os.environ[f"BERTH_PLACEMENT__{name.upper()}"] = (
            json.dumps(value) if isinstance(value, list | bool) else str(value)
        )
    settings = config.load()
    _configure_logging(settings.log_level)
    return server.run(settings)


def _serve_network(args: argparse.Namespace) -> int:
    from berth.network import server

    names = ["host", "port", "database_url", "workers", "placement_url", "auth_strategy"]
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            os.environ[f"BERTH_NETWORK__{name.upper()}"] = str(value)
    settings = config.load()
    _configure_logging(settings.log_level)
    return server.run(settings)


_COMPUTE_SERVICES = {
    "compute-api": "the Compute API (and the image API) over the bus",
    "scheduler": "the scheduler (select_destinations)",
    "super-conductor": "the super-conductor (builds, above the cells)",
    "conductor": "the conductor of one cell (reschedules)",
    "compute-agent": "a fleet of simulated compute hosts",
}


def _serve_compute(args: argparse.Namespace) -> int:
    from pathlib import Path

    from berth.compute import processes

    names = [
        "api_database_url", "transport_url", "placement_url", "network_url", "image_url", "host",
        "port", "auth_strategy",
    ]  # fmt: skip
    for name in names:
        value = getattr(args, name, None)
        if value is not None:
            os.environ[f"BERTH_COMPUTE__{name.upper()}"] = str(value)
    settings = config.load()
    _configure_logging(settings.log_level)
    try:
        match args.service:
            case "compute-api":
                return processes.run_compute_api(settings)
            case "scheduler":
                return processes.run_scheduler(settings)
            case "super-conductor":
                return processes.run_super_conductor(settings)
            case "conductor":
                return processes.run_cell_conductor(settings, args.cell)
            case _:
                return processes.run_compute_agent(settings, Path(args.fleet))
    except processes.NotConfigured as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2


def _up(args: argparse.Namespace) -> int:
    from berth.allinone import up

    overrides: dict[str, object] = {}
    if args.data_dir:
        overrides["data_dir"] = args.data_dir
    settings = config.load(**overrides)
    _configure_logging(settings.log_level)
    if args.distributed:
        if args.auth == "keystone":
            print("error: --distributed runs with noauth2; see docs/deployment.md", file=sys.stderr)
            return 2
        return _up_distributed(args, settings)
    auth = args.auth or "keystone"
    return up.run(settings, args.host, args.port, args.fleet, args.hosts, args.cells, auth)


def _sim(args: argparse.Namespace) -> int:
    from pathlib import Path

    from berth.sim import report, runner, scenario, workload

    try:
        work = workload.load(Path(args.workload))
        runs = scenario.scenarios([Path(f) for f in args.fleet], [Path(f) for f in args.scheduler])
    except workload.WorkloadError as exc:
        print(f"error: workload {args.workload}: {exc}", file=sys.stderr)
        return 2
    except scenario.ScenarioError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    _configure_logging("WARNING")
    try:
        results = [runner.run(s, work) for s in runs]
    except runner.SimulationError as exc:
        print(f"error: the simulation stopped: {exc}", file=sys.stderr)
        return 1
    page = report.write(results, Path(args.out), Path(args.workload).name)
    print(f"report: {page}")
    return 0


def _up_distributed(args: argparse.Namespace, settings: config.Settings) -> int:
    from pathlib import Path

    import yaml

    from berth.allinone import distributed, up
    from berth.compute.host import fleet as fleets

    if not args.transport_url or not args.database_url:
        print("error: --distributed needs --transport-url and --database-url", file=sys.stderr)
        return 2
    if args.hosts:
        fleet = fleets.of_size(args.hosts, args.cells)
    else:
        fleet = yaml.safe_load(Path(args.fleet or up.EXAMPLE_FLEET).read_text()) or {}
    return distributed.run(
        settings, args.database_url, args.transport_url, fleet, args.agents, args.base_port,
        args.db_prefix, args.copies,
    )  # fmt: skip


def _api_db() -> Database:
    from berth.common.db import Database
    from berth.compute.db import migrate

    db = Database(config.load().compute_api_database_url())
    migrate.sync_api(db)
    return db


def _cell_create(args: argparse.Namespace) -> int:
    import uuid

    from berth.compute.db import cells

    db = _api_db()
    from berth.bus import parse_bus_url
    from berth.compute.db.errors import Duplicate

    if not args.cell0:
        try:
            parse_bus_url(args.transport_url)
        except ValueError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 2
    cell_uuid = cells.CELL0_UUID if args.cell0 else str(uuid.uuid4())
    try:
        with db.write() as conn:
            cells.create_cell(conn, cell_uuid, args.name, args.database_url, args.transport_url)
    except Duplicate as exc:
        print(f"error: a cell with this {exc.what} exists already", file=sys.stderr)
        return 1
    print(cell_uuid)
    return 0


def _cell_list(_args: argparse.Namespace) -> int:
    from berth.compute.db import cells

    db = _api_db()
    with db.read() as conn:
        for row in cells.list_cells(conn):
            print(
                f"{row['name']}\t{row['uuid']}\t{row['transport_url']}\t{'disabled' if row['disabled'] else 'enabled'}"
            )
    return 0


def _audit(args: argparse.Namespace) -> int:
    import datetime as dt

    from berth.compute.audit import audit
    from berth.compute.cells import CellRegistry
    from berth.compute.clients.http import http_client
    from berth.compute.clients.network import NetworkClient
    from berth.compute.clients.placement import PlacementClient
    from berth.identity.service_user import StaticToken

    report = audit(
        CellRegistry(_api_db()),
        PlacementClient(http_client(args.placement_url, StaticToken(args.token))),
        NetworkClient(http_client(args.network_url, StaticToken(args.token))),
        stuck_after=dt.timedelta(minutes=args.stuck_after_minutes),
    )
    for line in report.lines():
        print(line)
    if report.clean:
        print("nothing leaked, nothing over capacity")
    return 0 if report.clean else 1


def _diagnosis(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.compute.clients.http import http_client
    from berth.compute.diagnosis_view import show
    from berth.identity.service_user import StaticToken

    with http_client(args.compute_url, StaticToken(args.token)) as client:
        answer = client.get(f"/v2.1/os-berth-diagnosis/{args.server}")
    if not answer.is_success:
        print(f"error: {answer.status_code} {answer.text}", file=sys.stderr)
        return 1
    document = answer.json()["diagnosis"]
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        show(document, Console())
    return 0


def _what_if(args: argparse.Namespace) -> int:
    from rich.console import Console

    from berth.compute.clients.http import http_client
    from berth.compute.what_if_view import show
    from berth.identity.service_user import StaticToken

    body = _what_if_body(args)
    if isinstance(body, str):
        print(f"error: {body}", file=sys.stderr)
        return 2
    with http_client(args.compute_url, StaticToken(args.token)) as client:
        answer = client.post(
            "/v2.1/os-berth-what-if", json=body,
            headers={"openstack-api-version": "compute 2.64"},
        )  # fmt: skip
    if not answer.is_success:
        print(f"error: {answer.status_code} {answer.text}", file=sys.stderr)
        return 1
    document = answer.json()["what_if"]
    if args.json:
        print(json.dumps(document, indent=2))
    else:
        show(document, Console())
    return 0


def _what_if_body(args: argparse.Namespace) -> dict[str, Any] | str:
    """The request body from ``--body`` or the options; a message when they do not make one."""
    if args.body is not None:
        body = json.loads(args.body.read_text())
        if not isinstance(body, dict):
            return f"{args.body} does not hold a JSON object"
    else:
        if not (args.flavor and args.image):
            return "give --flavor and --image, or --body"
        networks: Any = [{"uuid": n} for n in args.network] + [{"port": p} for p in args.port]
        server = {
            "name": "what-if", "flavorRef": args.flavor, "imageRef": args.image,
            "networks": networks or "none",
        }  # fmt: skip
        if args.availability_zone:
            server["availability_zone"] = args.availability_zone
        body = {"server": server}
        hints = dict(hint.partition("=")[::2] for hint in args.hint)
        if hints:
            body["os:scheduler_hints"] = hints
    if args.count is not None:
        body["count"] = args.count
    return body


def _uuid_argument(text: str) -> str:
    import uuid

    try:
        return str(uuid.UUID(text))
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a UUID: {text!r}") from None


def _heal_allocations(args: argparse.Namespace) -> int:
    from berth.compute.cells import CellRegistry
    from berth.compute.clients.http import http_client
    from berth.compute.clients.network import NetworkClient
    from berth.compute.clients.placement import PlacementClient
    from berth.compute.heal import heal
    from berth.identity.service_user import StaticToken

    report = heal(
        CellRegistry(_api_db()),
        PlacementClient(http_client(args.placement_url, StaticToken(args.token))),
        NetworkClient(http_client(args.network_url, StaticToken(args.token))),
        dry_run=args.dry_run,
        instance=args.instance,
    )
    prefix = "would " if args.dry_run else ""
    for line in report.actions:
        print(f"{prefix}{line}")
    for line in report.failures:
        print(f"failed: {line}")
    print(report.summary() + (" (dry run: nothing was changed)" if args.dry_run else ""))
    return 1 if report.failures else 0


def _discover_hosts(_args: argparse.Namespace) -> int:
    from berth.compute.cells import CellRegistry
    from berth.compute.db import cells, compute_nodes

    db = _api_db()
    registry = CellRegistry(db)
    for cell in registry.cells(include_cell0=False):
        with registry.database(cell).read() as conn:
            hosts = sorted({node["host"] for node in compute_nodes.list_nodes(conn)})
        with db.write() as conn:
            for host in hosts:
                mapping = cells.map_host(conn, host, cell.id)
                if mapping.created:
                    print(f"mapped {host} to {cell.name}")
    return 0


def _db_sync(args: argparse.Namespace) -> int:
    from berth.placement.store import migrate
    from berth.placement.store.database import open_database

    settings = config.load()
    url = args.database_url or settings.placement_database_url()
    db = open_database(url)
    changed = migrate.sync(db)
    print(
        f"placement schema at {migrate.current_revision(db)} ({'upgraded' if changed else 'current'})"
    )
    db.dispose()
    return 0


def _db_version(args: argparse.Namespace) -> int:
    from berth.placement.store import migrate
    from berth.placement.store.database import open_database

    settings = config.load()
    db = open_database(args.database_url or settings.placement_database_url())
    print(migrate.current_revision(db) or "empty")
    db.dispose()
    return 0


def _policy_sample(_args: argparse.Namespace) -> int:
    from berth.placement import policy

    print(policy.sample_policy_yaml(), end="")
    return 0


def _configure_logging(level: str) -> None:
    logs.configure(level)


if __name__ == "__main__":
    sys.exit(main())
