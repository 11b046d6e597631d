"""Replay throughput by batch size: the hf backend on the embedded SmolLM2 (CPU), demo prompts.

What it measures: ``make demo``'s work (the smoke manifest's prompts, its sampling settings, batches
cut from replay's own length-sorted order) at batch sizes 1, 2, 4, 8, 16, as generated tokens per
second of wall time (best of ``--repeats``) and CPU seconds. The replay default on CPU
(``generate/hf.py::CPU_BATCH_SIZE``) is the best of these on the 2-core machine the kit is
developed on; rerun this to check it on another machine. The load average is printed: on shared
cores, compare sizes only within one run.

Run: python benchmarks/bench_batch.py [--prompts 36] [--new-tokens 48] [--sizes 1,2,4,8,16] [--repeats 1]
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(REPO)]  # measure this checkout, not another installed copy


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--prompts", type=int, default=36, help="smoke prompts used (all 36; fewer: spread over the lengths)")
    ap.add_argument("--new-tokens", type=int, default=None, help="default: the manifest's max_new_tokens")
    ap.add_argument("--sizes", default="1,2,4,8,16")
    ap.add_argument("--repeats", type=int, default=1)
    args = ap.parse_args()
    os.environ.setdefault("TQDM_DISABLE", "1")
    os.environ.setdefault("HF_HUB_DISABLE_PROGRESS_BARS", "1")

    import torch

    from seam_repro.config import GenerationSettings
    from seam_repro.generate.base import GenerationRequest
    from seam_repro.generate.embedded import load_embedded_backend
    from seam_repro.manifest.prompts import render_records
    from seam_repro.manifest.trust import load_trusted
    from seam_repro.run.replay import length_order

    smoke = REPO / "manifests" / "smoke.json"
    tm = load_trusted(smoke)
    manifest, records = tm.manifest, render_records(tm)
    settings = GenerationSettings.from_manifest(manifest["config"].get("generation"))
    if args.new_tokens:
        settings = settings._replace(max_new_tokens=args.new_tokens)
    by_length = sorted(records, key=lambda r: len(r["prompt"]))
    step = len(by_length) / min(args.prompts, len(by_length))
    chosen = [by_length[int(i * step)] for i in range(min(args.prompts, len(by_length)))]
    order = length_order([len(r["prompt"]) for r in chosen], range(len(chosen)))
    reqs = [GenerationRequest(r["dataset"], r["run"], r["instance_id"], r["prompt"], r["prompt_sha256"],
                              r["gen_seed"]) for r in (chosen[j] for j in order)]
    backend = load_embedded_backend()
    backend.generate(reqs[-1:], GenerationSettings(max_new_tokens=2))  # warm-up
    print(f"load average before: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}; {os.cpu_count()} cores, "
          f"{torch.get_num_threads()} torch threads; {len(reqs)} smoke prompts, max_new_tokens "
          f"{settings.max_new_tokens}")
    print("| batch size | generated tok/s (wall) | wall s | CPU s | prompt tokens | generated tokens |")
    print("|---|---|---|---|---|---|")
    for size in (int(s) for s in args.sizes.split(",") if s):
        best_wall, best_cpu, n_out, n_in = float("inf"), float("inf"), 0, 0
        for _ in range(args.repeats):
            w0, c0 = time.perf_counter(), time.process_time()
            results = [res for i in range(0, len(reqs), size) for res in backend.generate(reqs[i:i + size], settings)]
            best_wall = min(best_wall, time.perf_counter() - w0)
            best_cpu = min(best_cpu, time.process_time() - c0)
            n_out = sum(r.n_output_tokens for r in results)
            n_in = sum(r.n_prompt_tokens for r in results)
        print(f"| {size} | {n_out / best_wall:.1f} | {best_wall:.1f} | {best_cpu:.1f} | {n_in} | {n_out} |", flush=True)
    print(f"load average after: {'/'.join(f'{x:.2f}' for x in os.getloadavg())}")


if __name__ == "__main__":
    main()
