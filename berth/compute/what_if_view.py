"""A what-if (the ``/os-berth-what-if`` document) printed for a person: where each instance
would go and from which providers, then how many more fit, by zone, cell and host."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from berth.compute import diagnosis_view


def show(document: Mapping[str, Any], console: Console) -> None:
    count = document["count"]
    instances = document.get("instances")
    if document["fits"]:
        console.print(f"[bold green]fits: {count} of {count}[/bold green]")
    else:
        console.print(f"[bold red]does not fit[/bold red] ({count} asked)")
    if instances:
        console.print(_placements(instances))
    if document.get("diagnosis"):
        diagnosis = {**document["diagnosis"], "fault_message": document.get("message")}
        diagnosis_view.show(diagnosis, console, title="why not")
    elif document.get("message"):
        console.print(document["message"], soft_wrap=True)
    capacity = document["capacity"]
    at_least = "" if capacity["exact"] else "at least "
    together = " (on one host: an affinity group)" if capacity["together"] else ""
    console.print(f"[bold]{at_least}{capacity['instances']} more fit now{together}[/bold]")
    if capacity["availability_zones"]:
        console.print(_counts("availability zone", capacity["availability_zones"]))
    if capacity.get("cells"):
        console.print(_counts("cell", capacity["cells"]))
    if capacity.get("hosts"):
        hosts = Table(title="Room per host")
        for column in ("host", "cell", "availability zone", "more fit"):
            hosts.add_column(column)
        for host in capacity["hosts"]:
            more = str(host["instances"]) + ("" if host["exact"] else "+")
            hosts.add_row(host["host"], host["cell"] or "", host["availability_zone"], more)
        console.print(hosts)


def _placements(instances: list[Mapping[str, Any]]) -> Table:
    table = Table(title="Where the scheduler would put each instance (nothing claimed)")
    table.add_column("#")
    table.add_column("host")
    table.add_column("alternates")
    # Ids are folded, never cut: they are what the reader copies.
    table.add_column("providers", overflow="fold")
    for number, chosen in enumerate(instances, 1):
        lines = [
            f"{body['name'] or rp}: "
            + ", ".join(f"{rc}={n}" for rc, n in body["resources"].items())
            for rp, body in chosen["allocations"].items()
        ]
        for port in chosen["ports"]:
            where = (
                f"port {port['port_id']}"
                if port["port_id"]
                else f"new port on {port['network_id']}"
            )
            for group in port["request_groups"]:
                name = chosen["allocations"].get(group["provider"], {}).get("name")
                lines.append(f"{where}, group {group['id']}: {name or group['provider']}")
        table.add_row(
            str(number),
            f"{chosen['host']}\n{chosen['cell']}",
            ", ".join(a["host"] for a in chosen["alternates"]),
            "\n".join(lines),
        )
    return table


def _counts(what: str, counts: Mapping[str, int]) -> Table:
    table = Table(title=f"Room per {what}")
    table.add_column(what)
    table.add_column("more fit")
    for name, n in counts.items():
        table.add_row(name, str(n))
    return table
