"""Grounding throughput of the IGCS suite on long sources (1k, 10k, 50k tokens).

Prints, per source length: the time to tokenise/index the source once, and spans/s for three kinds
of 20-token answer spans — verbatim copies (exact match), copies with two token edits (fuzzy
search) and spans absent from the source (a full fuzzy search that finds nothing) — plus how the
per-span cost grows with length, and a worst case where the candidate filter cannot prune. Synthetic text: Zipf-distributed pseudo-words with sentence
punctuation, seeded, so the figures are comparable between runs.

    python benchmarks/bench_grounding.py [--spans 40] [--seed 0]
"""

from __future__ import annotations

import argparse
import random
import time

from seam_repro.metrics import igcs

SYLLABLES = ["ka", "lo", "mi", "ne", "ru", "ta", "shi", "vo", "de", "pa", "zu", "gri", "fen", "bal"]


def vocabulary(size: int, rng: random.Random) -> list[str]:
    if size > len(SYLLABLES) ** 3:
        raise ValueError(f"at most {len(SYLLABLES) ** 3} distinct pseudo-words")
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(1, 3))))
    return sorted(words)


def make_source(n_tokens: int, rng: random.Random, vocab: list[str]) -> list[str]:
    """``n_tokens`` tokens: words drawn Zipf-like, a full stop every 8–25 words."""
    weights = [1 / (r + 1) for r in range(len(vocab))]
    words = rng.choices(vocab, weights=weights, k=n_tokens)
    out, until_stop = [], rng.randint(8, 25)
    for w in words:
        if len(out) >= n_tokens:
            break
        out.append(w)
        until_stop -= 1
        if until_stop == 0 and len(out) < n_tokens:
            out.append(".")
            until_stop = rng.randint(8, 25)
    return out[:n_tokens]


def detokenize(tokens: list[str]) -> str:
    return " ".join(tokens).replace(" .", ".")


def spans_of(kind: str, tokens: list[str], n: int, rng: random.Random) -> list[str]:
    out = []
    for _ in range(n):
        start = rng.randrange(0, len(tokens) - 20)
        span = list(tokens[start : start + 20])
        if kind == "fuzzy":
            span[5] = "zzqx"
            del span[12]
        elif kind == "absent":
            span = [f"nov{rng.randrange(10**6)}" for _ in range(20)]
        out.append(detokenize(span))
    return out


def per_span_seconds(spans: list[str], index: igcs.SourceIndex) -> tuple[float, dict[str, int]]:
    modes: dict[str, int] = {}
    t0 = time.perf_counter()
    for s in spans:
        g = igcs.ground_span(s, index)
        modes[g.mode] = modes.get(g.mode, 0) + 1
    return (time.perf_counter() - t0) / len(spans), modes


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--spans", type=int, default=40, help="spans per kind and length")
    ap.add_argument("--seed", type=int, default=0)
    args = ap.parse_args()
    rng = random.Random(args.seed)
    vocab = vocabulary(2000, rng)
    igcs.tokenize("warm up spaCy")
    rows = []
    print(f"{'tokens':>7} {'index s':>8} {'exact/s':>9} {'fuzzy/s':>9} {'absent/s':>9}  modes")
    for n in (1_000, 10_000, 50_000):
        tokens = make_source(n, rng, vocab)
        t0 = time.perf_counter()
        index = igcs.SourceIndex(detokenize(tokens))
        t_index = time.perf_counter() - t0
        res = {kind: per_span_seconds(spans_of(kind, tokens, args.spans, rng), index)
               for kind in ("exact", "fuzzy", "absent")}
        rows.append((n, res))
        modes = {k: v[1] for k, v in res.items()}
        print(f"{index.n_tokens(0):>7} {t_index:>8.3f} {1 / res['exact'][0]:>9.0f} {1 / res['fuzzy'][0]:>9.1f} "
              f"{1 / res['absent'][0]:>9.1f}  {modes}", flush=True)
    (n0, r0), (n1, r1) = rows[0], rows[-1]
    print(f"growth {n0}->{n1} tokens ({n1 // n0}x longer): per-span time x"
          + ", ".join(f"{r1[k][0] / r0[k][0]:.1f} ({k})" for k in ("exact", "fuzzy", "absent")))
    print("worst case (10-word vocabulary: every window passes the filter; absent 100-token spans, 10 edits):")
    tiny = vocabulary(10, rng)
    for n in (1_000, 10_000, 50_000):
        index = igcs.SourceIndex(" ".join(rng.choice(tiny) for _ in range(n)))
        spans = [" ".join(rng.choice(tiny) for _ in range(100)) for _ in range(3)]
        sec, modes = per_span_seconds(spans, index)
        print(f"{n:>7} tokens: {1 / sec:8.1f} spans/s  {modes}", flush=True)


if __name__ == "__main__":
    main()
