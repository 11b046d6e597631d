"""The CPU RowSampler draws all rows in one call; every pick must equal the row-by-row reference
(``sample_row``) bit for bit, at the embedded model's vocabulary size and the paper's settings."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from row_oracle import sample_row  # noqa: E402

from seam_repro.generate.hf import RowSampler  # noqa: E402
from seam_repro.generate.sampling import filter_logits  # noqa: E402


@pytest.mark.parametrize("top_k,top_p", [(50, None), (5, 0.5)])
def test_batched_rows_equal_row_by_row(top_k: int | None, top_p: float | None) -> None:
    gen = torch.Generator().manual_seed(3)
    seeds = [11, 22, 33, 44]
    batched = RowSampler(seeds, 0.8, top_k, top_p)
    reference = [torch.Generator(device="cpu").manual_seed(s) for s in seeds]
    for step in range(6):
        scores = torch.randn(len(seeds), 49152, generator=gen) * (1 + step % 5)
        picked = batched(None, scores).argmax(dim=-1).tolist()
        filtered = filter_logits(scores, 0.8, top_k, top_p)
        want = [sample_row(filtered[r], reference[r]) for r in range(len(seeds))]
        assert picked == want, step


def test_batched_cdf_equals_row_cdf_bitwise() -> None:
    gen = torch.Generator().manual_seed(9)
    scores = filter_logits(torch.randn(8, 49152, generator=gen) * 3, 0.8, 50, None)
    together = torch.softmax(scores.double(), dim=-1).cumsum(dim=-1)
    for r in range(8):
        assert torch.equal(together[r], torch.softmax(scores[r].double(), dim=-1).cumsum(dim=-1))
