"""A scheduling diagnosis (the ``/os-berth-diagnosis`` document) printed for a person: what
Placement could not give, request group by request group, then what each filter removed."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.console import Console
from rich.table import Table

from berth.compute.objects.diagnosis import Diagnosis


def show(document: Mapping[str, Any], console: Console, title: str | None = None) -> None:
    diagnosis = Diagnosis.from_json(document)
    console.print(f"[bold]{title or 'server ' + str(document.get('server_id', '?'))}[/bold]")
    console.print(document.get("fault_message") or diagnosis.render(), soft_wrap=True)
    console.print(
        f"{diagnosis.available}/{diagnosis.hosts} hosts available; "
        f"Placement returned {diagnosis.placement_hosts}"
    )
    if diagnosis.groups:
        groups = Table(title="Request groups, each asked of Placement alone")
        groups.add_column("met alone")
        # Ids are folded, never cut: they are what the reader copies.
        groups.add_column("request group", overflow="fold", min_width=24)
        groups.add_column("what was short", overflow="fold")
        for group in diagnosis.groups:
            if group.port_id is None:
                name = "flavor" + (f" group {group.suffix}" if group.suffix else "")
            else:
                name = f"port {group.port_id}\nrequest group {group.request_group}"
            groups.add_row(
                "yes" if group.met_alone else "[red]no[/red]",
                name,
                "\n".join(s.render() for s in group.shortfalls),
            )
        console.print(groups)
    for shortfall in diagnosis.together:
        console.print(f"together: {shortfall.render()}")
    if diagnosis.stages:
        stages = Table(title="Stages that removed hosts")
        for column in ("stage", "removed", "reasons"):
            stages.add_column(column)
        for stage in diagnosis.stages:
            reasons = ", ".join(f"{code}: {n}" for code, n in stage.reasons)
            stages.add_row(stage.name, str(stage.removed), reasons)
        console.print(stages)
