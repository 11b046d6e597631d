"""Benchmark: calibration of `seam-repro sensitivity` on simulated studies with planted components.

Each study draws ``--instances`` instances x ``--runs`` runs of a one-factor design (numpy
Generator, seed = study index): y = a[instance] + b[level] + e with planted variances
(instance 0.5, factor 0.2, residual 0.3; levels: one per run, as a document order is). It reports,
per component, how often the nominal 95 % interval covers the planted share, the mean point
estimate (bias) with its Monte-Carlo standard error, and the time per study.

    python benchmarks/bench_sensitivity.py [--studies 200] [--boot 100] [--instances 20] [--runs 10]
    python benchmarks/bench_sensitivity.py --effects --studies 2000   # the paraphrase-effect F test
"""

from __future__ import annotations

import argparse
import time
from typing import Any

import numpy as np

from seam_repro.analysis.sensitivity import (
    INSTANCE,
    RESIDUAL,
    Observations,
    bootstrap_draws,
    fit_variance_components,
    intervals,
    shares,
)

PLANTED = {INSTANCE: 0.5, "factor": 0.2, RESIDUAL: 0.3}
"""Planted variances; they sum to 1, so they are also the planted shares."""


def simulate(seed: int, n_inst: int, n_runs: int, planted: dict[str, float] = PLANTED,
             levels: int | None = None) -> Observations:
    """One study: every instance in every run; ``levels`` factor levels (default: one per run)."""
    rng = np.random.default_rng(seed)
    n_levels = levels or n_runs
    a = rng.normal(0, np.sqrt(planted[INSTANCE]), n_inst)
    b = rng.normal(0, np.sqrt(planted["factor"]), n_levels)
    level_of_run = {r: r % n_levels for r in range(n_runs)}
    inst = np.repeat(np.arange(n_inst), n_runs)
    run = np.tile(np.arange(n_runs), n_inst)
    y = a[inst] + b[[level_of_run[r] for r in run]] + rng.normal(0, np.sqrt(planted[RESIDUAL]), len(inst))
    return Observations(y, np.array([f"i{i}" for i in inst]), run, {"factor": level_of_run})


def calibrate(studies: int, boot: int, n_inst: int, n_runs: int, first_seed: int = 0) -> dict[str, Any]:
    """Coverage (percentile and basic intervals, from the same resamples) and bias of each share over
    ``studies`` simulated studies."""
    methods = ("percentile", "basic", "logit")
    covered = {m: {k: 0 for k in PLANTED} for m in methods}
    est: dict[str, list[float]] = {k: [] for k in PLANTED}
    for s in range(first_seed, first_seed + studies):
        obs = simulate(s, n_inst, n_runs)
        share = shares(fit_variance_components(obs.y, obs.groups()))
        draws = bootstrap_draws(obs, boot, seed=10_000 + s)
        for m in methods:
            ci = intervals(share, draws, m)
            for k, planted in PLANTED.items():
                covered[m][k] += ci[k][0] <= planted <= ci[k][1]
        for k in PLANTED:
            est[k].append(share[k])
    return {k: {"planted": PLANTED[k], **{f"coverage_{m}": covered[m][k] / studies for m in methods},
                "mean_share": float(np.mean(est[k])), "mc_se": float(np.std(est[k], ddof=1) / np.sqrt(studies))}
            for k in PLANTED}


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
    from seam_repro.analysis.sensitivity import level_effect

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
    from seam_repro.analysis.sensitivity import gold_position_effect

    rejected = covered = 0
    for s in range(studies):
        eff = gold_position_effect(*simulate_gold(s, slope))
        rejected += eff["p_value"] < 0.05
        covered += eff["slope_ci95"][0] <= slope <= eff["slope_ci95"][1]
    return {"rejection_rate": rejected / studies, "coverage": covered / studies}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--studies", type=int, default=200)
    ap.add_argument("--boot", type=int, default=100)
    ap.add_argument("--instances", type=int, default=20)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--effects", action="store_true",
                    help="calibrate the paraphrase-effect and gold-position tests on simulated i.i.d. studies instead")
    args = ap.parse_args()
    if args.effects:
        for name, planted in [("no effect", np.zeros(4)), ("planted 3/-1.5/0/-1.5", np.array([3.0, -1.5, 0.0, -1.5]))]:
            r = effect_calibration(args.studies, planted)
            print(f"{name:<22} {r['tested']} of {args.studies} studies tested: rejection at 5% "
                  f"{r['rejection_rate']:.3f}, 95% interval coverage {r['coverage']:.3f}")
        for slope in (0.0, -4.0):
            r = gold_calibration(args.studies, slope)
            print(f"gold position slope {slope:<4} {args.studies} studies: rejection at 5% "
                  f"{r['rejection_rate']:.3f}, 95% interval coverage {r['coverage']:.3f}")
        return
    t0 = time.perf_counter()
    out = calibrate(args.studies, args.boot, args.instances, args.runs)
    dt = time.perf_counter() - t0
    print(f"{args.studies} studies x {args.boot} bootstrap fits, {args.instances} instances x {args.runs} runs: "
          f"{dt:.0f} s ({dt / args.studies:.2f} s per study)")
    print("component  planted  coverage(95%): percentile  basic  logit (reported)  mean share  (MC s.e.)")
    for k, r in out.items():
        print(f"{k:<10} {r['planted']:>7.2f}  {r['coverage_percentile']:>25.3f}  {r['coverage_basic']:>5.3f}  "
              f"{r['coverage_logit']:>16.3f}  {r['mean_share']:>10.3f}  ({r['mc_se']:.3f})")


if __name__ == "__main__":
    main()
