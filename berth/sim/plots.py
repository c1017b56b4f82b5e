"""The report's figures as PNG files (matplotlib's Agg backend: no display needed). Each figure
has one panel per run, side by side on shared axes, so two runs compare at a glance."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt
from matplotlib.axes import Axes

from berth.sim.runner import Run

__all__ = ["FIGURES", "draw_all"]

DPI = 80


def _series(run: Run) -> list[str]:
    """The lines worth drawing: compute resources always, network ones once something used them."""
    names = sorted({s for sample in run.samples for s in sample.capacity})
    compute = [s for s in ("VCPU", "MEMORY_MB", "DISK_GB") if s in names]
    used = [s for s in names if s not in compute and any(x.used.get(s) for x in run.samples)]
    return compute + used


def _utilisation(ax: Axes, run: Run) -> None:
    times = [s.time for s in run.samples]
    for series in _series(run):
        ax.step(
            times, [100 * s.utilisation(series) for s in run.samples], where="post", label=series
        )
    ax.set_ylabel("used (% of capacity)")
    ax.set_ylim(0, 105)


def _fragmentation(ax: Axes, run: Run) -> None:
    times = [s.time for s in run.samples]
    for rc in ("VCPU", "MEMORY_MB"):
        values = [100 * s.fragmentation.get(rc, 0.0) for s in run.samples]
        ax.step(
            times, values, where="post", label=f"free {rc} on hosts too full for the largest flavor"
        )
    ax.set_ylabel("share of free capacity (%)")
    ax.set_ylim(0, 105)


def _outcomes(ax: Axes, run: Run) -> None:
    times = [s.time for s in run.samples]
    ax.step(times, [s.accepted for s in run.samples], where="post", label="accepted (total)")
    ax.step(times, [s.failed for s in run.samples], where="post", label="failed (total)")
    ax.step(times, [s.active for s in run.samples], where="post", label="active now")
    ax.set_ylabel("servers")


def _failures(ax: Axes, run: Run) -> None:
    codes = Counter(code for f in run.failures for code in (f.codes or ("(no diagnosis)",)))
    if not codes:
        ax.text(0.5, 0.5, "no failures", ha="center", va="center", transform=ax.transAxes)
        ax.set_axis_off()
        return
    ranked = codes.most_common(8)[::-1]
    ax.barh([code for code, _ in ranked], [n for _, n in ranked], height=0.5)
    ax.set_xlabel("failed boots naming this reason")


# File name -> (title, how one run's panel is drawn, whether the x axis is simulated time).
FIGURES: dict[str, tuple[str, Callable[[Axes, Run], None], bool]] = {
    "utilisation.png": ("Utilisation per resource", _utilisation, True),
    "fragmentation.png": ("Fragmentation", _fragmentation, True),
    "outcomes.png": ("Boots accepted and failed", _outcomes, True),
    "failures.png": ("Failures by reason", _failures, False),
}


def draw_all(runs: Sequence[Run], out: Path) -> list[Path]:
    """Every figure into ``out``; their paths."""
    return [_draw(runs, out / name, *figure) for name, figure in FIGURES.items()]


def _draw(
    runs: Sequence[Run], path: Path, title: str, panel: Callable[[Axes, Run], None], timed: bool
) -> Path:
    figure, axes = plt.subplots(
        1, len(runs), figsize=(6.5 * len(runs), 4), sharey=timed, squeeze=False
    )
    for ax, run in zip(axes[0], runs, strict=True):
        panel(ax, run)
        ax.set_title(f"{title}: {run.scenario}", fontsize=10)
        if timed:
            ax.set_xlabel("simulated time (s)")
            ax.grid(alpha=0.3)
            ax.legend(fontsize=7, loc="upper left")
    figure.tight_layout()
    figure.savefig(path, dpi=DPI)
    plt.close(figure)
    return path
