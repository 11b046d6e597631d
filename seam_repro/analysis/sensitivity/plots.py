"""The report's two figures: stacked variance shares and ranking agreement against runs."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seam_repro.analysis.sensitivity.design import INSTANCE, RESIDUAL
from seam_repro.analysis.sensitivity.markdown import design_name


def plot_shares(result: Mapping[str, Any], out: Any) -> None:
    """Stacked horizontal bars: one bar per (design, dataset, model), one colour per component."""
    from seam_repro.analysis.plots import _pyplot

    plt = _pyplot()
    bars = [(f"{design_name(e['design'])} | {ds} | {m}", cell["share"])
            for e in result["designs"] for ds, cells in e["attribution"].items()
            for m, cell in cells.items() if "share" in cell]
    comps = sorted({c for _, s in bars for c in s}, key=lambda c: (c == RESIDUAL, c != INSTANCE, c))
    fig, ax = plt.subplots(figsize=(11, 1.6 + 0.45 * max(len(bars), 1)))
    cmap = plt.get_cmap("tab10")
    for y, (_, share) in enumerate(bars):
        left = 0.0
        for k, c in enumerate(comps):
            ax.barh(y, share.get(c, 0.0), left=left, color=cmap(k % 10), label=c if y == 0 else None)
            left += share.get(c, 0.0)
    ax.set_yticks(range(len(bars)), [b[0] for b in bars], fontsize=8)
    ax.set_xlim(0, 1)
    ax.set_xlabel("share of score variance")
    ax.invert_yaxis()
    if bars:
        ax.legend(fontsize=8, loc="upper left", bbox_to_anchor=(1.01, 1))
    else:
        ax.text(0.5, 0.5, "no per-instance scores to attribute", ha="center", transform=ax.transAxes)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def plot_agreement(result: Mapping[str, Any], out: Any) -> None:
    """Mean Kendall tau with the all-runs ranking vs number of runs, one line per (design, dataset)."""
    from seam_repro.analysis.plots import _pyplot

    plt = _pyplot()
    fig, ax = plt.subplots(figsize=(7, 4.5))
    drawn = 0
    for e in result["designs"]:
        for ds, rk in e["ranking"].items():
            if "agreement" in rk:
                pts = rk["agreement"]
                ax.plot([p["runs"] for p in pts], [p["kendall_tau"] for p in pts], marker="o",
                        lw=2.5 if ds == "all" else 1, label=f"{ds} ({design_name(e['design'])})")
                drawn += 1
    if drawn:
        ax.legend(fontsize=7)
    else:
        ax.text(0.5, 0.5, "ranking stability needs at least two models", ha="center", transform=ax.transAxes)
    ax.set_xlabel("runs")
    ax.set_ylabel("Kendall tau with the ranking by all runs")
    ax.set_ylim(-1.05, 1.05)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
