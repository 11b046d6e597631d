"""Throughput of coreference scoring; prints figures, asserts nothing.

1. ``conll-score`` (all 5 metrics) on the reference scorer's golden test files replicated into one
   multi-document key/response pair: documents per second, in-process and via the CLI.
2. If ``perl`` is installed and ``$CONLL_SCORER`` points at a checkout's ``scorer.pl`` (not fetched
   or shipped by this kit), the same files through ``perl scorer.pl all``, and the speed ratio.
3. ``score_run`` on a synthetic SEAM-like run (upstream mode): instances per second.

Usage: python benchmarks/bench_coref.py [--copies N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from bench import best_of

from seam_repro.metrics.conll_io import read_conll_file, score_conll_files
from seam_repro.metrics.coref import METRICS
from seam_repro.metrics.coref_parse import score_run

GOLDEN = Path(__file__).resolve().parents[2] / "shared" / "golden" / "conll-reference-scorer"


def _renamed(text: str, name: str) -> str:
    lines = text.splitlines(keepends=True)
    assert lines[0].startswith("#begin document")
    return f"#begin document ({name}); part 000\n" + "".join(lines[1:])


def build_files(out: Path, copies: int) -> tuple[Path, Path, int]:
    """Key and response files with every usable golden case repeated ``copies`` times."""
    import json

    cases = json.loads((GOLDEN / "expected_metrics.json").read_text())["cases"]
    key_parts, resp_parts = [], []
    usable = []
    for c in cases:
        k, r = GOLDEN / c["key_file"], GOLDEN / c["response_file"]
        # repeated mentions add up over a file until `scorer.pl all` refuses it: leave those out
        if score_conll_files(k, r, ["muc"]).repeated_mentions:
            continue
        usable.append((c["id"], k.read_text(), r.read_text()))
    for i in range(copies):
        for cid, k, r in usable:
            key_parts.append(_renamed(k, f"{cid}_{i}"))
            resp_parts.append(_renamed(r, f"{cid}_{i}"))
    key, resp = out / "key.conll", out / "response.conll"
    key.write_text("".join(key_parts))
    resp.write_text("".join(resp_parts))
    return key, resp, len(usable) * copies


def synthetic_run(n: int, rng: random.Random) -> tuple[list, list]:
    gold, pred = [], []
    for i in range(n):
        ids = rng.sample(range(1, 100), 50)
        clusters: list[list[int]] = []
        for m in ids:
            if clusters and rng.random() < 0.6:
                rng.choice(clusters).append(m)
            else:
                clusters.append([m])
        gold.append((f"t{i}", clusters))
        answer = [rng.sample(ids, rng.randint(2, 6)) for _ in range(rng.randint(3, 10))]
        pred.append((f"t{i}", "*Answer*: " + str(answer)))
    return gold, pred


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--copies", type=int, default=100)
    args = ap.parse_args()
    if not GOLDEN.is_dir():
        print(f"golden files not found at {GOLDEN}; nothing to benchmark")
        return
    with tempfile.TemporaryDirectory() as tmp:
        key, resp, n_docs = build_files(Path(tmp), args.copies)
        assert len(read_conll_file(key).documents) == n_docs
        t_lib = best_of(lambda: score_conll_files(key, resp, list(METRICS)), 3)
        print(f"documents: {n_docs} ({args.copies} copies of the golden cases without repeated mentions)")
        print(f"conll-score (library, all metrics): {t_lib:.3f} s = {n_docs / t_lib:,.0f} documents/s")
        cli = [sys.executable, "-m", "seam_repro", "conll-score", str(key), str(resp)]
        t_cli = best_of(lambda: subprocess.run(cli, check=True, capture_output=True), repeat=1)
        print(f"conll-score (CLI process, all metrics): {t_cli:.3f} s = {n_docs / t_cli:,.0f} documents/s")
        scorer = os.environ.get("CONLL_SCORER", "")
        if shutil.which("perl") and scorer and Path(scorer).is_file():
            perl = ["perl", scorer, "all", str(key), str(resp)]
            t_perl = best_of(lambda: subprocess.run(perl, check=True, capture_output=True), repeat=1)
            print(f"perl scorer.pl all: {t_perl:.3f} s = {n_docs / t_perl:,.0f} documents/s")
            print(f"speed ratio (perl time / CLI time): {t_perl / t_cli:.1f}x")
        else:
            print("perl parity speed not measured (needs perl and $CONLL_SCORER=<path to scorer.pl>)")
    gold, pred = synthetic_run(100, random.Random(0))
    t_run = best_of(lambda: score_run(gold, pred, "upstream"), 3)
    print(
        f"score_run (100 instances x 50 mentions, upstream mode): {t_run * 1000:.1f} ms = {100 / t_run:,.0f} instances/s"
    )


if __name__ == "__main__":
    main()
