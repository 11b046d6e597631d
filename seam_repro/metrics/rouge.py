"""ROUGE for MultiNews and OpenASP: port of upstream SEAM ``evaluation_classes/summarization.py``
plus the per-instance geometric mean of ``scripts/evaluation/statistical_analysis.py``.

Upstream: ``rouge_scorer.RougeScorer(['rouge1', 'rouge2', 'rougeL'], use_stemmer=True)``, the F
measure of each, then ``np.prod([R1, R2, RL]) ** (1/3) * 100`` per instance (an instance with
R2 = 0 scores 0). Upstream calls ``score(pred, target)`` (arguments swapped); F is symmetric, so
we call the API the right way round and report precision/recall with their correct meaning.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np


@dataclass(frozen=True)
class RougeResult:
    """ROUGE F of one instance (0-1 each) and their geometric mean on the 0-100 scale."""

    rouge1: float
    rouge2: float
    rougeL: float
    geo: float

    def details(self) -> dict[str, Any]:
        return {"rouge1_f": self.rouge1, "rouge2_f": self.rouge2, "rougeL_f": self.rougeL}


class _StemmedTokenizer:
    """rouge_score's ``DefaultTokenizer(use_stemmer=True)`` (its ``tokenize.tokenize`` with nltk's
    ``PorterStemmer()``), each distinct word stemmed once (the stemmer is a pure function of the
    word and a degenerate output repeats its words). The last two texts' tokens are kept: the
    scorer and :func:`lcs_length` both need them."""

    def __init__(self) -> None:
        from nltk.stem import porter

        self.stem = lru_cache(maxsize=1 << 16)(porter.PorterStemmer().stem)
        self._last: dict[str, list[str]] = {}

    def tokenize(self, text: str) -> list[str]:
        from rouge_score import tokenize

        tokens = self._last.get(text)
        if tokens is None:
            tokens = tokenize.tokenize(text, self)
            if len(self._last) >= 2:
                self._last.pop(next(iter(self._last)))
            self._last[text] = tokens
        return list(tokens)


@lru_cache(maxsize=1)
def _scorer() -> tuple[Any, _StemmedTokenizer]:
    """One shared R1/R2 scorer and its tokenizer (construction loads the Porter stemmer, once).
    R-L is :func:`lcs_length` on the same tokens: rouge_score fills a len x len table."""
    from rouge_score import rouge_scorer

    tokenizer = _StemmedTokenizer()
    return rouge_scorer.RougeScorer(["rouge1", "rouge2"], tokenizer=tokenizer), tokenizer


def lcs_length(a: Sequence[str], b: Sequence[str]) -> int:
    """Length of the longest common subsequence of two token lists, exactly what rouge_score's
    ``_lcs_table`` ends in, by the bit-parallel recurrence (Allison & Dix 1986; Hyyrö 2004): one bit
    per token of the longer list, one step of a few integer operations per token of the shorter:
    linear in the prediction for a reference of bounded length, where rouge_score's table is
    quadratic in time and memory."""
    long, short = (a, b) if len(a) >= len(b) else (b, a)
    if not short:
        return 0
    wanted = set(short)
    positions: dict[str, list[int]] = {}
    for i, tok in enumerate(long):
        if tok in wanted:
            positions.setdefault(tok, []).append(i)
    masks = {}
    for tok, where in positions.items():
        bits = bytearray((len(long) + 8) // 8)
        for i in where:
            bits[i >> 3] |= 1 << (i & 7)
        masks[tok] = int.from_bytes(bits, "little")
    full = (1 << len(long)) - 1
    v = full
    for tok in short:
        m = masks.get(tok)
        if m:
            u = v & m
            v = ((v + u) | (v - u)) & full
    return len(long) - v.bit_count()


def geometric_mean_100(r1: float, r2: float, rl: float) -> float:
    """``np.prod([r1, r2, rl]) ** (1/3) * 100``, the exact float expression upstream evaluates."""
    return float(np.prod(np.array([r1, r2, rl], dtype=np.float64)) ** (1 / 3) * 100)


def rouge_geo(prediction: str, target: str) -> RougeResult:
    """Score one summary against its gold summary (stemmed R1/R2/RL F, geometric mean x100), as
    ``RougeScorer(['rouge1', 'rouge2', 'rougeL'], use_stemmer=True).score(target, prediction)``."""
    from rouge_score import scoring

    scorer, tokenizer = _scorer()
    scores = scorer.score(target, prediction)
    r1, r2 = (float(scores[t].fmeasure) for t in ("rouge1", "rouge2"))
    gold, pred = tokenizer.tokenize(target), tokenizer.tokenize(prediction)
    rl = 0.0  # rouge_score's _score_lcs: 0 when either side has no tokens
    if gold and pred:
        lcs = lcs_length(gold, pred)
        rl = float(scoring.fmeasure(lcs / len(pred), lcs / len(gold)))
    return RougeResult(r1, r2, rl, geometric_mean_100(r1, r2, rl))


@lru_cache(maxsize=1)
def version() -> str:
    """Metric version string recorded with every score (library version + settings); the package
    metadata is read once per process, as every instance records it."""
    from importlib.metadata import version as pkg_version

    return f"rouge_geo/rouge-score=={pkg_version('rouge-score')}/stem=1/types=r1,r2,rL/geo-per-instance"
