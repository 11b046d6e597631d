"""benchmarks/bench_planted.py plants scores through completions: the kit's own MuSiQue scorer must
give back exactly the F1 the stub intends (the benchmark checks it again end to end on every run)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "benchmarks"))
import bench_planted  # noqa: E402

from seam_repro.metrics.musique import upstream_score  # noqa: E402


@pytest.mark.parametrize("target", [4.0, 12.5, 33.3, 50.0, 61.7, 88.8, 99.0, 100.0])
@pytest.mark.parametrize("k", [0, 7, 39])
def test_planted_completion_scores_as_intended(k: int, target: float) -> None:
    text, y = bench_planted.completion(k, target)
    gold = {"answer_content": " ".join(bench_planted.answer_words(k)), "is_answerable": True}
    score, details = upstream_score(text, gold)
    assert details["parsed_dict"]
    assert score == pytest.approx(y, abs=1e-9)
    if 10 <= target <= 90:
        assert abs(y - target) <= 0.42


def test_grid_corners() -> None:
    assert bench_planted.f1_of(bench_planted.ANSWER_TOKENS, 0) == 100.0
    assert bench_planted.GRID_Y.min() == pytest.approx(bench_planted.f1_of(0, bench_planted.MAX_DISTRACTORS))
