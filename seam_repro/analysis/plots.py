"""PNG figures of a report: per-run box plots per dataset (the paper's Figure 3, upstream
``statistical_analysis.py`` box plots) and AR vs ARSD (Figure 4, upstream ``compare_models.py``
bar charts, drawn here as one scatter so both axes are read together).

matplotlib is imported inside the functions with the Agg backend, so importing the kit stays cheap
and no display is needed.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def _colors(models: list[str]) -> dict[str, Any]:
    """One stable colour per model across all panels."""
    import matplotlib

    cmap = matplotlib.colormaps["tab10" if len(models) <= 10 else "tab20"]
    return {m: cmap(i % cmap.N) for i, m in enumerate(models)}


def plot_boxes(rep: dict[str, Any], out: Path) -> None:
    """One panel per dataset; rows in rank order (best on top). Models known only by mean ± std
    are drawn as a diamond with a ±1 std bar instead of a box."""
    plt = _pyplot()
    datasets = rep["datasets"]
    n = max(len(datasets), 1)
    cols = min(3, n)
    nrows = math.ceil(n / cols)
    max_models = max((len(d["rows"]) + len(d.get("absent", [])) for d in datasets.values()), default=1)
    fig, axes = plt.subplots(nrows, cols, figsize=(5.2 * cols, 0.42 * max_models * nrows + 1.4 * nrows), squeeze=False)
    colors = _colors(rep["model_order"])
    for ax, ds in zip(axes.flat, datasets.values(), strict=False):  # spare axes are hidden below
        absent = list(reversed(ds.get("absent", [])))
        rows = list(reversed(ds["rows"]))
        labels = [a["model"] + (" †" if a["from_summary_stats"] else "") for a in absent]
        labels += [r["model"] + (" †" if r["from_summary_stats"] else "") + (" ‡" if r.get("protocol_mismatch") else "")
                   for r in rows]
        for y, a in enumerate(absent, start=1):  # explicit cells, never silently dropped
            ax.text(0.02, y, f"{a['cell']}: {a['reason']}"[:60], transform=ax.get_yaxis_transform(), va="center",
                    fontsize=8, color="dimgray", style="italic")
        for y, r in enumerate(rows, start=len(absent) + 1):
            c = colors[r["model"]]
            if r["from_summary_stats"]:
                ax.errorbar([r["mean"]], [y], xerr=[[r["std"]], [r["std"]]], fmt="D", color=c, mec="black",
                            ecolor="dimgray", capsize=3, ms=6)
            else:
                bp = ax.boxplot([r["runs"]], positions=[y], orientation="horizontal", widths=0.6,
                                patch_artist=True, manage_ticks=False)
                bp["boxes"][0].set_facecolor(c)
                bp["medians"][0].set_color("black")
        ax.set_yticks(range(1, len(labels) + 1), [_short(lbl) for lbl in labels], fontsize=9)
        ax.set_ylim(0.4, max(len(labels), 1) + 0.6)
        metric = ds["metric"] or "score"
        ax.set_xlabel(f"{ds['display_name']} — {metric}", fontsize=10)
        ax.grid(axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    has_ref = any(r["from_summary_stats"] for d in datasets.values() for r in d["rows"])
    fig.suptitle("Per-run scores" + (" (boxes: runs; † diamonds: published mean ± std)" if has_ref else ""),
                 fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)


def _short(name: str, limit: int = 28) -> str:
    """Keep y labels readable: drop the org prefix and trim long ids."""
    base = name.split("/", 1)[-1]
    return base if len(base) <= limit else base[: limit - 1] + "…"


def _place_labels(fig: Any, ax: Any, pts: list[tuple[float, float, str]]) -> None:
    """Greedy label placement: try four offsets per point, keep the first that overlaps no label
    or marker placed so far (boxes estimated from the text length, in display pixels)."""
    fig.canvas.draw()
    to_px = ax.transData.transform
    scale = fig.dpi / 72.0
    bx0, by0, bx1, by1 = ax.get_window_extent().extents
    taken: list[tuple[float, float, float, float]] = []
    for x, y in ((to_px(p[:2])) for p in pts):
        taken.append((x - 6 * scale, y - 6 * scale, x + 6 * scale, y + 6 * scale))
    for ar, arsd, label in sorted(pts, key=lambda p: (p[0], -p[1])):
        px, py = to_px((ar, arsd))
        w, h = 5.6 * len(label) * scale, 11 * scale
        best: tuple[float, tuple[float, float, str, tuple[float, float, float, float]]] | None = None
        for dx, dy, ha in ((6, 4, "left"), (6, -13, "left"), (-6, 4, "right"), (-6, -13, "right"),
                           (6, 14, "left"), (-6, 14, "right"), (6, -24, "left"), (-6, -24, "right")):
            x0 = px + dx * scale - (w if ha == "right" else 0)
            y0 = py + dy * scale
            box = (x0, y0, x0 + w, y0 + h)
            outside = 1e9 if not (bx0 <= box[0] and box[2] <= bx1 and by0 <= box[1] and box[3] <= by1) else 0.0
            overlap = sum(max(0.0, min(box[2], t[2]) - max(box[0], t[0])) * max(0.0, min(box[3], t[3]) - max(box[1], t[1]))
                          for t in taken)
            if best is None or outside + overlap < best[0]:
                best = (outside + overlap, (dx, dy, ha, box))
            if outside + overlap == 0:
                break
        assert best is not None
        choice = best[1]
        dx, dy, ha, box = choice
        taken.append(box)
        ax.annotate(label, (ar, arsd), textcoords="offset points", xytext=(dx, dy), fontsize=9, ha=ha)


def plot_ar_arsd(rep: dict[str, Any], out: Path) -> None:
    """AR (x, lower is better) against ARSD (y, lower is more stable), one labelled point per model."""
    plt = _pyplot()
    st = rep["stability"]
    colors = _colors(rep["model_order"])
    fig, ax = plt.subplots(figsize=(7.5, 5.2))
    skipped = []
    pts = []
    for m, ar in st["average_rank"].items():
        arsd = st["arsd"].get(m)
        ref = any(r["model"] == m and r["from_summary_stats"] for d in rep["datasets"].values() for r in d["rows"])
        n_over = len(st.get("ranked_in", {}).get(m, []))
        mismatch = bool((rep.get("protocol_mismatch") or {}).get(m))
        label = _short(m) + (" †" if ref else "") + (" ‡" if mismatch else "") + (f" [{n_over} ds]" if n_over else "")
        if arsd is None:  # still plotted: on the x axis, hollow, labelled
            skipped.append(m)
            ax.scatter([ar], [0.0], s=70, facecolors="none", edgecolors=colors[m], marker="D" if ref else "o",
                       linewidths=1.5, zorder=3)
            pts.append((ar, 0.0, label + " (no ARSD)"))
            continue
        ax.scatter([ar], [arsd], s=70, color=colors[m], edgecolors="black", marker="D" if ref else "o", zorder=3)
        pts.append((ar, arsd, label))
    ax.set_xlabel("Average rank (AR ↓)")
    ax.set_ylabel("Average relative std, % (ARSD ↓)")
    if pts:
        xs = [p[0] for p in pts]
        ys = [p[1] for p in pts]
        ax.set_xlim(min(xs) - 0.5, max(xs) + 1.2)
        ax.set_ylim(0, max(ys) * 1.15 + 0.5)
    _place_labels(fig, ax, pts)
    ax.grid(alpha=0.3)
    title = "AR vs ARSD ([n ds] = datasets the AR is over)"
    if skipped:
        title += f"\n(hollow, on the x axis: no ARSD, every mean 0: {', '.join(_short(s) for s in skipped)})"
    ax.set_title(title, fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=120)
    plt.close(fig)
