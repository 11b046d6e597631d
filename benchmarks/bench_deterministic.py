"""Deterministic (batch-invariant) vs default generation on CPU: whole ``replay`` commands, paired.

What it measures: ``seam-repro replay manifests/smoke.json --no-score`` on the embedded SmolLM2 and on
a tiny random Llama folder, once with ``--deterministic`` and once with ``--no-deterministic``,
alternating, each at the backend's default batch (CPU: 8, one lane), best wall time of ``--repeats``.
The ratio is the mode's cost a user waits for (issue target: at most 1.3x). The GPU figures come from
tools/gpu_check.sh (benchmarks/results/gpu_check-h200-*.md). Load average is printed: on shared cores,
compare only within one run.

Run: python benchmarks/bench_deterministic.py [--repeats 2] [--limit 1] [--models embedded,tiny]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO), str(REPO / "tests")]


def replay(model: str | None, out: Path, det: bool, limit: int | None, threads: int) -> float:
    args = [sys.executable, "-m", "seam_repro", "-q", "replay", str(REPO / "manifests" / "smoke.json"), "--out",
            str(out), "--no-score", "--threads", str(threads), "--deterministic" if det else "--no-deterministic"]
    if model is not None:
        args += ["--model", model, "--model-args", "device_map=cpu"]
    if limit is not None:
        args += ["--limit", str(limit)]
    t = time.perf_counter()
    subprocess.run(args, check=True, cwd=REPO, stdout=subprocess.DEVNULL,
                   env={**os.environ, "TQDM_DISABLE": "1", "HF_HUB_DISABLE_PROGRESS_BARS": "1"})
    return time.perf_counter() - t


def tiny_model(root: Path) -> Path:
    import json

    from tiny_models import save_tiny_llama

    prompts = root / "prompts.jsonl"
    subprocess.run([sys.executable, "-m", "seam_repro", "prompts", str(REPO / "manifests" / "smoke.json"), "-o",
                    str(prompts)], check=True, cwd=REPO)
    texts = [json.loads(line)["prompt"] for line in prompts.read_text("utf-8").splitlines()]
    return save_tiny_llama(root / "tiny-llama", texts, vocab=2048, hidden=256, intermediate=688, layers=4, heads=8,
                           kv_heads=2)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeats", type=int, default=2)
    ap.add_argument("--limit", type=int, default=None, help="--limit per (dataset, run); default: all 36 prompts")
    ap.add_argument("--models", default="embedded,tiny")
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        models = {"embedded": None, "tiny": None}
        if "tiny" in args.models:
            models["tiny"] = str(tiny_model(root))
        print(f"load average at start: {os.getloadavg()[0]:.2f}; {args.threads} torch threads; "
              f"{'all 36' if args.limit is None else f'{args.limit} per (dataset, run) of the'} smoke prompts")
        print("| model | default s | deterministic s | ratio |\n|---|---:|---:|---:|")
        for name in args.models.split(","):
            best = {True: float("inf"), False: float("inf")}
            for r in range(args.repeats):
                for det in (False, True) if r % 2 == 0 else (True, False):
                    best[det] = min(best[det], replay(models[name], root / f"{name}-{det}-{r}", det, args.limit,
                                                      args.threads))
            print(f"| {name} | {best[False]:.1f} | {best[True]:.1f} | {best[True] / best[False]:.2f}x |", flush=True)
        print(f"load average at end: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
