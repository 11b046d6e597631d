"""The Markdown report: variance shares, effects, ranking stability and noise floor."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from seam_repro.analysis.sensitivity.design import INSTANCE, RESIDUAL
from seam_repro.analysis.sensitivity.effects import GOLD_FACTOR, RUN_FACTORS


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%" if x < 0.1 else f"{100 * x:.0f}%"


def design_name(design: Mapping[str, Any]) -> str:
    if design["kind"] == "one-factor":
        return "one-factor: " + ", ".join(design["factors"])
    return design["kind"]


def _share_row(model: str, cell: Mapping[str, Any], comps: list[str]) -> str:
    if "share" not in cell:
        reason = cell.get("skipped") or f"not converged: {cell['not_converged']}"
        return f"| {model} | " + " | ".join("—" for _ in comps) + f" | {reason} | |"
    parts = []
    for c in comps:
        if c not in cell["share"]:
            parts.append("—")
            continue
        ci = cell.get("share_ci95", {}).get(c)
        zero = " (0: boundary)" if c in cell.get("boundary", ()) else ""
        parts.append(_pct(cell["share"][c]) + zero + (f" [{_pct(ci[0])}, {_pct(ci[1])}]" if ci else ""))
    return f"| {model} | " + " | ".join(parts) + f" | {cell['n_instances']} | {cell['n_runs']} |"


def _shares_markdown(entry: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    for dataset, cells in entry["attribution"].items():
        comps = sorted({c for cell in cells.values() if "share" in cell for c in cell["share"]},
                       key=lambda c: (c == RESIDUAL, c != INSTANCE, c))
        lines += [f"## {dataset} — {design_name(entry['design'])} (manifest {entry['manifest_digest'][:12]})", ""]
        if not comps:
            lines += [f"- {m}: {c.get('skipped') or 'not converged: ' + c.get('not_converged', '')}"
                      for m, c in cells.items()] + [""]
            continue
        lines += ["| model | " + " | ".join(comps) + " | instances | runs |", "|---|" + "---|" * (len(comps) + 2)]
        lines += [_share_row(model, cell, comps) for model, cell in cells.items()]
        lines += [f"- {m}: {note}" for m, c in cells.items() for note in c.get("notes", ())]
        lines.append("")
    return lines


def _ranking_markdown(entry: Mapping[str, Any]) -> list[str]:
    lines = [f"### Ranking stability — {design_name(entry['design'])}", "",
             "P(A > B): probability that a fresh study of as many runs ranks A above B (predictive), "
             "with a 95% interval on that probability for the true margin.", ""]
    for dataset, rk in entry["ranking"].items():
        notes = "".join(f" ({n})" for n in rk.get("notes", ()))
        if "skipped" in rk:
            lines.append(f"- {dataset}: {rk['skipped']}{notes}")
            continue
        order = sorted(rk["models"], key=lambda m: -rk["mean"][m])
        pairs = ", ".join(f"P({a} > {b}) = {rk['p_above'][a][b]:.2f} [{rk['p_above_ci95'][a][b][0]:.2f}, "
                          f"{rk['p_above_ci95'][a][b][1]:.2f}]" for a, b in zip(order, order[1:], strict=False))
        stable = next((p["runs"] for p in rk["agreement"] if p["same_ranking"] >= 0.95), None)
        lines.append(f"- {dataset}: {pairs}; same ranking in >= 95% of resamples from "
                     f"{stable if stable is not None else 'more than ' + str(len(rk['runs']))} run(s){notes}")
    return [*lines, ""]


def _noise_markdown(result: Mapping[str, Any]) -> list[str]:
    if not result["noise_floor"]:
        return []
    lines = ["## Decoding-noise floor", "", "| dataset | model | noise std | SEAM std | std beyond noise |",
             "|---|---|---|---|---|"]
    for ds, models in result["noise_floor"].items():
        for model, r in models.items():
            seam = f"{r['seam_std']:.2f}" if "seam_std" in r else "—"
            beyond = f"{r['std_beyond_noise']:.2f}" if "std_beyond_noise" in r else "—"
            lines.append(f"| {ds} | {model} | {r['noise_std']:.2f} | {seam} | {beyond} |")
    return [*lines, ""]


def markdown(result: Mapping[str, Any]) -> str:
    """One table of variance shares per (design, dataset), then effects, ranking stability, noise
    floor, and one line per (model, dataset) without shares."""
    lines = ["# Which factor moves the score?", "",
             "Shares of score variance (REML; several optimisers, the best likelihood kept, each component "
             "also tried at 0) with 95% intervals on the population shares (generalised pivotal quantities "
             f"or a parametric bootstrap, {result['bootstrap']} draws, seed {result['seed']}; see "
             "docs/sensitivity.md). A fit that did not converge is shown as such, never as numbers.", ""]
    for entry in result["designs"]:
        lines += _shares_markdown(entry) + _effects_markdown(entry) + _ranking_markdown(entry)
    lines += _noise_markdown(result)
    if result.get("skipped"):
        lines += ["## Without shares", "", *(f"- {line}" for line in result["skipped"]), ""]
    return "\n".join(lines)


def _num(x: float) -> str:
    return f"{x:.2f}"


def _effects_markdown(entry: Mapping[str, Any]) -> list[str]:
    """Per dataset: one row per (model, factor that varied) with each level's deviation of the mean
    run score, its 95% interval and run count, and the F test of no effect; one line for the rest."""
    lines: list[str] = []
    for dataset, cells in entry.get("effects", {}).items():
        rows, notes = [], []
        for model, cell in cells.items():
            if "skipped" in cell:
                notes.append(f"- {model}: {cell['skipped']}")
                continue
            for factor, eff in cell["factors"].items():
                name = RUN_FACTORS[factor]
                if "deviation" not in eff:
                    notes.append(f"- {model}, {name}: {eff['skipped']}")
                    continue
                levels = "; ".join(f"{lv}: {_num(eff['deviation'][lv])} [{_num(eff['deviation_ci95'][lv][0])}, "
                                   f"{_num(eff['deviation_ci95'][lv][1])}] (n={eff['n_runs_per_level'][lv]})"
                                   for lv in eff["levels"])
                rows.append(f"| {model} | {name} | {levels} | F = {eff['F']:.2f} ({eff['df'][0]}, {eff['df'][1]}) | "
                            f"{eff['p_value']:.3f} | {eff['p_holm']:.3f} |")
            gp = cell.get("gold_position")
            if gp is not None and "slope" in gp:
                rows.append(f"| {model} | {GOLD_FACTOR} | slope: {_num(gp['slope'])} [{_num(gp['slope_ci95'][0])}, "
                            f"{_num(gp['slope_ci95'][1])}] ({gp['n_instances']} instances, {gp['n_scores']} scores) | "
                            f"t = {gp['t']:.2f} ({gp['df']}) | {gp['p_value']:.3f} | {gp['p_holm']:.3f} |")
            elif gp is not None:
                notes.append(f"- {model}, gold-document position: {gp['skipped']}")
        lines += [f"### {dataset}: effects of recorded choices on the run score — {design_name(entry['design'])}", ""]
        if rows:
            lines += ["Deviation of each level's mean run score from the mean over levels, 95% t interval, runs "
                      "at that level (n); F test of no effect (OLS on run scores). Gold position: change of the "
                      "instance score from first to last place (OLS with instance and run effects, clustered "
                      "on instance). p Holm-adjusted over every test in this report.", "",
                      "| model | factor | estimate [95% CI] (n) | test (df) | p | p Holm |",
                      "|---|---|---|---|---|---|", *rows, ""]
        gold_line = entry.get("gold_notes", {}).get(dataset)
        lines += [*notes, *([f"- {gold_line}"] if gold_line else []), ""]
    return lines
