"""Benchmark: `report` over 7 models x 6 datasets x 10 runs of synthetic scores, and the ASO pair
memo and the shipped paper pairs on a report against the paper's table.

Synthetic run directories are drawn around the paper's Table 3 means and stds (numpy Generator,
seed 0), with 100 instances per run (coreference datasets: run-level scores only). Prints the time
of each stage and where the report went. Then an echo replay of manifests/smoke.json (its model's
protocol differs from the paper's, so every dataset gets a ‡ row and is ranked twice) is reported
against ``--reference paper`` as shipped, without the shipped paper pairs
(``data/reference/aso_pairs.json``), and also without ``aso.pair_aso`` remembering pairs: the
differences are what each saves a user on that command.

    python benchmarks/bench_report.py [--out DIR] [--instances 100]
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from seam_repro.analysis.reference import load_reference

DIGEST = "d" * 64
REPO = Path(__file__).resolve().parents[1]


def synth_run_dirs(root: Path, n_runs: int = 10, n_instances: int = 100, seed: int = 0) -> list[Path]:
    """One run directory per reference model, scores centred on the paper's mean and std."""
    ref = load_reference("paper")
    rng = np.random.default_rng(seed)
    dirs = []
    for model, hf_id in ref.models.items():
        run_dir = root / model
        slug = hf_id.replace("/", "__")
        sdir = run_dir / "scores" / slug
        sdir.mkdir(parents=True)
        datasets = {}
        lines = []
        for ds_name, ds in ref.datasets.items():
            row = ds.row(model)
            if row is None or row.mean is None or row.std is None:
                continue
            coref = ds_name in ("ECB", "SciCo")
            runs, rates = {}, {}
            for r in range(n_runs):
                run_mean = max(row.mean + row.std * rng.standard_normal(), 0.0)
                if coref:
                    runs[str(r)] = run_mean
                    valid = rng.random(n_instances) < 0.95
                    rates[str(r)] = float(valid.mean())
                    for i in range(n_instances):
                        lines.append({"dataset": ds_name, "run": r, "instance_id": f"{ds_name}-{r}-{i}",
                                      "metric": "conll_f1", "score": None, "valid_format": bool(valid[i]),
                                      "metric_version": "synthetic"})
                    continue
                scores = np.clip(run_mean + 15 * rng.standard_normal(n_instances), 0, 100)
                valid = rng.random(n_instances) < 0.9
                runs[str(r)] = float(scores.mean())
                rates[str(r)] = float(valid.mean())
                for i in range(n_instances):
                    lines.append({"dataset": ds_name, "run": r, "instance_id": f"{ds_name}-{i + 7 * r}",
                                  "metric": "synthetic", "score": float(scores[i]), "valid_format": bool(valid[i]),
                                  "metric_version": "synthetic"})
            datasets[ds_name] = {"metric": "conll_f1" if coref else "synthetic", "runs": runs, "format_rate": rates}
        summary = {"model": {"id": hf_id, "revision": "0" * 40}, "manifest_digest": DIGEST,
                   "prompt_digest": "p" * 64, "datasets": datasets}
        (sdir / "summary.json").write_text(json.dumps(summary))
        (sdir / "instance_scores.jsonl").write_text("".join(json.dumps(x) + "\n" for x in lines))
        run_info = {"schema_version": 1, "manifest_digest": DIGEST, "prompt_digest": "p" * 64,
                    "fingerprint": {"python": "synthetic"},
                    "models": {slug: {"id": hf_id, "revision": "0" * 40, "backend": {"chat_template_sha256": None}}}}
        (run_dir / "run.json").write_text(json.dumps(run_info))
        dirs.append(run_dir)
    return dirs


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--instances", type=int, default=100)
    args = ap.parse_args()
    from seam_repro.analysis.aso import AsoParams
    from seam_repro.analysis.report import build_report, write_report
    from seam_repro.analysis.submit import load_inputs

    with tempfile.TemporaryDirectory() as tmp:
        t0 = time.perf_counter()
        dirs = synth_run_dirs(Path(tmp), n_instances=args.instances)
        t1 = time.perf_counter()
        models = load_inputs(dirs)
        t2 = time.perf_counter()
        rep = build_report(models, None, AsoParams(seed=42))
        t3 = time.perf_counter()
        out = args.out or Path(tmp) / "report"
        write_report(rep, out)
        t4 = time.perf_counter()
    n_pairs = sum(len(d["pairs"]) for d in rep["datasets"].values())
    print(f"models={len(models)} datasets={len(rep['datasets'])} runs=10 instances/run={args.instances}")
    print(f"synthesize  {t1 - t0:6.2f} s")
    print(f"load+check  {t2 - t1:6.2f} s")
    print(f"ASO+stats   {t3 - t2:6.2f} s  ({n_pairs} ASO pairs, {(t3 - t2) / max(n_pairs, 1) * 1000:.1f} ms/pair)")
    print(f"write md/json/png {t4 - t3:6.2f} s")
    print(f"total       {t4 - t0:6.2f} s")
    memo_rows()


def memo_rows() -> None:
    """``build_report`` of an echo smoke run against the paper's table as shipped, without the shipped
    paper pairs (``known_pairs`` empty), and without the memo too."""
    from seam_repro.analysis import aso, report
    from seam_repro.analysis.reference import load_reference
    from seam_repro.analysis.submit import load_inputs

    with tempfile.TemporaryDirectory() as tmp:
        run = Path(tmp) / "smoke"
        subprocess.run([sys.executable, "-m", "seam_repro", "-q", "replay", str(REPO / "manifests" / "smoke.json"),
                        "--backend", "echo", "--no-fic", "--no-report", "--out", str(run)], check=True)
        models, ref = load_inputs([run]), load_reference("paper")
        remembered, shipped = aso.pair_aso, aso.known_pairs
        timings: dict[str, float] = {}
        computed: dict[str, int] = {}
        real_aso = aso.aso
        for label, memo, table in (("shipped", remembered, shipped), ("no table", remembered, dict),
                                   ("no table, no memo", remembered.__wrapped__, dict)):
            calls: list[int] = []
            aso.pair_aso = report.pair_aso = memo
            aso.known_pairs = table
            aso.aso = lambda *a, _calls=calls, **k: _calls.append(1) or real_aso(*a, **k)  # type: ignore[assignment]
            remembered.cache_clear()
            t0 = time.perf_counter()
            report.build_report(models, ref, aso.AsoParams(seed=42))
            timings[label], computed[label] = time.perf_counter() - t0, len(calls)
        aso.pair_aso = report.pair_aso = remembered
        aso.known_pairs, aso.aso = shipped, real_aso
    for label, t in timings.items():
        print(f"report smoke --reference paper, ASO+stats, {label:17s} {t:5.2f} s ({computed[label]} pairs computed)")
    print(f"the shipped paper pairs save {timings['no table'] - timings['shipped']:.2f} s, the memo "
          f"{timings['no table, no memo'] - timings['no table']:.2f} s more")

if __name__ == "__main__":
    main()
