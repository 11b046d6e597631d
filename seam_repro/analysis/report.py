"""Reports shaped like the SEAM paper's Table 3 (rank, model, mean ± std, dominance over next),
the AR/ARSD table (Figure 4) and box plots of per-run scores (Figure 3).

Replicates the outputs of upstream ``scripts/evaluation/statistical_analysis.py`` (``ranking_asd.csv``,
box plots) and ``compare_models.py`` (AR, ARSD) with the statistics of ``aso.py``.

Reference models (``--reference paper``) have only a published mean and std. To rank a new model
against them, each reference model is given a *surrogate* set of runs with exactly that mean and
population std (evenly spaced normal quantiles). ASO on surrogates approximates the paper's
comparison; such rows are flagged ``from_summary_stats`` and marked † in the Markdown.

Model order (it decides which side of each ASO pair is computed and breaks ties in the ranking, as
upstream's dict order does): input models in the order given, then reference models in table order.
"""

from __future__ import annotations

import io
import json
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from seam_repro import __version__
from seam_repro.analysis.aggregate import ModelScores, summarize
from seam_repro.analysis.aso import AsoParams, Ranking, aso, deepsig_eps_min, pair_rng, rank_models, stability
from seam_repro.analysis.reference import ReferenceTable
from seam_repro.files import atomic_write_bytes, atomic_write_text, ensure_dir

DATASET_ORDER = ("MultiNews", "OpenASP", "FuseReviews", "MusiQue", "SciCo", "ECB")
"""Column order of the paper's Table 3."""
DISPLAY_NAMES = {"ECB": "ECB+"}
REF_MARK = "†"
PROTOCOL_MARK = "‡"
"""Marks a row whose protocol differs from the reference's (see the notes for the fields)."""


def surrogate_runs(mean: float, std: float, n: int = 10) -> list[float]:
    """n values with exactly this mean and population std, shaped like a normal sample."""
    from scipy.stats import norm

    z = norm.ppf((np.arange(1, n + 1) - 0.5) / n)
    z = (z - z.mean()) / z.std()
    return [float(v) for v in mean + std * z]


@dataclass(frozen=True)
class Entry:
    """One model on one dataset as the report sees it."""

    model: str
    runs: list[float]
    mean: float
    std: float
    from_summary_stats: bool
    extra: dict[str, Any]


def display_names(models: list[ModelScores]) -> list[str]:
    """Display names (``replay --name``) or model ids; the revision is appended only when one label
    comes with several revisions."""
    ids = [m.label for m in models]
    return [m.label + (f"@{m.revision[:12]}" if ids.count(m.label) > 1 else "") for m in models]


def dataset_names(models: list[ModelScores], reference: ReferenceTable | None) -> list[str]:
    """Every dataset column: scored or unscored by any model, or in the reference, Table 3 order first."""
    have = {n for m in models for n in (*m.datasets, *m.unscored)}
    if reference is not None:
        have |= set(reference.datasets)
    names = [n for n in DATASET_ORDER if n in have]
    return names + sorted(have - set(names))


def absent_cells(models: list[ModelScores], reference: ReferenceTable | None, name: str) -> list[dict[str, Any]]:
    """Explicit cells for models with no value on ``name``: "not scored" (with the scorer's reason)
    for input models, "NA" for reference models the paper prints no value for."""
    out = []
    for ms, label in zip(models, display_names(models), strict=True):
        if name in ms.datasets:
            continue
        reason = ms.unscored.get(name) or "no scores for this dataset in the input"
        out.append({"model": label, "cell": "not scored", "reason": reason, "from_summary_stats": False})
    if reference is not None:
        ref_ds = reference.datasets.get(name)
        rows = {r.model: r for r in ref_ds.rows} if ref_ds is not None else {}
        for model in reference.models:
            row = rows.get(model)
            if row is None or row.mean is None or row.std is None:
                note = (row.note if row is not None and row.note else None) or "no value in the reference"
                out.append({"model": model, "cell": "NA", "reason": note, "from_summary_stats": True})
    return out


def protocol_labels(models: list[ModelScores], reference: ReferenceTable | None) -> dict[str, list[str]]:
    """Per input model (display name): protocol fields that differ from the reference's protocol, or,
    without a reference, from the first input's; such rows are labelled in every table."""
    from seam_repro.analysis.diff import reference_protocol
    from seam_repro.manifest.trust import protocol_differences

    if reference is not None:
        base = reference_protocol(reference)
    else:
        first = models[0].extra.get("protocol") if models else None
        base = {k: v for k, v in first.items() if k != "generation"} if isinstance(first, dict) else None
    return {label: protocol_differences(ms.extra.get("protocol"), base)
            for ms, label in zip(models, display_names(models), strict=True)}


def collect_entries(models: list[ModelScores], reference: ReferenceTable | None) -> dict[str, list[Entry]]:
    """Entries per dataset in model order; a model without a value on a dataset has no entry there
    (``absent_cells`` lists it explicitly)."""
    names = dataset_names(models, reference)
    out: dict[str, list[Entry]] = {n: [] for n in names}
    for ms, label in zip(models, display_names(models), strict=True):
        for name, ds in ms.datasets.items():
            s = summarize(ds)
            extra = {"model_id": ms.model_id, "revision": ms.revision, "name": ms.name or None,
                     "source": ms.source, "metric": s.metric,
                     "format_rate": s.format_rate, "format_correlation": s.format_correlation,
                     "corrected": s.corrected, **({"intended": s.intended} if s.intended else {})}
            out[name].append(Entry(label, list(s.runs.values()), s.mean, s.std, False, extra))
    if reference is not None:
        for name in names:
            ref_ds = reference.datasets.get(name)
            if ref_ds is None:
                continue
            by_model = {r.model: r for r in ref_ds.rows}
            for model in reference.models:
                row = by_model.get(model)
                if row is None or row.mean is None or row.std is None:
                    continue
                extra = {"model_id": reference.models[model], "source": reference.path, "paper_rank": row.rank,
                         "paper_dominance_over_next": row.dominance_over_next}
                out[name].append(Entry(model, surrogate_runs(row.mean, row.std), row.mean, row.std, True, extra))
    return out


def build_report(models: list[ModelScores], reference: ReferenceTable | None = None,
                 params: AsoParams | None = None, deepsig: bool = False, command: str = "") -> dict[str, Any]:
    """Everything the Markdown, JSON and figures show, as one JSON-ready dict."""
    params = params or AsoParams()
    entries = collect_entries(models, reference)
    rankings: dict[str, Ranking] = {}
    stats: dict[str, dict[str, tuple[float, float]]] = {}
    datasets: dict[str, Any] = {}
    cross: list[dict[str, Any]] = []
    labels = protocol_labels(models, reference)
    for name, ents in entries.items():
        absent = absent_cells(models, reference, name)
        ref_metric = reference.datasets[name].metric if reference is not None and name in reference.datasets else ""
        if not ents:
            datasets[name] = {"display_name": DISPLAY_NAMES.get(name, name), "metric": ref_metric, "rows": [],
                              "absent": absent, "pairwise": {}, "pairs": []}
            continue
        by = {e.model: e for e in ents}
        ranking = rank_models({e.model: e.runs for e in ents}, name, params)
        rankings[name] = ranking
        stats[name] = {e.model: (e.mean, e.std) for e in ents}
        rows = []
        for pos, model in enumerate(ranking.order):
            e = by[model]
            rows.append({"rank": pos + 1, "model": model, "mean": e.mean, "std": e.std, "n_runs": len(e.runs),
                         "dominance_over_next": ranking.dominance[pos], "from_summary_stats": e.from_summary_stats,
                         "runs": None if e.from_summary_stats else e.runs,
                         "protocol_mismatch": labels.get(model, []), **e.extra})
        metric = next((e.extra["metric"] for e in ents if "metric" in e.extra), ref_metric)
        datasets[name] = {"display_name": DISPLAY_NAMES.get(name, name), "metric": metric, "rows": rows,
                          "absent": absent, "pairwise": ranking.table, "pairs": ranking.pairs}
        if deepsig:
            for a, b in zip(ranking.order, ranking.order[1:], strict=False):
                theirs = deepsig_eps_min(by[a].runs, by[b].runs, params.seed, params.b)
                if theirs is None:
                    cross.append({"available": False, "note": "deepsig is not installed (pip install deepsig)"})
                    break
                ours = aso(by[a].runs, by[b].runs, pair_rng(params.seed, name, a, b), params).eps_min
                cross.append({"available": True, "dataset": name, "a": a, "b": b, "eps_min": ours,
                              "deepsig_eps_min": theirs, "difference": theirs - ours})
    st = stability(rankings, stats)
    notes = ["Scores are on a 0-100 scale; std is the population std over runs (ddof=0).",
             "ASO: upstream ASD.py semantics with per-pair generators derived from the recorded seed."]
    for ms in models:
        for name, reason in sorted(ms.unscored.items()):
            notes.append(f"{ms.label}: {name} not scored ({reason}); left out of every statistic.")
        if ms.extra.get("partial") or (ms.extra.get("coverage") or {}).get("partial"):
            cov = ms.extra.get("coverage") or {}
            notes.append(f"{ms.label}: partial run ({cov.get('scored')} of {cov.get('instances')} instances "
                         "scored); not comparable with full runs.")
    if any(ms.extra.get("seeds_checked") is False for ms in models):
        notes.append("No seeds/ folder was found (set SEAM_REPRO_SEEDS): bundles were checked by their digest only, "
                     "not against the shipped manifests' seeds and prompt digests.")
    for label, differs in labels.items():
        if differs:
            notes.append(f"{PROTOCOL_MARK} {label}: protocol differs from "
                         f"{'the reference' if reference is not None else 'the first input'}: {'; '.join(differs)}.")
    spans = {m: tuple(v) for m, v in st.ranked_in.items()}
    if len(set(spans.values())) > 1:
        notes.append("Average ranks are over different datasets: " + "; ".join(
            f"{m} over {len(v)} ({', '.join(v)})" for m, v in spans.items()) + ".")
    if any(e.from_summary_stats for ents in entries.values() for e in ents):
        notes.append(f"{REF_MARK} reference model known only by its published mean ± std; ranked with surrogate "
                     "runs of exactly that mean and population std, so its ASO values are approximate.")
    return {
        "kind": "seam-repro/report", "kit_version": __version__, "command": command, "aso": params.as_dict(),
        "manifest_digest": models[0].manifest_digest if models else None,
        "prompt_digest": models[0].prompt_digest if models else None,
        "reference": reference.source if reference else None,
        "model_order": list(dict.fromkeys(e.model for ents in entries.values() for e in ents)),
        "datasets": datasets,
        "protocol_mismatch": labels,
        "stability": {"average_rank": st.average_rank, "ranked_in": st.ranked_in, "arsd": st.arsd,
                      "arsd_excluded": st.arsd_excluded, "arsd_by_dataset": st.arsd_by_dataset,
                      "rule": "AR over the datasets a model is ranked on; ARSD = mean of std/mean*100 over "
                              "datasets with rounded mean > 0 (upstream compare_models.py)"},
        "deepsig_crosscheck": cross if deepsig else None,
        "notes": notes,
    }


def _fmt(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029]")


def md_cell(value: object) -> str:
    """``value`` as one Markdown table cell or list item: control characters (a line break starts a
    new row) shown as escapes, table pipes escaped. Names are checked at input
    (``store.display_name_problem``); this keeps report.md whole whatever a bundle or run.json holds."""
    return _visible(value).replace("|", "\\|")


def _visible(value: object) -> str:
    """``value`` on one line: each control character written as its escape (``\\n``)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


def render_markdown(rep: dict[str, Any]) -> str:
    """Table 3 per dataset, then AR/ARSD, then output-format rates. Every name and reason that came
    from an input goes through :func:`md_cell`."""
    c_ = md_cell
    out = ["# seam-repro results", "", f"Manifest digest: `{rep['manifest_digest']}`  ",
           f"ASO: dp={rep['aso']['dp']}, N=M={rep['aso']['N']}, B={rep['aso']['B']}, alpha={rep['aso']['alpha']}, "
           f"seed={rep['aso']['seed']}  ", f"Generated by seam-repro {rep['kit_version']}"
           + (f": `{rep['command']}`" if rep["command"] else ""), ""]
    for ds in rep["datasets"].values():
        out += [f"## {c_(ds['display_name'])}" + (f" ({c_(ds['metric'])})" if ds["metric"] else ""), "",
                "| rank | model | mean ± std | dominance over next |", "|---:|---|---:|---:|"]
        for r in ds["rows"]:
            mark = f" {REF_MARK}" if r["from_summary_stats"] else ""
            mark += f" {PROTOCOL_MARK}" if r.get("protocol_mismatch") else ""
            out.append(f"| {r['rank']} | {c_(r['model'])}{mark} | {r['mean']:.1f} ± {r['std']:.1f} | "
                       f"{_fmt(r['dominance_over_next'], 2)} |")
        for a in ds.get("absent", []):
            mark = f" {REF_MARK}" if a["from_summary_stats"] else ""
            out.append(f"| – | {c_(a['model'])}{mark} | {c_(a['cell'])} ({c_(a['reason'])}) | – |")
        intended = [r for r in ds["rows"] if r.get("intended")]
        if intended:  # coreference under the upstream profile: the score above is as published
            out += ["", "Scores above: as published (the part of the unflushed gold file perl read). As intended "
                    "(whole gold file): " + "; ".join(f"{c_(r['model'])} {_fmt(r['intended']['mean'])} ± "
                                                     f"{_fmt(r['intended']['std'])}" for r in intended) + "."]
        out.append("")
    st = rep["stability"]
    out += ["## Average rank (AR) and ARSD", "",
            "| model | AR ↓ | ARSD ↓ | AR over (datasets) | left out of ARSD (mean 0) |",
            "|---|---:|---:|---|---|"]
    for m in sorted(st["average_rank"], key=lambda k: st["average_rank"][k]):
        over = st["ranked_in"][m]
        out.append(f"| {c_(m)} | {st['average_rank'][m]:.2f} | {_fmt(st['arsd'][m], 1)} | "
                   f"{len(over)}: {c_(', '.join(over))} | {c_(', '.join(st['arsd_excluded'].get(m, [])) or '–')} |")
    out += ["", "| dataset | ARSD across models |", "|---|---:|"]
    out += [f"| {c_(d)} | {_fmt(v, 1)} |" for d, v in st["arsd_by_dataset"].items()]
    fmt_rows = [(d, r) for d, ds in rep["datasets"].items() for r in ds["rows"] if not r["from_summary_stats"]]
    if fmt_rows:
        out += ["", "## Output format", "", "| dataset | model | valid-format rate | Pearson r with score |",
                "|---|---|---:|---:|"]
        for d, r in fmt_rows:
            c = r["format_correlation"]
            corr = f"{c['r']:.3f} ({c['level']}, n={c['n']})" if c["r"] is not None else f"– ({c['reason']})"
            out.append(f"| {c_(d)} | {c_(r['model'])} | {_fmt(r['format_rate'], 3)} | {c_(corr)} |")
    if rep.get("deepsig_crosscheck"):
        out += ["", "## deepsig cross-check (adjacent pairs)", "", "| dataset | a | b | eps_min | deepsig | diff |",
                "|---|---|---|---:|---:|---:|"]
        for c in rep["deepsig_crosscheck"]:
            if c.get("available"):
                out.append(f"| {c_(c['dataset'])} | {c_(c['a'])} | {c_(c['b'])} | {c['eps_min']:.3f} | {c['deepsig_eps_min']:.3f} | "
                           f"{c['difference']:+.3f} |")
            else:
                out.append(f"| – | – | – | – | – | {c_(c['note'])} |")
    out += ["", "Notes:", ""] + [f"- {_visible(n)}" for n in rep["notes"]]
    return "\n".join(out) + "\n"


def write_report(rep: dict[str, Any], out_dir: Path) -> list[Path]:
    """report.json, report.md and the two figures; returns the written paths."""
    from seam_repro.analysis.plots import plot_ar_arsd, plot_boxes

    ensure_dir(out_dir)
    paths = [out_dir / "report.json", out_dir / "report.md", out_dir / "box_plots.png", out_dir / "ar_arsd.png"]
    atomic_write_text(paths[0], json.dumps(rep, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    atomic_write_text(paths[1], render_markdown(rep))
    for plot, path in ((plot_boxes, paths[2]), (plot_ar_arsd, paths[3])):
        buf = io.BytesIO()  # rendered in memory, then written whole: never a torn PNG
        plot(rep, buf)
        atomic_write_bytes(path, buf.getvalue())
    return paths
