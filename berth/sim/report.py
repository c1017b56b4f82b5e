"""The report of a simulation: report.json (the summary and every sample), the PNG figures, and
report.html, one self-contained page (figures inlined) with the summary table."""

from __future__ import annotations

import base64
import dataclasses
import html
import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from berth.sim.plots import draw_all
from berth.sim.runner import Run

__all__ = ["write"]


def write(runs: Sequence[Run], out: Path, workload_name: str) -> Path:
    """Write the report of ``runs`` (one, or two compared) into ``out``; the HTML page's path."""
    out.mkdir(parents=True, exist_ok=True)
    document = {
        "workload": workload_name,
        "runs": [
            {
                "summary": run.summary(),
                "failures": [
                    dataclasses.asdict(f) | {"codes": list(f.codes)} for f in run.failures
                ],
                "samples": [dataclasses.asdict(s) for s in run.samples],
            }
            for run in runs
        ],
    }
    (out / "report.json").write_text(json.dumps(document, indent=1))
    figures = draw_all(runs, out)
    page = out / "report.html"
    page.write_text(_page(runs, figures, workload_name))
    return page


# Summary rows: label -> how one run's summary shows it.
_ROWS: tuple[tuple[str, Any], ...] = (
    ("hosts", lambda s: s["hosts"]),
    ("boots", lambda s: s["boots"]),
    ("accepted", lambda s: s["accepted"]),
    ("failed", lambda s: s["failed"]),
    ("acceptance rate", lambda s: f"{100 * s['acceptance_rate']:.1f} %"),
    ("deleted", lambda s: s["deleted"]),
    ("simulated time", lambda s: f"{s['simulated_seconds']:.0f} s"),
    ("wall time", lambda s: f"{s['wall_seconds']:.1f} s"),
    (
        "scheduling p50",
        lambda s: "-" if s["scheduling_ms_p50"] is None else f"{s['scheduling_ms_p50']:.1f} ms",
    ),
)


def _table(runs: Sequence[Run]) -> str:
    summaries = [run.summary() for run in runs]
    series = sorted({k for s in summaries for k in s["peak_utilisation"]})
    rows = [(label, [show(s) for s in summaries]) for label, show in _ROWS]
    rows += [
        (f"peak {name}", [f"{100 * s['peak_utilisation'].get(name, 0):.1f} %" for s in summaries])
        for name in series
    ]
    rows += [
        (
            f"mean fragmentation {rc}",
            [f"{100 * s['mean_fragmentation'].get(rc, 0):.1f} %" for s in summaries],
        )
        for rc in ("VCPU", "MEMORY_MB")
    ]
    head = "".join(f"<th>{html.escape(s['scenario'])}</th>" for s in summaries)
    body = "".join(
        f"<tr><th>{html.escape(label)}</th>{''.join(f'<td>{html.escape(str(v))}</td>' for v in values)}</tr>"
        for label, values in rows
    )
    return f"<table><tr><th></th>{head}</tr>{body}</table>"


def _failures(run: Run) -> str:
    reasons = run.failures_by_reason()
    if not reasons:
        return f"<h3>{html.escape(run.scenario)}: no failures</h3>"
    rows = "".join(
        f"<tr><td>{n}</td><td>{html.escape(', '.join(codes) or '-')}</td><td>{html.escape(reason)}</td></tr>"
        for reason, n, codes in reasons
    )
    return (
        f"<h3>{html.escape(run.scenario)}: failures by reason</h3>"
        f"<table><tr><th>boots</th><th>codes</th><th>fault (counts as N)</th></tr>{rows}</table>"
    )


def _page(runs: Sequence[Run], figures: Sequence[Path], workload_name: str) -> str:
    images = "".join(
        f'<figure><img alt="{path.stem}" src="data:image/png;base64,'
        f'{base64.b64encode(path.read_bytes()).decode()}"></figure>'
        for path in figures
    )
    title = f"berth sim: {html.escape(workload_name)}"
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{title}</title>
<style>
body {{ font-family: sans-serif; margin: 2em; color: #222; }}
table {{ border-collapse: collapse; margin-bottom: 1.5em; }}
th, td {{ border: 1px solid #ccc; padding: 0.25em 0.6em; text-align: left; font-size: 0.9em; }}
img {{ max-width: 100%; }}
figure {{ margin: 1em 0; }}
</style></head><body>
<h1>{title}</h1>
<h2>Summary</h2>
{_table(runs)}
<h2>Failures</h2>
{"".join(_failures(run) for run in runs)}
<h2>Over time</h2>
{images}
</body></html>
"""
