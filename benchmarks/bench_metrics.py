"""Throughput of each metric (instances/s) on synthetic inputs; prints one line per metric.

FIC uses a tiny random T5 (d_model 16, 1 layer) and a WordLevel-style tokenizer: it measures the
scoring plumbing only, NOT flan-t5-xxl / the coverage model, whose cost dominates real runs.
Run: python benchmarks/bench_metrics.py [--n 200]
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from seam_repro.metrics import musique, rouge  # noqa: E402
from seam_repro.scoring.extract import extract_clean, extract_upstream  # noqa: E402

WORDS = ("storm hotel room staff clean coast city river answer police report said thousands people "
         "evacuated officials government election vote market price company").split()


def text(rng: random.Random, n: int) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(n)) + "."


def rate(name: str, n: int, fn: Callable[[int], object]) -> None:
    start = time.perf_counter()
    for i in range(n):
        fn(i)
    secs = time.perf_counter() - start
    print(f"{name:<42} {n / secs:>10.1f} instances/s   ({n} in {secs:.2f}s)")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=200)
    n = ap.parse_args().n
    rng = random.Random(0)
    summaries = [(text(rng, 250), text(rng, 260)) for _ in range(n)]
    rate("rouge_geo (250-word summaries)", n, lambda i: rouge.rouge_geo(*summaries[i]))
    qa = [f"{{'is_answerable': True, 'answer_content': '{text(rng, 3)}'}}" for _ in range(n)]
    gold = {"is_answerable": True, "answer_content": "storm coast"}
    rate("musique_f1 (upstream str-dict)", n, lambda i: musique.upstream_f1(qa[i], gold))
    rate("musique_corrected", n, lambda i: musique.corrected(qa[i], gold, ["coast storm"]))
    raw = [f"*Answer*: {text(rng, 200)}\n\n*Instructions*: {text(rng, 50)}" for _ in range(n)]
    rate("extract_upstream + extract_clean", n, lambda i: (extract_upstream(raw[i]), extract_clean(raw[i])))
    try:
        sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "tests"))
        import spacy
        from test_fic import tiny_t5, tiny_tokenizer

        from seam_repro.metrics.fic import FicScorer
    except ImportError as exc:
        print(f"fic_f1: skipped ({exc})")
        return
    tok = tiny_tokenizer()
    nlp = spacy.blank("en")
    nlp.add_pipe("sentencizer")
    scorer = FicScorer((tok, tiny_t5(0, len(tok))), (tok, tiny_t5(1, len(tok))), (nlp, "blank"))
    m = max(10, n // 10)
    preds = [" ".join(text(rng, 15) for _ in range(4)) for _ in range(m)]
    target = {"highlights_concat": text(rng, 120), "review_side_alignments": [text(rng, 8) for _ in range(6)]}
    rate("fic_f1 (TINY random T5, plumbing only)", m, lambda i: scorer.score(preds[i], target))


if __name__ == "__main__":
    main()
