"""Benchmark: are `seam-repro sensitivity`'s numbers right, on simulated studies with planted truth?

Shares. Each study draws a one-factor paraphrase design as the kit's one-factor designs do: every
run draws one of ``levels`` paraphrases uniformly (so some appear several times, some never), every
instance is scored in every run, ``y = a[instance] + b[paraphrase] + e`` with planted variances. It
reports, per component, how often the nominal 90 % and 95 % intervals cover the planted
(population) share, with the Monte-Carlo standard error, for the kit's interval (``gpq``) and a
parametric bootstrap from the fitted model (``parametric``); and how many fits did not converge.

Ranking (``--ranking``). Pairs of models over R runs that share run effects; for each margin the
predictive ``P(A above B)`` is compared with the frequency that a fresh study ranks A above B, and
the interval on that probability with the probability itself.

    python benchmarks/bench_sensitivity.py                  # the coverage grid of docs/sensitivity.md
    python benchmarks/bench_sensitivity.py --studies 200 --settings 9,40,12
    python benchmarks/bench_sensitivity.py --ranking
    python benchmarks/bench_sensitivity.py --effects --studies 2000   # the paraphrase-effect F test
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity.design import INSTANCE, RESIDUAL, Observations
from seam_repro.analysis.sensitivity.intervals import LEVELS, fit_of, percentile_intervals, share_draws
from seam_repro.analysis.sensitivity.reml import shares

FACTOR = "paraphrase"
PLANTED = {INSTANCE: 0.6, FACTOR: 0.15, RESIDUAL: 0.25}
"""Planted variances; they sum to 1, so they are also the planted shares."""
PLANTS = ({INSTANCE: 0.6, FACTOR: 0.15, RESIDUAL: 0.25}, {INSTANCE: 0.4, FACTOR: 0.4, RESIDUAL: 0.2},
          {INSTANCE: 0.6, FACTOR: 0.0, RESIDUAL: 0.4})
"""The three models of the issue-35 study (one with no paraphrase variance)."""
SETTINGS = ((4, 20, 6), (4, 100, 20), (9, 40, 12), (12, 20, 6), (12, 100, 20), (6, 50, 10))
"""(paraphrase levels, instances, runs): the corners and middle of the designs users run."""


def simulate(seed: int, n_inst: int, n_runs: int, planted: dict[str, float] = PLANTED,
             levels: int = 9) -> Observations:
    """One study: every instance in every run, each run one of ``levels`` paraphrases drawn uniformly
    (redrawn until two differ, as a design with one level has no factor share to estimate)."""
    rng = np.random.default_rng(seed)
    level_of_run = rng.integers(levels, size=n_runs)
    while len(set(level_of_run.tolist())) < 2:
        level_of_run = rng.integers(levels, size=n_runs)
    a = rng.normal(0, np.sqrt(planted[INSTANCE]), n_inst)
    b = rng.normal(0, np.sqrt(planted[FACTOR]), levels)
    inst = np.repeat(np.arange(n_inst), n_runs)
    run = np.tile(np.arange(n_runs), n_inst)
    y = 50 + 10 * (a[inst] + b[level_of_run[run]] + rng.normal(0, np.sqrt(planted[RESIDUAL]), len(inst)))
    return Observations(y, np.array([f"i{i}" for i in inst]), run,
                        {FACTOR: {r: int(level_of_run[r]) for r in range(n_runs)}})


def calibrate(studies: int, draws: int, n_inst: int, n_runs: int, levels: int = 9,
              planted: dict[str, float] = PLANTED, methods: tuple[str, ...] = ("gpq",),
              first_seed: int = 0) -> dict[str, Any]:
    """Coverage of the planted shares at 90 % and 95 % per method (with Monte-Carlo s.e.), mean
    estimate, non-converged fits and seconds per study (fit plus the kit's interval)."""
    total = sum(planted.values())
    truth = {k: v / total for k, v in planted.items()}
    hits = {m: {lv: {k: 0 for k in truth} for lv in LEVELS} for m in methods}
    est: dict[str, list[float]] = {k: [] for k in truth}
    not_converged, seconds = 0, 0.0
    for s in range(first_seed, first_seed + studies):
        obs = simulate(s, n_inst, n_runs, planted, levels)
        t0 = time.perf_counter()
        fit = fit_of(obs)[0]
        seconds += time.perf_counter() - t0
        if not fit.converged:
            not_converged += 1
            continue
        share = shares(fit.variance)
        for m in methods:
            t0 = time.perf_counter()
            d = share_draws(obs, fit, draws, 10_000 + s, m)[0]
            seconds += (time.perf_counter() - t0) if m == methods[0] else 0.0
            for lv in LEVELS:
                ci = percentile_intervals(share, d, lv)
                for k, t in truth.items():
                    hits[m][lv][k] += ci[k][0] <= t <= ci[k][1]
        for k in truth:
            est[k].append(share[k])
    n = studies - not_converged
    out: dict[str, Any] = {"studies": studies, "not_converged": not_converged, "seconds_per_study": seconds / studies}
    for k, t in truth.items():
        out[k] = {"planted": t, "mean_share": float(np.mean(est[k])),
                  "mean_share_se": float(np.std(est[k], ddof=1) / np.sqrt(n))}
        for m in methods:
            for lv in LEVELS:
                cov = hits[m][lv][k] / n
                out[k][f"{m}_{round(100 * lv)}"] = cov
                out[k][f"{m}_{round(100 * lv)}_se"] = float(np.sqrt(lv * (1 - lv) / n))
    return out


def ranking_calibration(studies: int, margin: float, n_runs: int = 10, run_sd: float = 3.0,
                        shared_sd: float = 2.0, seed: int = 0) -> dict[str, float]:
    """For one true margin (points): mean predictive P(A above B), the frequency that a fresh
    study of ``n_runs`` runs ranks A above B, and the coverage of the interval on that probability."""
    from scipy.stats import norm

    from seam_repro.analysis.sensitivity.ranking import ranking_probabilities

    rng = np.random.default_rng(seed)
    truth = float(norm.cdf(margin / (run_sd * np.sqrt(2 / n_runs))))  # d_r = A_r - B_r has sd run_sd * sqrt(2)
    p_sum, fresh, covered = 0.0, 0, 0
    for _ in range(studies):
        shared = rng.normal(0, shared_sd, (2, n_runs))  # run effects every model shares (cancel in d_r)
        a = 50 + margin + shared[0] + rng.normal(0, run_sd, n_runs)
        b = 50 + shared[0] + rng.normal(0, run_sd, n_runs)
        p, ci = ranking_probabilities({"A": a, "B": b})
        p_sum += p["A"]["B"]
        covered += round(ci["A"]["B"][0], 3) <= round(truth, 3) <= round(ci["A"]["B"][1], 3)  # as printed
        fresh_a = margin + shared[1] + rng.normal(0, run_sd, n_runs)
        fresh_b = shared[1] + rng.normal(0, run_sd, n_runs)
        fresh += fresh_a.mean() > fresh_b.mean()
    return {"margin": margin, "mean_p": p_sum / studies, "fresh_frequency": fresh / studies, "truth": truth,
            "ci_coverage": covered / studies}


def binned_calibration(studies: int, n_runs: int = 10, run_sd: float = 3.0, seed: int = 1) -> list[tuple[float, float, int]]:
    """Margins drawn uniformly from -10..10 points: per decile of the predictive P, its mean and the
    frequency that a fresh study ranked A above B, and the pairs in the bin."""
    from seam_repro.analysis.sensitivity.ranking import ranking_probabilities

    rng = np.random.default_rng(seed)
    ps, fresh = [], []
    for _ in range(studies):
        margin = rng.uniform(-10, 10)
        a, b = margin + rng.normal(0, run_sd, n_runs), rng.normal(0, run_sd, n_runs)
        ps.append(ranking_probabilities({"A": a, "B": b})[0]["A"]["B"])
        fresh.append((margin + rng.normal(0, run_sd, n_runs)).mean() > rng.normal(0, run_sd, n_runs).mean())
    p_arr, f_arr = np.array(ps), np.array(fresh)
    out = []
    for lo in np.arange(0, 1, 0.1):
        sel = (p_arr >= lo) & (p_arr < lo + 0.1 if lo < 0.9 else p_arr <= 1.0)
        if sel.any():
            out.append((float(p_arr[sel].mean()), float(f_arr[sel].mean()), int(sel.sum())))
    return out


def simulate_runs(seed: int, paraphrase_effect: np.ndarray, n_inst: int = 20, n_runs: int = 10,
                  run_sd: float = 1.0, noise_sd: float = 3.0) -> tuple[dict[int, float], dict[int, int]]:
    """One i.i.d. study of run scores: every run draws a paraphrase uniformly from
    ``len(paraphrase_effect)`` and a run-level shift (its document order and demonstrations,
    sd ``run_sd``); the same ``n_inst`` instances (difficulty sd 5) recur in every run."""
    rng = np.random.default_rng(seed)
    difficulty = rng.normal(0, 5, n_inst)
    para = {r: int(rng.integers(len(paraphrase_effect))) for r in range(n_runs)}
    scores = {r: float(np.mean(50 + difficulty + paraphrase_effect[para[r]] + rng.normal(0, run_sd)
                               + rng.normal(0, noise_sd, n_inst))) for r in range(n_runs)}
    return scores, para


def effect_calibration(studies: int, planted: np.ndarray) -> dict[str, float]:
    """Rejection rate of the no-effect F test at 5 % and coverage of the per-level intervals over
    ``studies`` simulated i.i.d. studies (studies with no test are counted apart)."""
    from seam_repro.analysis.sensitivity.effects import level_effect

    tested = rejected = covered = n_ci = 0
    for s in range(studies):
        eff = level_effect(*simulate_runs(s, planted))
        if "p_value" not in eff:
            continue
        tested += 1
        rejected += eff["p_value"] < 0.05
        seen = [int(lv) for lv in eff["levels"]]
        for lv, t in zip(eff["levels"], planted[seen] - planted[seen].mean(), strict=True):
            covered += eff["deviation_ci95"][lv][0] <= t <= eff["deviation_ci95"][lv][1]
            n_ci += 1
    return {"tested": tested, "rejection_rate": rejected / tested, "coverage": float(covered / n_ci)}


def simulate_gold(seed: int, slope: float, n_inst: int = 20, n_runs: int = 10,
                  n_docs: int = 10) -> tuple[Observations, dict[tuple[str, int], float]]:
    """One i.i.d. study of instance scores: each instance has one gold document, each run a new
    document order (so the gold document's relative position varies within instance and run), a
    run-level shift and instance difficulty; the score moves by ``slope`` from first to last place."""
    rng = np.random.default_rng(seed)
    gold = rng.integers(n_docs, size=n_inst)
    order = [rng.permutation(n_docs) for _ in range(n_runs)]
    position = {(f"i{i}", r): float(np.flatnonzero(order[r] == gold[i])[0] / (n_docs - 1))
                for i in range(n_inst) for r in range(n_runs)}
    inst = np.repeat(np.arange(n_inst), n_runs)
    run = np.tile(np.arange(n_runs), n_inst)
    y = (rng.normal(0, 5, n_inst)[inst] + rng.normal(0, 1, n_runs)[run] + rng.normal(0, 3, len(inst))
         + slope * np.array([position[(f"i{i}", r)] for i, r in zip(inst, run, strict=True)]))
    return Observations(y, np.array([f"i{i}" for i in inst]), run, {}), position


def gold_calibration(studies: int, slope: float) -> dict[str, float]:
    """Rejection rate of the no-slope t test at 5 % and coverage of the slope's 95 % interval."""
    from seam_repro.analysis.sensitivity.effects import gold_position_effect

    rejected = covered = 0
    for s in range(studies):
        eff = gold_position_effect(*simulate_gold(s, slope))
        rejected += eff["p_value"] < 0.05
        covered += eff["slope_ci95"][0] <= slope <= eff["slope_ci95"][1]
    return {"rejection_rate": rejected / studies, "coverage": covered / studies}


def _print_coverage(studies: int, draws: int, settings: list[tuple[int, int, int]], methods: tuple[str, ...]) -> None:
    print("| levels x instances x runs | planted (inst/para/resid) | component | " +
          " | ".join(f"{m} {p}%" for m in methods for p in (90, 95)) + " | not converged | s/study |")
    print("|---|---|---|" + "---|" * (2 * len(methods)) + "---|---|")
    for levels, n_inst, n_runs in settings:
        for planted in PLANTS:
            r = calibrate(studies, draws, n_inst, n_runs, levels, planted, methods)
            tag = "/".join(f"{planted[k]:.2f}" for k in (INSTANCE, FACTOR, RESIDUAL))
            for k in (INSTANCE, FACTOR, RESIDUAL):
                cells = " | ".join(f"{r[k][f'{m}_{p}']:.3f} ({r[k][f'{m}_{p}_se']:.3f})"
                                   for m in methods for p in (90, 95))
                print(f"| {levels} x {n_inst} x {n_runs} | {tag} | {k} | {cells} | {r['not_converged']} | "
                      f"{r['seconds_per_study']:.3f} |", flush=True)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", type=int, default=400)
    ap.add_argument("--draws", type=int, default=1000, help="pivot draws (or refits) per study")
    ap.add_argument("--settings", nargs="*", default=None,
                    help="levels,instances,runs triples (default: the grid of docs/sensitivity.md)")
    ap.add_argument("--methods", default="gpq", help="comma-separated: gpq,parametric")
    ap.add_argument("--ranking", action="store_true", help="calibrate the ranking statements instead")
    ap.add_argument("--effects", action="store_true",
                    help="calibrate the paraphrase-effect and gold-position tests on simulated i.i.d. studies instead")
    args = ap.parse_args()
    if args.effects:
        _print_effects(args.studies)
    elif args.ranking:
        print("| margin (points) | mean predictive P | fresh-study frequency | abs. difference | "
              "P for the margin | 95% interval coverage |")
        print("|---|---|---|---|---|---|")
        for margin in (0.5, 1, 2, 3, 5, 10):
            r = ranking_calibration(args.studies, margin)
            print(f"| {margin} | {r['mean_p']:.3f} | {r['fresh_frequency']:.3f} | "
                  f"{abs(r['mean_p'] - r['fresh_frequency']):.3f} | {r['truth']:.3f} | {r['ci_coverage']:.3f} |")
        print("\n| predictive P bin (mean) | fresh-study frequency | pairs |\n|---|---|---|")
        for mean_p, freq, n in binned_calibration(args.studies * 3):
            print(f"| {mean_p:.3f} | {freq:.3f} | {n} |")
    else:
        settings = [tuple(int(x) for x in t.split(",")) for t in args.settings] if args.settings else list(SETTINGS)
        _print_coverage(args.studies, args.draws, settings, tuple(args.methods.split(",")))


def _print_effects(studies: int) -> None:
    for name, planted in [("no effect", np.zeros(4)), ("planted 3/-1.5/0/-1.5", np.array([3.0, -1.5, 0.0, -1.5]))]:
        r = effect_calibration(studies, planted)
        print(f"{name:<22} {r['tested']} of {studies} studies tested: rejection at 5% "
              f"{r['rejection_rate']:.3f}, 95% interval coverage {r['coverage']:.3f}")
    for slope in (0.0, -4.0):
        r = gold_calibration(studies, slope)
        print(f"gold position slope {slope:<4} {studies} studies: rejection at 5% "
              f"{r['rejection_rate']:.3f}, 95% interval coverage {r['coverage']:.3f}")


if __name__ == "__main__":
    main()
