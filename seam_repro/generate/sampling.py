"""The logits filter and inverse-CDF draw both generation paths share (batched ``generate`` and the
batch-invariant lanes), so a row's token is drawn the same way whichever path runs it."""

from __future__ import annotations

from typing import Any


def filter_logits(logits: Any, temperature: float, top_k: int | None, top_p: float | None) -> Any:
    """Temperature, then top-k, then top-p, in the order and with the tie/keep-one rules of
    transformers' TemperatureLogitsWarper, TopKLogitsWarper and TopPLogitsWarper (the warpers the
    upstream pipeline applied). ``logits``: float tensor (rows, vocab); returns a new tensor."""
    import torch

    scores = logits.float() / temperature
    if top_k is not None and 0 < top_k < scores.shape[-1]:
        kth = torch.topk(scores, top_k, dim=-1).values[..., -1, None]
        scores = scores.masked_fill(scores < kth, float("-inf"))
    if top_p is not None and top_p < 1.0:
        sorted_logits, sorted_idx = torch.sort(scores, descending=False, dim=-1)
        cum = sorted_logits.softmax(dim=-1).cumsum(dim=-1)
        remove_sorted = cum <= (1 - top_p)
        remove_sorted[..., -1:] = False
        remove = remove_sorted.scatter(-1, sorted_idx, remove_sorted)
        scores = scores.masked_fill(remove, float("-inf"))
    return scores


def draw_rows(scores: Any, uniforms: list[float], temperature: float, top_k: int | None, top_p: float | None) -> Any:
    """Each row's token index: the inverse-CDF draw at ``uniforms[row]`` from the filtered softmax, all
    rows in one softmax/cumsum/searchsorted on the scores' own device (nothing read back per row)."""
    import torch

    u = torch.tensor(uniforms, dtype=torch.float64).to(scores.device)
    cdf = torch.softmax(filter_logits(scores, temperature, top_k, top_p).double(), dim=-1).cumsum(dim=-1)
    idx = torch.searchsorted(cdf, (u * cdf[:, -1]).unsqueeze(1), right=True).squeeze(1)
    return idx.clamp(max=scores.shape[-1] - 1)
