"""Throughput of the hf backend on the embedded SmolLM2 GGUF (CPU): batched vs one-at-a-time.

Target (issue 4): batching >= 2x tokens/s. The kit's overhead against a raw ``model.generate`` is a
row of benchmarks/bench.py. Prints figures only.
Run: python benchmarks/bench_generate.py [--threads 1] [--new-tokens 16] [--prompts 8] [--repeats 2]
"""

from __future__ import annotations

import argparse
import time


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=1)
    ap.add_argument("--new-tokens", type=int, default=16)
    ap.add_argument("--prompts", type=int, default=8)
    ap.add_argument("--repeats", type=int, default=2)
    args = ap.parse_args()

    import torch

    from seam_repro.config import GenerationSettings
    from seam_repro.generate.base import GenerationRequest
    from seam_repro.generate.embedded import load_embedded_backend
    from seam_repro.hashing import sha256_text

    torch.set_num_threads(args.threads)
    backend = load_embedded_backend()
    topics = ["rivers", "volcanoes", "bread", "chess", "the moon", "bees", "trains", "glass", "tea", "clocks"]
    prompts = [f"Write two sentences about {topics[i % len(topics)]} for a child, number {i}." for i in
               range(args.prompts)]
    reqs = [GenerationRequest("B", 0, str(i), p, sha256_text(p), 100 + i) for i, p in enumerate(prompts)]
    settings = GenerationSettings(max_new_tokens=args.new_tokens)
    backend.generate(reqs[:2], settings)  # warm-up

    def best(fn):  # best of N wall times, to damp noise from other processes on shared cores
        times = []
        for _ in range(args.repeats):
            t = time.perf_counter()
            value = fn()
            times.append(time.perf_counter() - t)
        return min(times), value

    t_batch, res_b = best(lambda: backend.generate(reqs, settings))
    t_single, res_s = best(lambda: [backend.generate([r], settings)[0] for r in reqs])
    toks_b = sum(r.n_output_tokens for r in res_b)
    toks_s = sum(r.n_output_tokens for r in res_s)
    same = [a.output for a in res_b] == [b.output for b in res_s]
    print(f"threads={args.threads} prompts={len(reqs)} max_new_tokens={args.new_tokens}")
    print(f"batched (bs={len(reqs)}): {toks_b / t_batch:8.1f} tok/s  ({t_batch:.2f}s)")
    print(f"one-at-a-time:       {toks_s / t_single:8.1f} tok/s  ({t_single:.2f}s)")
    print(f"batching speed-up:   {(toks_b / t_batch) / (toks_s / t_single):8.2f}x  (outputs identical: {same})")

    print("kit vs raw model.generate per decoding step: see the replay row of benchmarks/bench.py (make bench)")

if __name__ == "__main__":
    main()
