"""Reports shaped like the SEAM paper's Table 3 (rank, model, mean ± std, dominance over next),
the AR/ARSD table (Figure 4) and box plots of per-run scores (Figure 3): upstream's
``statistical_analysis.py`` and ``compare_models.py`` outputs, with the statistics of ``aso.py``.

Reference models (``--reference paper``) have only a published mean and std. To rank a new model
against them, each reference model is given a *surrogate* set of runs with exactly that mean and
population std (evenly spaced normal quantiles). ASO on surrogates approximates the paper's
comparison; such rows are flagged ``from_summary_stats`` and marked † in the Markdown. Their rows
still print the paper's own rank and dominance wherever the paper's neighbour is theirs; a value
that had to be recomputed from surrogates is marked ≈ (``dominance_source``).

Rows whose protocol differs from the reference's (‡) are not comparable: they are ranked apart,
with the rank they would take in a column of their own, and stay out of the others' AR and ARSD.

Model order (it decides which side of each ASO pair is computed and breaks ties in the ranking, as
upstream's dict order does): input models in the order given, then reference models in table order.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import numpy as np

from seam_repro import __version__
from seam_repro.analysis.aggregate import ModelScores, summarize
from seam_repro.analysis.aso import AsoParams, Ranking, deepsig_eps_min, pair_aso, rank_models, stability
from seam_repro.analysis.diff import brief_reason, reference_protocol, run_hint
from seam_repro.analysis.reference import ReferenceRow, ReferenceTable
from seam_repro.files.atomic import atomic_write_text, ensure_dir

DATASET_ORDER = ("MultiNews", "OpenASP", "FuseReviews", "MusiQue", "SciCo", "ECB")
"""Column order of the paper's Table 3."""
DISPLAY_NAMES = {"ECB": "ECB+"}
REF_MARK = "†"
PROTOCOL_MARK = "‡"
"""Marks a row whose protocol differs from the reference's (see the notes for the fields)."""
RECOMPUTED_MARK = "≈"
"""Marks a dominance value computed here against surrogate runs (never the paper's own value)."""
DOMINANCE_HEADER = "dominance over next (1 − ASO ε_min)"
DOMINANCE_NOTE = ("Dominance over next = 1 − ε_min, where ε_min is the Almost Stochastic Order violation ratio "
                  "(Dror et al. 2019) for \"this model's runs score higher than the next-ranked model's\": "
                  "ε_min 0 = this model stochastically dominates the next, so 1.00 = dominates, "
                  "0.50 = no order between the two.")
"""The paper's '↓' column, explained once (Table 3 of the paper does not say which way it reads)."""


def surrogate_runs(mean: float, std: float, n: int = 10) -> list[float]:
    """n values with exactly this mean and population std, shaped like a normal sample."""
    from scipy.special import ndtri  # norm.ppf's own function; scipy.stats takes a second to import

    z = ndtri((np.arange(1, n + 1) - 0.5) / n)
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


def labelled(models: list[ModelScores]) -> list[tuple[ModelScores, str]]:
    """Each model with its display name (``replay --name``) or model id; the revision is appended
    only when one label comes with several revisions."""
    ids = [m.label for m in models]
    return [(m, m.label + (f"@{m.revision[:12]}" if ids.count(m.label) > 1 else "")) for m in models]


def absent_cells(models: list[ModelScores], reference: ReferenceTable | None, name: str) -> list[dict[str, Any]]:
    """Explicit cells for models with no value on ``name``: "not scored" for input models (the scorer's
    reason is said once, in the notes), "NA" for reference models the paper prints no value for."""
    out = [{"model": label, "cell": "not scored",
            "reason": "see notes" if name in ms.unscored else "no scores for this dataset in the input",
            "from_summary_stats": False} for ms, label in labelled(models) if name not in ms.datasets]
    for model, row in _reference_rows(reference, name).items():
        if row is None or row.mean is None or row.std is None:
            note = (row.note if row is not None else None) or "no value in the reference"
            out.append({"model": model, "cell": "NA", "reason": note, "from_summary_stats": True})
    return out


def _reference_rows(reference: ReferenceTable | None, name: str) -> dict[str, ReferenceRow | None]:
    """Every reference model's row on dataset ``name``, in table order (None where it has none)."""
    if reference is None:
        return {}
    ref_ds = reference.datasets.get(name)
    rows = {r.model: r for r in ref_ds.rows} if ref_ds is not None else {}
    return {model: rows.get(model) for model in reference.models}


def protocol_labels(models: list[ModelScores], reference: ReferenceTable | None) -> dict[str, list[str]]:
    """Per input model (display name): protocol fields that differ from the reference's protocol, or,
    without a reference, from the first input's; such rows are labelled in every table."""
    from seam_repro.manifest.trust import protocol_differences

    if reference is not None:
        base = reference_protocol(reference)
    else:
        first = models[0].extra.get("protocol") if models else None
        base = {k: v for k, v in first.items() if k != "generation"} if isinstance(first, dict) else None
    return {label: protocol_differences(ms.extra.get("protocol"), base) for ms, label in labelled(models)}


def collect_entries(models: list[ModelScores], reference: ReferenceTable | None) -> dict[str, list[Entry]]:
    """Entries per dataset in model order; a model without a value on a dataset has no entry there
    (``absent_cells`` lists it explicitly). Every dataset scored or unscored by any model or in the
    reference has a key, in Table 3 order first."""
    have = {n for m in models for n in (*m.datasets, *m.unscored)}
    have |= set(reference.datasets) if reference is not None else set()
    names = [n for n in DATASET_ORDER if n in have]
    out: dict[str, list[Entry]] = {n: [] for n in names + sorted(have - set(names))}
    for ms, label in labelled(models):
        for name, ds in ms.datasets.items():
            s = summarize(ds)
            extra = {"model_id": ms.model_id, "revision": ms.revision, "name": ms.name or None,
                     "source": ms.source, "metric": s.metric,
                     "format_rate": s.format_rate, "format_correlation": s.format_correlation,
                     "corrected": s.corrected, **({"intended": s.intended} if s.intended else {}),
                     **({"missing_runs": {str(r): why for r, why in s.missing_runs.items()}} if s.missing_runs else {})}
            out[name].append(Entry(label, list(s.runs.values()), s.mean, s.std, False, extra))
    for name in out if reference is not None else ():
        for model, row in _reference_rows(reference, name).items():
            if row is not None and row.mean is not None and row.std is not None:
                extra = {"model_id": reference.models[model], "source": reference.path, "paper_rank": row.rank,
                         "paper_dominance_over_next": row.dominance_over_next}
                out[name].append(Entry(model, surrogate_runs(row.mean, row.std), row.mean, row.std, True, extra))
    return out


def _dominance_cells(rows: list[dict[str, Any]], computed: list[float | None]) -> None:
    """Set each row's ``dominance_over_next`` and where it comes from (``dominance_source``).

    A paper row followed by the model the paper ranks next gets the paper's printed value
    (``paper``): recomputing it from surrogate runs differs from the paper in 8 of its 35 cells. Any
    other value is computed here: ``surrogate`` when either side is known only by mean ± std (an
    approximation, marked in every table), ``runs`` when both sides have real runs."""
    for i, row in enumerate(rows):
        nxt = rows[i + 1] if i + 1 < len(rows) else None
        row["dominance_recomputed"] = computed[i]
        if nxt is None:
            row["dominance_over_next"], row["dominance_source"] = None, None
        elif (row["from_summary_stats"] and nxt["from_summary_stats"] and row.get("paper_rank") is not None
              and nxt.get("paper_rank") == row["paper_rank"] + 1):
            row["dominance_over_next"], row["dominance_source"] = row["paper_dominance_over_next"], "paper"
        else:
            row["dominance_over_next"] = computed[i]
            row["dominance_source"] = "surrogate" if row["from_summary_stats"] or nxt["from_summary_stats"] else "runs"


def _paper_order(ranking: Ranking, by: dict[str, Entry]) -> Ranking:
    """The paper's own order when every ranked model is a paper model: its rows then show the
    paper's ranks whatever the surrogate runs would give."""
    ranks = [by[m].extra.get("paper_rank") for m in ranking.order]
    if not all(by[m].from_summary_stats for m in ranking.order) or any(r is None for r in ranks):
        return ranking
    order = sorted(ranking.order, key=lambda m: by[m].extra["paper_rank"])
    dom: list[float | None] = [round(1 - ranking.table[a][b], 2) for a, b in zip(order, order[1:], strict=False)]
    return replace(ranking, order=order, dominance=[*dom, None] if order else [])


def _dataset_section(name: str, ents: list[Entry], labels: dict[str, list[str]], params: AsoParams,
                     ) -> tuple[dict[str, Any], Ranking | None, Ranking | None]:
    """One dataset's rows: comparable models ranked with dominance, ‡ rows apart with the rank they
    would take; returns the section, the comparable ranking and the ranking over every model."""
    comparable = [e for e in ents if not labels.get(e.model)]
    apart = [e for e in ents if labels.get(e.model)]
    by = {e.model: e for e in ents}
    ranking = _paper_order(rank_models({e.model: e.runs for e in comparable}, name, params), by) if comparable \
        else None
    full = rank_models({e.model: e.runs for e in ents}, name, params) if apart else ranking

    def row(e: Entry) -> dict[str, Any]:
        return {"model": e.model, "mean": e.mean, "std": e.std, "n_runs": len(e.runs),
                "from_summary_stats": e.from_summary_stats, "runs": None if e.from_summary_stats else e.runs,
                "protocol_mismatch": labels.get(e.model, []), **e.extra}

    rows = [{"rank": pos + 1, **row(by[m])} for pos, m in enumerate(ranking.order)] if ranking else []
    _dominance_cells(rows, ranking.dominance if ranking else [])
    apart_rows = [{"rank": None, "rank_if_comparable": full.rank_of(e.model) if full else None, **row(e),
                   "dominance_over_next": None, "dominance_source": None} for e in apart]
    section = {"rows": rows, "apart": apart_rows,
               "pairwise": ranking.table if ranking else {}, "pairs": ranking.pairs if ranking else []}
    return section, ranking, full


def _deepsig_crosscheck(name: str, ranking: Ranking, by: dict[str, Entry], params: AsoParams) -> list[dict[str, Any]]:
    """Our ε_min beside deepsig's for each neighbouring pair of the ranking (one 'unavailable' entry
    when deepsig is not installed)."""
    out: list[dict[str, Any]] = []
    for a, b in zip(ranking.order, ranking.order[1:], strict=False):
        theirs = deepsig_eps_min(by[a].runs, by[b].runs, params.seed, params.b)
        if theirs is None:
            out.append({"available": False, "note": "deepsig is not installed (pip install deepsig)"})
            break
        ours = pair_aso(name, a, b, tuple(by[a].runs), tuple(by[b].runs), params).eps_min
        out.append({"available": True, "dataset": name, "a": a, "b": b, "eps_min": ours,
                    "deepsig_eps_min": theirs, "difference": theirs - ours})
    return out


def _stability_section(rankings: dict[str, Ranking], full_rankings: dict[str, Ranking],
                       stats: dict[str, dict[str, tuple[float, float]]], labels: dict[str, list[str]], rule: str,
                       ) -> tuple[dict[str, Any], dict[str, list[str]]]:
    """AR and ARSD over comparable models (‡ models listed under 'apart'); also returns the datasets
    each comparable model is ranked on."""
    comparable_stats = {n: {m: v for m, v in s.items() if not labels.get(m)} for n, s in stats.items()}
    st = stability(rankings, comparable_stats, rule)
    beside = stability(rankings, comparable_stats, "unrounded") if rule == "as published" else None
    st_full = stability(full_rankings, stats, rule)
    apart_models = [m for m in st_full.average_rank if labels.get(m)]
    section = {"average_rank": st.average_rank, "ranked_in": st.ranked_in, "arsd": st.arsd,
               "arsd_excluded": st.arsd_excluded, "arsd_by_dataset": st.arsd_by_dataset, "arsd_rule": rule,
               "apart": {m: {"average_rank": st_full.average_rank[m], "ranked_in": st_full.ranked_in[m],
                             "arsd": st_full.arsd.get(m), "arsd_excluded": st_full.arsd_excluded.get(m, [])}
                         for m in apart_models},
               "rule": "AR over the datasets a model is ranked on; ARSD = mean of std/mean*100 over datasets "
                       "with mean > 0; " + ARSD_RULE_TEXT[rule] + "; models whose protocol differs are left "
                       "out of both and listed under 'apart'",
               **({"unrounded": {"arsd": beside.arsd, "arsd_excluded": beside.arsd_excluded,
                                 "arsd_by_dataset": beside.arsd_by_dataset}} if beside else {})}
    return section, st.ranked_in


def _model_notes(models: list[ModelScores]) -> list[str]:
    """Per input model: datasets not scored, runs without a score, partial runs, generation settings
    that make models incomparable, and bundles checked by digest only."""
    from seam_repro.run.invariance import scored_comparability

    notes = []
    for ms, label in labelled(models):
        notes += [f"{label}: {name} not scored (left out of every statistic): {brief_reason(r, run_hint(ms))}"
                  for name, r in sorted(ms.unscored.items())]
        for name, ds in ms.datasets.items():
            if ds.missing_runs:  # one failed run: the others still count, and the row says how many
                notes.append(f"{label}: {name} run(s) {', '.join(map(str, ds.missing_runs))} have no score "
                             f"({'; '.join(sorted(set(ds.missing_runs.values())))}); its mean, std, rank and ARSD "
                             f"there are over the {len(ds.runs)} runs present.")
        cov = ms.extra.get("coverage") or {}
        if ms.extra.get("partial") or cov.get("partial"):
            notes.append(f"{ms.label}: partial run ({cov.get('scored')} of {cov.get('instances')} instances "
                         "scored); not comparable with full runs.")
    notes += scored_comparability([(label, ms.model_id, ms.revision, (ms.extra.get("protocol") or {}).get("generation"))
                                   for ms, label in labelled(models)])
    if any(ms.extra.get("seeds_checked") is False for ms in models):
        notes.append("No seeds/ folder was found (set SEAM_REPRO_SEEDS): bundles were checked by their digest only, "
                     "not against the shipped manifests' seeds and prompt digests.")
    return notes


def _table_notes(models: list[ModelScores], reference: ReferenceTable | None, labels: dict[str, list[str]],
                 rule: str, ranked_in: dict[str, list[str]], entries: dict[str, list[Entry]]) -> list[str]:
    """Notes on the tables as a whole: ‡ rows, the ARSD rule, uneven AR spans, † rows."""
    base = "the reference" if reference is not None else "the first input"
    notes = [f"{PROTOCOL_MARK} {label}: protocol differs from {base}: {'; '.join(differs)}. "
             "Not ranked with the others; the rank it would take is shown apart." for label, differs in labels.items()
             if differs]
    if rule == "unrounded":
        others = [ms.label for ms in models if ms.profile != "upstream"]
        notes.append(f"ARSD from unrounded means and stds: {', '.join(others)} scored under another profile than "
                     "upstream, whose as-published ARSD rounding (upstream's ranking_asd.csv) is not applied.")
    else:
        notes.append("ARSD as published: std/mean as upstream's ranking_asd.csv stores them (ROUGE and CoNLL-F1 "
                     "to 0.001, MuSiQue and FuseReviews to 0.1 on the 0-100 scale); the unrounded ARSD beside it.")
    spans = {m: tuple(v) for m, v in ranked_in.items()}
    if len(set(spans.values())) > 1:  # name the exceptions, not every model
        common = max(set(spans.values()), key=lambda v: (list(spans.values()).count(v), len(v)))
        notes.append("Average ranks are over different datasets: " + "; ".join(
            f"{m} over {len(v)} ({', '.join(v)})" for m, v in spans.items() if v != common)
            + f"; every other model over {len(common)} ({', '.join(common)}).")
    if any(e.from_summary_stats for ents in entries.values() for e in ents):
        notes.append(f"{REF_MARK} reference model known only by its published mean ± std. Its rows show the paper's "
                     f"mean ± std and dominance; a value marked {RECOMPUTED_MARK} is recomputed here with surrogate "
                     "runs of exactly that mean and population std (the paper publishes no per-run scores), so it "
                     "is approximate and not the paper's.")
    return notes


def build_report(models: list[ModelScores], reference: ReferenceTable | None = None,
                 params: AsoParams | None = None, deepsig: bool = False, command: str = "") -> dict[str, Any]:
    """Everything the Markdown, JSON and figures show, as one JSON-ready dict (‡ rows ranked apart:
    see the module docstring)."""
    params = params or AsoParams()
    entries = collect_entries(models, reference)
    rankings: dict[str, Ranking] = {}
    full_rankings: dict[str, Ranking] = {}
    stats: dict[str, dict[str, tuple[float, float]]] = {}
    datasets: dict[str, Any] = {}
    cross: list[dict[str, Any]] = []
    labels = protocol_labels(models, reference)
    for name, ents in entries.items():
        absent = absent_cells(models, reference, name)
        ref_ds = reference.datasets.get(name) if reference is not None else None
        metric_key = next((e.extra["metric"] for e in ents if "metric" in e.extra), ref_ds.metric_key if ref_ds else "")
        section, ranking, full = _dataset_section(name, ents, labels, params)  # no rows where no entries
        datasets[name] = {"display_name": DISPLAY_NAMES.get(name, name), "metric": metric_key,
                          "metric_description": ref_ds.metric if ref_ds is not None else "", "absent": absent,
                          **section}
        stats[name] = {e.model: (e.mean, e.std) for e in ents}
        if ranking is not None:
            rankings[name] = ranking
            if deepsig:
                cross += _deepsig_crosscheck(name, ranking, {e.model: e for e in ents}, params)
        if full is not None:
            full_rankings[name] = full
    # upstream profile: ARSD as published (compare_models.py on ranking_asd.csv), the unrounded one beside it
    rule = "as published" if all(ms.profile == "upstream" for ms in models) else "unrounded"
    stab, ranked_in = _stability_section(rankings, full_rankings, stats, labels, rule)
    notes = ["Scores are on a 0-100 scale; std is the population std over runs (ddof=0).",
             DOMINANCE_NOTE,
             "ASO: upstream ASD.py semantics with per-pair generators derived from the recorded seed.",
             *_model_notes(models), *_table_notes(models, reference, labels, rule, ranked_in, entries)]
    return {
        "kind": "seam-repro/report", "kit_version": __version__, "command": command, "aso": params.as_dict(),
        "manifest_digest": models[0].manifest_digest if models else None,
        "prompt_digest": models[0].prompt_digest if models else None,
        "reference": reference.source if reference else None,
        "model_order": list(dict.fromkeys(e.model for ents in entries.values() for e in ents)),
        "datasets": datasets,
        "protocol_mismatch": labels,
        "stability": stab,
        "deepsig_crosscheck": cross if deepsig else None,
        "notes": notes,
    }


ARSD_RULE_TEXT = {
    "as published": "as published: mean and std as upstream's ranking_asd.csv stores them (x100 of its results.json "
                    "value, rounded to 0.1: to 0.001 on the 0-100 scale for ROUGE and CoNLL-F1, which upstream holds "
                    "on 0-100 already, to 0.1 for MuSiQue and FuseReviews), as compare_models.py reads them",
    "unrounded": "unrounded mean and std"}


def _fmt(x: float | None, nd: int = 1) -> str:
    return "–" if x is None else f"{x:.{nd}f}"


_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f\u2028\u2029\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")
"""Control characters, line separators and bidirectional controls (``bidi.BIDI_CONTROLS``: U+202E
would reorder the rest of a line) are written as escapes."""


def md_cell(value: object) -> str:
    """``value`` as one Markdown table cell or list item: control characters (a line break starts a
    new row) shown as escapes, table pipes escaped. Names are checked at input
    (``store.display_name_problem``); this keeps report.md whole whatever a bundle or run.json holds."""
    return _visible(value).replace("|", "\\|")


def _visible(value: object) -> str:
    """``value`` on one line: each control character written as its escape (``\\n``)."""
    return _CONTROL.sub(lambda m: m.group().encode("unicode_escape").decode("ascii"), str(value))


def _stability_markdown(st: dict[str, Any]) -> list[str]:
    """The AR/ARSD tables: per model (‡ models last, not comparable), then ARSD per dataset."""
    c_ = md_cell
    un = st.get("unrounded")  # the upstream profile's as-published ARSD comes with the unrounded one beside it
    rule = st.get("arsd_rule", "as published")
    out = ["## Average rank (AR) and ARSD", "",
           f"| model | AR ↓ | ARSD ↓ ({rule}) |" + (" ARSD unrounded |" if un else "")
           + " AR over (datasets) | left out of ARSD (mean 0) |", "|---|---:|---:|" + ("---:|" if un else "") + "---|---|"]
    for m in sorted(st["average_rank"], key=lambda k: st["average_rank"][k]):
        over = st["ranked_in"][m]
        out.append(f"| {c_(m)} | {st['average_rank'][m]:.2f} | {_fmt(st['arsd'][m], 1)} | "
                   + (f"{_fmt(un['arsd'][m], 1)} | " if un else "")
                   + f"{len(over)}: {c_(', '.join(over))} | {c_(', '.join(st['arsd_excluded'].get(m, [])) or '–')} |")
    for m, a in (st.get("apart") or {}).items():  # their AR is the rank they would take: not comparable
        out.append(f"| {c_(m)} {PROTOCOL_MARK} (not comparable) | ({a['average_rank']:.2f}) | {_fmt(a['arsd'], 1)} | "
                   + ("– | " if un else "")
                   + f"{len(a['ranked_in'])}: {c_(', '.join(a['ranked_in']))} | {c_(', '.join(a['arsd_excluded']) or '–')} |")
    out += ["", f"| dataset | ARSD across models ({rule}) |" + (" unrounded |" if un else ""),
            "|---|---:|" + ("---:|" if un else "")]
    out += [f"| {c_(d)} | {_fmt(v, 1)} |" + (f" {_fmt(un['arsd_by_dataset'][d], 1)} |" if un else "")
            for d, v in st["arsd_by_dataset"].items()]
    return out


def render_markdown(rep: dict[str, Any]) -> str:
    """Table 3 per dataset, then AR/ARSD, then output-format rates. Every name and reason that came
    from an input goes through :func:`md_cell`."""
    c_ = md_cell
    out = ["# seam-repro results", "", f"Manifest digest: `{rep['manifest_digest']}`  ",
           f"ASO: dp={rep['aso']['dp']}, N=M={rep['aso']['N']}, B={rep['aso']['B']}, alpha={rep['aso']['alpha']}, "
           f"seed={rep['aso']['seed']}  ", f"Generated by seam-repro {rep['kit_version']}"
           + (f": `{rep['command']}`" if rep["command"] else ""), ""]
    if rep.get("view"):
        out += [f"Every prediction, prompt and instance score: [run explorer]({rep['view']}) (`seam-repro view`; "
                "open it in a browser, no server needed).", ""]
    for ds in rep["datasets"].values():
        apart = ds.get("apart", [])
        head = f"## {c_(ds['display_name'])}" + (f" ({c_(ds['metric'])})" if ds["metric"] else "")
        out += [head, ""] + ([f"Metric: {c_(ds['metric_description'])}.", ""] if ds.get("metric_description") else [])
        extra_col = f" rank if comparable ({PROTOCOL_MARK}) |" if apart else ""
        out += [f"| rank | model | mean ± std | {DOMINANCE_HEADER} |{extra_col}",
                "|---:|---|---:|---:|" + ("---:|" if apart else "")]
        for r in ds["rows"]:
            mark = f" {REF_MARK}" if r["from_summary_stats"] else ""
            moved = r["from_summary_stats"] and r.get("paper_rank") not in (None, r["rank"])
            rank = f"{r['rank']}" + (f" (paper: {r['paper_rank']})" if moved else "")
            dom = (f"{RECOMPUTED_MARK} " if r.get("dominance_source") == "surrogate" else "") \
                + _fmt(r["dominance_over_next"], 2)
            out.append(f"| {rank} | {c_(r['model'])}{mark} | {r['mean']:.1f} ± {r['std']:.1f} | {dom} |"
                       + (" |" if apart else ""))
        for r in apart:
            out.append(f"| – | {c_(r['model'])} {PROTOCOL_MARK} | {r['mean']:.1f} ± {r['std']:.1f} | – | "
                       f"{_fmt(r['rank_if_comparable'], 0)} |")
        for a in ds.get("absent", []):
            mark = f" {REF_MARK}" if a["from_summary_stats"] else ""
            out.append(f"| – | {c_(a['model'])}{mark} | {c_(a['cell'])} ({c_(a['reason'])}) | – |" + (" – |" if apart else ""))
        intended = [r for r in ds["rows"] if r.get("intended")]
        if intended:  # coreference under the upstream profile: the score above is as published
            out += ["", "Scores above: as published (the part of the unflushed gold file perl read). As intended "
                    "(whole gold file): " + "; ".join(f"{c_(r['model'])} {_fmt(r['intended']['mean'])} ± "
                                                     f"{_fmt(r['intended']['std'])}" for r in intended) + "."]
        out.append("")
    out += _stability_markdown(rep["stability"])
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
    from seam_repro.analysis.plots import draw_ar_arsd, draw_boxes, save_png

    ensure_dir(out_dir)
    paths = [out_dir / "report.json", out_dir / "report.md", out_dir / "box_plots.png", out_dir / "ar_arsd.png"]
    atomic_write_text(paths[0], json.dumps(rep, indent=1, ensure_ascii=False, allow_nan=False) + "\n")
    atomic_write_text(paths[1], render_markdown(rep))
    save_png(draw_boxes(rep), paths[2])
    save_png(draw_ar_arsd(rep), paths[3])
    return paths
