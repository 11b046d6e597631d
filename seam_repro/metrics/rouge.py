"""ROUGE for MultiNews and OpenASP: port of upstream SEAM ``evaluation_classes/summarization.py``
plus the per-instance geometric mean of ``scripts/evaluation/statistical_analysis.py``.

Upstream: ``rouge_scorer.RougeScorer(['rouge1', 'rouge2', 'rougeL'], use_stemmer=True)``, the F
measure of each, then ``np.prod([R1, R2, RL]) ** (1/3) * 100`` per instance (an instance with
R2 = 0 scores 0). Upstream calls ``score(pred, target)`` (arguments swapped); F is symmetric, so
we call the API the right way round and report precision/recall with their correct meaning.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

ROUGE_TYPES: tuple[str, ...] = ("rouge1", "rouge2", "rougeL")


@dataclass(frozen=True)
class RougeResult:
    """ROUGE F of one instance (0-1 each) and their geometric mean on the 0-100 scale."""

    rouge1: float
    rouge2: float
    rougeL: float
    geo: float

    def details(self) -> dict[str, Any]:
        return {"rouge1_f": self.rouge1, "rouge2_f": self.rouge2, "rougeL_f": self.rougeL}


@lru_cache(maxsize=1)
def _scorer() -> Any:
    """One shared scorer: construction loads the Porter stemmer, which is worth doing once."""
    from rouge_score import rouge_scorer

    return rouge_scorer.RougeScorer(list(ROUGE_TYPES), use_stemmer=True)


def geometric_mean_100(r1: float, r2: float, rl: float) -> float:
    """``np.prod([r1, r2, rl]) ** (1/3) * 100``, the exact float expression upstream evaluates."""
    return float(np.prod(np.array([r1, r2, rl], dtype=np.float64)) ** (1 / 3) * 100)


def rouge_geo(prediction: str, target: str) -> RougeResult:
    """Score one summary against its gold summary (stemmed R1/R2/RL F, geometric mean x100)."""
    scores = _scorer().score(target, prediction)
    r1, r2, rl = (float(scores[t].fmeasure) for t in ROUGE_TYPES)
    return RougeResult(r1, r2, rl, geometric_mean_100(r1, r2, rl))


def version() -> str:
    """Metric version string recorded with every score (library version + settings)."""
    from importlib.metadata import version as pkg_version

    return f"rouge_geo/rouge-score=={pkg_version('rouge-score')}/stem=1/types=r1,r2,rL/geo-per-instance"
