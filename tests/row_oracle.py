"""The one-row sampling reference that the kit's all-rows samplers (``hf.RowSampler``, the
deterministic lanes through ``generate/sampling.draw_rows``) are held to bit for bit: an
inverse-CDF draw of one token from ``softmax(scores_row)`` with one float64 uniform of the row's own
CPU generator. It lives here, not in the package: only tests call it."""

from __future__ import annotations

from typing import Any


def sample_row(scores_row: Any, generator: Any) -> int:
    import torch

    u = torch.rand((), generator=generator, dtype=torch.float64).item()
    probs = torch.softmax(scores_row.double(), dim=-1)
    cdf = probs.cumsum(dim=-1)
    target = torch.tensor([u * cdf[-1].item()], dtype=torch.float64, device=cdf.device)
    idx = int(torch.searchsorted(cdf, target, right=True).item())
    return min(idx, scores_row.shape[-1] - 1)
