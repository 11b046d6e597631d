"""Benchmark: `seam-repro sensitivity`'s analysis at the paper's shape, and where the time goes.

Builds the scored groups `analyse` reads (one i.i.d. manifest: every run a new document order and
demonstration set, every instance scored in every run) in memory, with planted instance, run and
residual variances, and times ``analyse_groups`` with ``--bootstrap`` draws on ``--jobs`` worker
processes, then each part alone in this process (fits, intervals, effects, ranking). Reading the
run folders is left out (it is the `score`/`report` loader, timed by bench_growth.py).

    python benchmarks/bench_sensitivity_scale.py            # 7 models x 6 datasets x 10 runs x 100 instances
    python benchmarks/bench_sensitivity_scale.py --models 3 --datasets 1 --runs 12 --instances 40
"""

from __future__ import annotations

import argparse
import os
import time
from typing import Any

for _var in ("OPENBLAS_NUM_THREADS", "OMP_NUM_THREADS", "MKL_NUM_THREADS"):  # before numpy loads BLAS, as
    os.environ.setdefault(_var, "1")  # the kit's workers do (analyse.BLAS_THREADS says why)

import numpy as np  # noqa: E402

from seam_repro.analysis.aggregate import DatasetScores, InstanceScore, ModelScores  # noqa: E402
from seam_repro.analysis.sensitivity.analyse import Group, analyse_groups  # noqa: E402

DATASETS = ("ECB", "FuseReviews", "SciCo", "MultiNews", "MusiQue", "OpenASP")


def synthetic_manifest(n_datasets: int, n_runs: int, n_inst: int) -> dict[str, Any]:
    """An i.i.d. manifest with the fields sensitivity reads: as SEAM draws them, each run a
    paraphrase out of 9, a new document order and a new demonstration set."""
    rng = np.random.default_rng(0)
    names = [DATASETS[d % len(DATASETS)] + ("" if d < len(DATASETS) else str(d)) for d in range(n_datasets)]
    runs = [{"dataset": name, "run": r, "paraphrase_index": int(rng.integers(9)),
             "doc_order": rng.permutation(8).tolist(), "demo_indices": [2 * r, 2 * r + 1], "max_num_docs": 8,
             "instances": [{"id": f"{name}-{i}"} for i in range(n_inst)]}
            for name in names for r in range(n_runs)]
    return {"digest": "0" * 64, "profile": "upstream", "config": {"datasets": [{"name": n} for n in names]},
            "runs": runs}


def synthetic_model(label: str, manifest: dict[str, Any], seed: int, runs: list[int] | None = None,
                    variances: tuple[float, float, float] = (60.0, 10.0, 30.0)) -> ModelScores:
    """One model's scores on every dataset of ``manifest`` (only ``runs`` if given): planted
    instance, run and residual variances (points^2) around a mean of 50."""
    rng = np.random.default_rng(seed)
    datasets = {}
    for entry in manifest["config"]["datasets"]:
        name = entry["name"]
        mine = [r for r in manifest["runs"] if r["dataset"] == name and (runs is None or r["run"] in runs)]
        n_inst = len(mine[0]["instances"])
        a = rng.normal(0, np.sqrt(variances[0]), n_inst)
        rows, run_scores = [], {}
        for r in mine:
            y = 50 + a + rng.normal(0, np.sqrt(variances[1])) + rng.normal(0, np.sqrt(variances[2]), n_inst)
            rows += [InstanceScore(name, r["run"], f"{name}-{i}", "f1", float(y[i]), True) for i in range(n_inst)]
            run_scores[r["run"]] = float(y.mean())
        datasets[name] = DatasetScores(name, "f1", run_scores, {k: 1.0 for k in run_scores}, tuple(rows))
    return ModelScores(label, "", manifest["digest"], "", datasets)


def synthetic_group(n_models: int, n_datasets: int, n_runs: int, n_inst: int, seed: int = 0) -> Group:
    manifest = synthetic_manifest(n_datasets, n_runs, n_inst)
    models = {f"model-{m}": synthetic_model(f"model-{m}", manifest, seed + m) for m in range(n_models)}
    return Group(manifest["digest"], manifest, "synthetic.json", models)


def time_parts(group: Group, n_boot: int) -> dict[str, float]:
    """CPU seconds of each part, in this process: REML fits, share intervals, effects, ranking."""
    from seam_repro.analysis.sensitivity.analyse import _observations, _ranking
    from seam_repro.analysis.sensitivity.design import iid_components
    from seam_repro.analysis.sensitivity.effects import factor_effects
    from seam_repro.analysis.sensitivity.intervals import fit_of, share_draws

    parts = dict.fromkeys(("fits", "intervals", "effects", "ranking"), 0.0)
    for entry in group.manifest["config"]["datasets"]:
        runs = [r for r in group.manifest["runs"] if r["dataset"] == entry["name"]]
        levels = iid_components(runs)
        for ms in group.models.values():
            obs = _observations(ms.datasets[entry["name"]], levels)
            t0 = time.process_time()
            fit, _ = fit_of(obs)
            t1 = time.process_time()
            share_draws(obs, fit, n_boot, 0)
            t2 = time.process_time()
            factor_effects(runs, ms.datasets[entry["name"]].runs)
            parts["fits"] += t1 - t0
            parts["intervals"] += t2 - t1
            parts["effects"] += time.process_time() - t2
        t0 = time.process_time()
        _ranking(group.models, entry["name"], n_boot, 0)
        parts["ranking"] += time.process_time() - t0
    return parts


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--models", type=int, default=7)
    ap.add_argument("--datasets", type=int, default=6)
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--instances", type=int, default=100)
    ap.add_argument("--bootstrap", type=int, default=200)
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    args = ap.parse_args()
    group = synthetic_group(args.models, args.datasets, args.runs, args.instances)
    t0, c0 = time.perf_counter(), time.process_time()
    result = analyse_groups([group], n_boot=args.bootstrap, jobs=args.jobs)
    wall = time.perf_counter() - t0
    cells = [c for e in result["designs"] for cells in e["attribution"].values() for c in cells.values()]
    print(f"{args.models} models x {args.datasets} datasets x {args.runs} runs x {args.instances} instances, "
          f"{args.bootstrap} draws, {args.jobs} job(s): {wall:.1f} s wall "
          f"({time.process_time() - c0:.1f} s CPU in the parent); {len(cells)} cells, "
          f"{sum('share' in c for c in cells)} with shares, {len(result['skipped'])} without")
    for line in result["skipped"]:
        print(f"  no shares: {line}")
    parts = time_parts(group, args.bootstrap)
    print("CPU seconds by part (one process): " + ", ".join(f"{k} {v:.1f}" for k, v in parts.items()))


if __name__ == "__main__":
    main()
