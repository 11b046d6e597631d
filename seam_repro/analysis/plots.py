"""PNG figures of a report, drawn as the paper draws them: per-run box plots per dataset (Figure 3,
upstream ``statistical_analysis.py``) and three bar charts (Figure 4, upstream ``compare_models.py``):
average rank per model, ARSD per model and ARSD per dataset.

Every model keeps one colour in every figure and every report: the paper's models take the first
colours of a fixed palette in the shipped reference's order, any other model the palette colour
its name hashes to, so the colour never depends on which models a report holds or their order.
Rows whose protocol differs (‡) are drawn apart, hatched, below the comparable ones.

matplotlib is imported inside the functions with the Agg backend, so importing the kit stays cheap
and no display is needed. ``draw_*`` return the figure (tests measure its text against its edges);
``save_png`` writes it.
"""

from __future__ import annotations

import hashlib
import io
import math
import textwrap
from functools import lru_cache
from pathlib import Path
from typing import Any

from seam_repro.files.atomic import atomic_write_bytes

PAPER_PALETTE = ("#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2")
"""tab10's first seven, one per paper model (Table 4 has seven)."""
OTHER_PALETTE = ("#17becf", "#bcbd22", "#7f7f7f", "#000000", "#393b79", "#5254a3", "#6b6ecf", "#637939",
                 "#8ca252", "#b5cf6b", "#8c6d31", "#bd9e39", "#e7ba52", "#843c39", "#ad494a", "#d6616b",
                 "#7b4173", "#a55194", "#ce6dbd")
"""Colours for every other model (tab20b's darker three of each hue, tab10's last three, black), none
a paper model's; two such models in one report share a colour with probability 1/19, and every bar
and box is labelled with its model anyway."""
NEUTRAL = "#9e9e9e"
APART_HATCH = "///"


def _pyplot() -> Any:
    import matplotlib

    matplotlib.use("Agg")
    # every text in these figures is literal: a display name such as "$x^$" or "a_$b" is user text, and
    # mathtext would parse it (exit 70 on an unbalanced one); no figure here uses math
    matplotlib.rcParams["text.parse_math"] = False
    matplotlib.rcParams["text.usetex"] = False
    import matplotlib.pyplot as plt

    return plt


@lru_cache(maxsize=1)
def _paper() -> Any:
    from seam_repro.analysis.reference import load_reference

    return load_reference("paper")


def model_color(name: str, model_id: str = "") -> str:
    """A model's colour in every figure (see the module docstring); a run of a paper model's Hugging
    Face id takes that model's colour."""
    paper = _paper()
    names = list(paper.models)
    key = name if name in paper.models else (paper.name_for_hf_id(model_id) if model_id else None)
    if key is not None and names.index(key) < len(PAPER_PALETTE):
        return PAPER_PALETTE[names.index(key)]
    digest = hashlib.sha256(name.encode("utf-8")).digest()
    return OTHER_PALETTE[int.from_bytes(digest[:4], "big") % len(OTHER_PALETTE)]


def _label(model: str, ref: bool, apart: bool, limit: int = 28) -> str:
    """A readable y label: the org prefix dropped, a long id trimmed, then the row's marks."""
    base = model.split("/", 1)[-1]
    short = base if len(base) <= limit else base[: limit - 1] + "…"
    return short + (" †" if ref else "") + (" ‡" if apart else "")


def _titled(fig: Any, title: str, notes: list[str], title_in: float) -> Any:
    """Title at the top left, wrapped notes at the bottom, the panels laid out between them."""
    fig.suptitle(title, fontsize=12, x=0.01, ha="left")
    chars = max(40, int(fig.get_figwidth() * 72 / 5.6))  # ~5.6 pt per character at 8 pt
    text = "\n".join(textwrap.fill(ln, chars) for ln in notes)
    bottom = 0.0
    if text:
        bottom = ((text.count("\n") + 1) * 11 + 8) / 72 / fig.get_figheight()
        fig.text(0.01, 0.005, text, fontsize=8, va="bottom", ha="left", color="dimgray")
    fig.tight_layout(rect=(0, bottom, 1, 1 - title_in / fig.get_figheight()))
    return fig


def save_png(fig: Any, path: Path) -> None:
    """``fig`` as a PNG at ``path``: rendered in memory, then written whole (never a torn PNG)."""
    buf = io.BytesIO()
    fig.savefig(buf, dpi=110)
    _pyplot().close(fig)
    atomic_write_bytes(path, buf.getvalue())


def draw_boxes(rep: dict[str, Any]) -> Any:
    """Figure 3: one panel per dataset; comparable rows in rank order (best on top), ‡ rows below a
    dashed line, explicit cells (not scored, NA) at the bottom. Models known only by mean ± std are
    a diamond with a ±1 std bar."""
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    plt = _pyplot()
    datasets = rep["datasets"]
    n = max(len(datasets), 1)
    cols = min(3, n)
    nrows = math.ceil(n / cols)
    max_rows = max((len(d["rows"]) + len(d.get("apart", [])) + len(d.get("absent", []))
                    for d in datasets.values()), default=1)
    panel_h = 0.36 * max_rows + 1.1
    has_ref = any(r["from_summary_stats"] for d in datasets.values() for r in d["rows"])
    has_apart = any(d.get("apart") for d in datasets.values())
    has_absent = any(d.get("absent") for d in datasets.values())
    marks = [  # (shown, note, legend handle) for each kind of row a panel may hold
        (has_ref, "† a paper model: diamond = published mean, bar = ± 1 std (the paper gives no per-run scores).",
         Line2D([], [], marker="D", color="dimgray", mec="black", ls="-", label="† paper mean ± std")),
        (has_apart, "‡ protocol differs from the reference: drawn hatched below the dashed line, not ranked.",
         Patch(facecolor="white", edgecolor="black", hatch=APART_HATCH, label="‡ protocol differs")),
        (has_absent, "Text rows: no value (not scored, or NA in the paper); report.md gives the reason.", None)]
    notes = ["Boxes: the model's per-run scores (quartiles, whiskers 1.5 IQR); rows in rank order, best on top."]
    notes += [note for shown, note, _ in marks if shown]
    foot_h = (len(notes) * 1.4 + 1.5) * 11 / 72
    fig = plt.figure(figsize=(5.4 * cols, panel_h * nrows + 0.6 + foot_h))
    axes = fig.subplots(nrows, cols, squeeze=False)
    for ax, ds in zip(axes.flat, datasets.values(), strict=False):  # spare axes are hidden below
        stack = [(r, kind) for kind in ("absent", "apart", "rows") for r in reversed(ds.get(kind, []))]
        labels = [_label(r["model"], r["from_summary_stats"] and kind != "apart", kind == "apart") for r, kind in stack]
        for y, (r, kind) in enumerate(stack, start=1):
            if kind == "absent":  # explicit cells, never silently dropped
                ax.text(0.02, y, "NA in the paper" if r["cell"] == "NA" else r["cell"],
                        transform=ax.get_yaxis_transform(), va="center", fontsize=8, color="dimgray", style="italic")
                continue
            c = model_color(r["model"], str(r.get("model_id") or ""))
            if r["from_summary_stats"]:
                ax.errorbar([r["mean"]], [y], xerr=[[r["std"]], [r["std"]]], fmt="D", color=c, mec="black",
                            ecolor="dimgray", capsize=3, ms=6)
            else:
                bp = ax.boxplot([r["runs"]], positions=[y], orientation="horizontal", widths=0.6,
                                patch_artist=True, manage_ticks=False)
                bp["boxes"][0].set_facecolor(c)
                bp["boxes"][0].set_hatch(APART_HATCH if kind == "apart" else "")
                bp["medians"][0].set_color("black")
        if ds.get("apart") and ds["rows"]:
            ax.axhline(len(ds.get("absent", [])) + len(ds["apart"]) + 0.5, color="gray", ls="--", lw=0.8)
        ax.set_yticks(range(1, len(labels) + 1), labels, fontsize=9)
        ax.set_ylim(0.4, max(len(labels), 1) + 0.6)
        ax.set_title(ds["display_name"], fontsize=11)
        ax.set_xlabel(ds["metric"] or "score", fontsize=9)
        ax.grid(axis="x", alpha=0.3)
    for ax in list(axes.flat)[len(datasets):]:
        ax.set_visible(False)
    handles = [Patch(facecolor=NEUTRAL, edgecolor="black", label="per-run scores")]
    handles += [h for shown, _, h in marks if shown and h is not None]
    fig.legend(handles=handles, loc="upper right", fontsize=8, ncols=len(handles), frameon=False)
    return _titled(fig, "Per-run scores per dataset (Figure 3)", notes, 0.45)


def _bars(ax: Any, labels: list[str], values: list[float | None], colors: list[str], hatches: list[str],
          xlabel: str, nd: int, split: int | None = None) -> None:
    """Horizontal bars, first label on top, each with its value; a value past 2.5x the next largest
    is clipped at the axis edge and printed, so one outlier does not flatten every other bar."""
    ys = list(range(len(labels)))[::-1]
    known = sorted((v for v in values if v is not None), reverse=True)
    limit = known[1] * 1.6 if len(known) >= 2 and known[1] > 0 and known[0] > 2.5 * known[1] else None
    for y, v, c, h in zip(ys, values, colors, hatches, strict=True):
        if v is None:
            ax.text(0, y, " none (every mean 0)", va="center", fontsize=8, color="dimgray", style="italic")
            continue
        shown = min(v, limit) if limit is not None else v
        ax.barh(y, shown, color=c, hatch=h, edgecolor="black", linewidth=0.5)
        ax.text(shown, y, f" {v:.{nd}f}" + (" ▸ (axis cut)" if shown < v else ""), va="center", fontsize=8)
    if split is not None and 0 < split < len(labels):  # comparable bars above, ‡ bars below
        ax.axhline(len(labels) - split - 0.5, color="gray", ls="--", lw=0.8)
    ax.set_yticks(ys, labels, fontsize=9)
    top = limit if limit is not None else (known[0] if known else 1.0)
    ax.set_xlim(0, top * 1.3 if top > 0 else 1.0)
    ax.set_xlabel(xlabel, fontsize=9)
    ax.grid(axis="x", alpha=0.3)


def draw_ar_arsd(rep: dict[str, Any]) -> Any:
    """Figure 4 as the paper draws it: AR per model, ARSD per model (both in AR order, best on top,
    ‡ models hatched below) and ARSD per dataset (Table 3 order)."""
    plt = _pyplot()
    st = rep["stability"]
    ref = {r["model"] for d in rep["datasets"].values() for r in d["rows"] if r["from_summary_stats"]}
    main = sorted(st["average_rank"], key=lambda m: (st["average_rank"][m], m))
    apart = st.get("apart") or {}
    order = main + sorted(apart, key=lambda m: (apart[m]["average_rank"], m))
    ar = [st["average_rank"][m] for m in main] + [apart[m]["average_rank"] for m in order[len(main):]]
    arsd = [st["arsd"].get(m) for m in main] + [apart[m]["arsd"] for m in order[len(main):]]
    labels = [_label(m, m in ref, m in apart) for m in order]
    ids = {r["model"]: str(r.get("model_id") or "") for d in rep["datasets"].values()
           for r in (*d["rows"], *d.get("apart", []))}
    colors = [model_color(m, ids.get(m, "")) for m in order]
    hatches = ["" if m not in apart else APART_HATCH for m in order]
    by_ds = st.get("arsd_by_dataset") or {}
    ds_names = [rep["datasets"][d]["display_name"] if d in rep["datasets"] else d for d in by_ds]
    notes = ["AR: a model's rank averaged over the datasets it is ranked on (lower = better). ARSD: std/mean x 100 "
             "averaged over datasets (lower = more robust to the resampled prompt choices); per dataset, over "
             "the models."]
    if ref:
        notes.append("† a paper model (ranked from its published mean ± std).")
    if apart:
        notes.append("‡ protocol differs from the reference: hatched, below the dashed line; its AR is the rank it "
                     "would take, not comparable, and it is left out of the per-dataset ARSD.")
    n = max(len(order), len(by_ds), 1)
    foot_h = (len(notes) * 2 + 1.5) * 11 / 72
    fig = plt.figure(figsize=(15.0, 0.38 * n + 1.6 + foot_h))
    ax_ar, ax_m, ax_d = fig.subplots(1, 3)
    _bars(ax_ar, labels, ar, colors, hatches, "Average rank (AR ↓) across datasets", 2, len(main))
    _bars(ax_m, labels, arsd, colors, hatches, "ARSD ↓ (%) across datasets, per model", 1, len(main))
    _bars(ax_d, ds_names, list(by_ds.values()), [NEUTRAL] * len(by_ds), [""] * len(by_ds),
          "ARSD ↓ (%) across models, per dataset", 1)
    return _titled(fig, "Average rank and ARSD (Figure 4)", notes, 0.35)
