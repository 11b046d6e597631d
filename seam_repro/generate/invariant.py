"""Batch-invariant generation for the hf backend (``--deterministic``, the default where it applies).

``model.generate`` runs a batch as one left-padded tensor, so every kernel sees a shape set by the
neighbours and the logits move in their last bits. This module never lets a shape depend on the
batch: each prompt is prefilled alone, unpadded; decoding runs in lanes of a fixed row count
(:data:`LANE_ROWS`, empty slots are dummy rows); and each sequence attends over its own keys in a
pool slot whose capacity depends on its own length alone. A prediction is then a function of the
model, its prompt, seed and settings, the lane layout (:data:`KERNEL_SET`) and the machine. Models
it cannot cover are refused in one line (:func:`unsupported_reason`). Design and measurements:
docs/deterministic.md.
"""

from __future__ import annotations

import contextvars
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

from seam_repro.errors import InputError
from seam_repro.generate.sampling import draw_rows

KERNEL_SET = "seam-lanes-v1"
"""Version of the reduction layout below; two runs compare token for token only under the same one."""
LANE_ROWS = {"cpu": 8, "cuda": 32}
"""Rows of one decode lane per device type. CPU: the hf backend's default batch, so a default run pads
nothing. CUDA: 32 rows cost a one-row run only arithmetic the GPU would otherwise leave idle."""
MIN_CAPACITY = 128
ATTENTION_NAME = "seam_invariant"

_LANE: contextvars.ContextVar[Lane | None] = contextvars.ContextVar("seam_invariant_lane", default=None)


def lane_rows(device: str) -> int:
    """Rows of a decode lane on ``device`` (``cpu``, ``cuda:0``, ...)."""
    kind = str(device).split(":")[0]
    return LANE_ROWS.get(kind, LANE_ROWS["cpu"])


def capacity_for(n_prompt: int, max_new_tokens: int) -> int:
    """Key positions a sequence's pool slot holds: a power of two >= prompt + new tokens, so the
    attention shape depends on the sequence alone (and a lane holds few distinct capacities)."""
    need = max(MIN_CAPACITY, n_prompt + max_new_tokens)
    return 1 << (need - 1).bit_length()


def kernel_set(device: str) -> str:
    """The recorded name of the layout a run used on ``device``: the version and the lane rows."""
    return f"{KERNEL_SET}/rows={lane_rows(device)}"


def unsupported_reason(config: Any) -> str | None:
    """Why this architecture's generation cannot be made batch-invariant here, or None."""
    for key in ("num_local_experts", "num_experts", "n_routed_experts", "moe_num_experts"):
        if (getattr(config, key, None) or 0) > 1:
            return (f"it is a mixture-of-experts model ({key}={getattr(config, key)}): each expert's matrix "
                    "product takes the tokens routed to it, a count set by the batch neighbours")
    if getattr(config, "attn_logit_softcapping", None):
        return "its attention soft-caps the logits (attn_logit_softcapping), which this layout does not reproduce"
    window = getattr(config, "sliding_window", None)
    if window and getattr(config, "use_sliding_window", True) is not False:
        return f"it uses sliding-window attention (sliding_window={window}), which this layout does not reproduce"
    return None


@dataclass
class Lane:
    """One decode lane: ``rows`` slots, each holding a request index or None (a dummy row).
    ``pools[capacity][layer]`` is ``(keys, values)``, each ``rows x kv_heads x capacity x head_dim``; a
    sequence's keys sit at positions ``0..length-1`` of its slot."""

    rows: int
    slots: list[int | None]
    capacity: list[int]
    length: list[int]
    mode: str = "prefill"
    prefill_slot: int = 0
    pools: dict[int, dict[int, tuple[Any, Any]]] = field(default_factory=dict)
    groups: list[tuple[int, Any, Any, Any, Any]] = field(default_factory=list)
    """Decode step, per capacity present: ``(capacity, member slots, their write positions, member
    mask, attention mask)``, built once per step for every layer."""
    calls: int = 0

    def pool(self, capacity: int, layer: int, like: Any) -> tuple[Any, Any]:
        import torch

        per_layer = self.pools.setdefault(capacity, {})
        if layer not in per_layer:
            shape = (self.rows, like.shape[1], capacity, like.shape[3])
            per_layer[layer] = (torch.zeros(shape, dtype=like.dtype, device=like.device),
                                torch.zeros(shape, dtype=like.dtype, device=like.device))
        return per_layer[layer]

    def set_decode_groups(self, device: Any) -> None:
        """Masks for this step: a member slot attends to its positions ``0..length``; every other slot
        of the call attends to position 0 only (a finite dummy, never read back)."""
        import torch

        self.mode, self.groups = "decode", []
        lengths = torch.tensor(self.length, device=device)
        for cap in sorted({c for s, c in zip(self.slots, self.capacity, strict=True) if s is not None}):
            member = torch.tensor([s is not None and c == cap for s, c in zip(self.slots, self.capacity, strict=True)],
                                  device=device)
            positions = torch.arange(cap, device=device).unsqueeze(0)
            mask = torch.where(member.unsqueeze(1), positions <= lengths.unsqueeze(1), positions == 0)
            slots = member.nonzero().squeeze(1)
            self.groups.append((cap, slots, lengths[slots], member, mask.view(self.rows, 1, 1, cap)))


class LaneCache:
    """The ``cache`` object the model's attention layers call ``update`` on: it files each new key and
    value into the lane's pools (the attention function reads them there)."""

    is_compileable = False

    def __init__(self, lane: Lane):
        self.lane = lane
        self.updates = 0

    def update(self, key_states: Any, value_states: Any, layer_idx: int, *args: Any, **kwargs: Any) -> tuple[Any, Any]:
        lane, self.updates = self.lane, self.updates + 1
        if lane.mode == "prefill":
            s = lane.prefill_slot
            keys, values = lane.pool(lane.capacity[s], layer_idx, key_states)
            n = key_states.shape[2]
            keys[s, :, :n] = key_states[0]
            values[s, :, :n] = value_states[0]
            return key_states, value_states
        for cap, slots, at, _member, _mask in lane.groups:
            keys, values = lane.pool(cap, layer_idx, key_states)
            keys[slots, :, at] = key_states[slots, :, 0]
            values[slots, :, at] = value_states[slots, :, 0]
        return key_states, value_states

    def get_seq_length(self, layer_idx: int = 0) -> int:
        return 0


def invariant_attention(module: Any, query: Any, key: Any, value: Any, attention_mask: Any, dropout: float = 0.0,
                        scaling: float | None = None, **kwargs: Any) -> tuple[Any, None]:
    """transformers' attention-interface function for :data:`ATTENTION_NAME` (output ``B x L x H x D``).
    Prefill: causal attention over the one sequence's keys. Decode: one call per capacity present over
    the lane pool (query heads packed per key head), every other sequence's positions masked."""
    import torch
    import torch.nn.functional as F

    lane = _LANE.get()
    if lane is None:  # the model used outside the lanes (raw generate, a memory probe): plain SDPA
        from transformers.integrations.sdpa_attention import sdpa_attention_forward

        return sdpa_attention_forward(module, query, key, value, attention_mask, dropout=dropout, scaling=scaling,
                                      **kwargs)
    lane.calls += 1
    if lane.mode == "prefill":
        groups = query.shape[1] // key.shape[1]
        if groups > 1:
            key = key.repeat_interleave(groups, dim=1)
            value = value.repeat_interleave(groups, dim=1)
        out = F.scaled_dot_product_attention(query, key, value, is_causal=query.shape[2] > 1, scale=scaling)
        return out.transpose(1, 2).contiguous(), None
    rows, heads, _, dim = query.shape
    layer = module.layer_idx
    out = None
    for cap, _slots, _at, member, mask in lane.groups:
        keys, values = lane.pools[cap][layer]
        q = query.reshape(rows, keys.shape[1], heads // keys.shape[1], dim)
        o = F.scaled_dot_product_attention(q, keys, values, attn_mask=mask, scale=scaling)
        out = o if out is None else torch.where(member.view(rows, 1, 1, 1), o, out)
    assert out is not None
    return out.reshape(rows, 1, heads, dim), None


def install(model: Any) -> None:
    """Register :func:`invariant_attention` with transformers and switch ``model`` to it. Outside the
    lanes the model still attends as with ``sdpa`` (its masks are SDPA's), so other code may call it."""
    from transformers import AttentionInterface
    from transformers.masking_utils import ALL_MASK_ATTENTION_FUNCTIONS, sdpa_mask

    AttentionInterface.register(ATTENTION_NAME, invariant_attention)
    ALL_MASK_ATTENTION_FUNCTIONS.register(ATTENTION_NAME, sdpa_mask)
    try:
        model.set_attn_implementation(ATTENTION_NAME)
    except (AttributeError, ValueError, ImportError):
        for config in [model.config, *[getattr(model.config, k) for k in getattr(model.config, "sub_configs", {})]]:
            config._attn_implementation_internal = ATTENTION_NAME


@dataclass
class RowDraw:
    """One row's sampling state: its own generator, and the tokens drawn so far."""

    generator: Any
    tokens: list[int] = field(default_factory=list)
    done: bool = False

    def take(self, tok: int, settings: LaneSettings) -> None:
        self.tokens.append(int(tok))
        self.done = tok in settings.eos_ids or len(self.tokens) >= settings.max_new_tokens


def draw(scores: Any, rows: Sequence[RowDraw | None], settings: LaneSettings) -> list[int]:
    """Each live row's next token from ``scores`` (``rows x vocab``: one shape whatever the batch), by
    the row sampler's inverse-CDF draw from the row's own generator; dummy rows draw at a fixed 0.5."""
    import torch

    if not settings.do_sample:
        return scores.float().argmax(dim=-1).tolist()
    uniforms = [torch.rand((), generator=r.generator, dtype=torch.float64).item() if r is not None else 0.5
                for r in rows]
    return draw_rows(scores, uniforms, settings.temperature, settings.top_k, settings.top_p).tolist()


def _forward(model: Any, ids: Any, positions: Any, cache: LaneCache, keyword: str) -> Any:
    """One forward pass with ``cache`` under ``keyword`` and only the last position's logits. The lanes
    mask by themselves; a placeholder 4-D mask tells transformers a mask is already made, so it never
    asks the lane cache for the sizes of one."""
    import torch

    made = torch.ones((1, 1, 1, 1), dtype=torch.bool, device=ids.device)
    out = model(input_ids=ids, position_ids=positions, attention_mask=made, use_cache=True, logits_to_keep=1,
                **{keyword: cache})
    return out.logits[:, -1, :]


@dataclass
class LaneSettings:
    """What the loop needs of the generation settings, resolved by the backend."""

    max_new_tokens: int
    do_sample: bool
    temperature: float
    top_k: int | None
    top_p: float | None
    eos_ids: list[int]
    pad_id: int


def generate_lanes(model: Any, prompts: Sequence[list[int]], seeds: Sequence[int], settings: LaneSettings, *,
                   rows: int, step_hook: Callable[[], None] | None = None) -> list[list[int]]:
    """New token ids per prompt (an end-of-sequence token included where one was drawn), lane by lane
    of ``rows`` prompts in the given order."""
    import inspect

    # the name model.forward takes its cache by (transformers renamed past_key_values to cache in 5.2x)
    keyword = "cache" if "cache" in inspect.signature(model.forward).parameters else "past_key_values"
    return [tokens for start in range(0, len(prompts), rows)
            for tokens in _run_lane(model, list(prompts[start:start + rows]), list(seeds[start:start + rows]),
                                    settings, rows, step_hook, keyword)]


def _run_lane(model: Any, prompts: list[list[int]], seeds: list[int], settings: LaneSettings, rows: int,
              step_hook: Callable[[], None] | None, keyword: str) -> list[list[int]]:
    import torch

    device = model.get_input_embeddings().weight.device
    n = len(prompts)
    lane = Lane(rows=rows, slots=[*range(n), *[None] * (rows - n)],
                capacity=[capacity_for(len(p), settings.max_new_tokens) for p in prompts] + [MIN_CAPACITY] * (rows - n),
                length=[len(p) for p in prompts] + [0] * (rows - n))
    cache = LaneCache(lane)
    states = [RowDraw(torch.Generator(device="cpu").manual_seed(int(s))) for s in seeds]
    token = _LANE.set(lane)
    try:
        with torch.inference_mode():
            for s, ids in enumerate(prompts):
                lane.mode, lane.prefill_slot = "prefill", s
                logits = _forward(model, torch.tensor([ids], device=device),
                                  torch.arange(len(ids), device=device).unsqueeze(0), cache, keyword)
                states[s].take(draw(logits, [states[s]], settings)[0], settings)
            # every attention layer must have gone through the lane (a model whose attention bypasses
            # transformers' attention interface, e.g. older remote code, would silently not be invariant)
            layers = getattr(model.config, "num_hidden_layers", None)
            if not lane.calls or not cache.updates or (layers and cache.updates % layers):
                raise InputError("--deterministic", "this model's attention does not go through "
                                 "transformers' attention interface, so its generation cannot be made "
                                 "batch-invariant; run with --no-deterministic")
            live = [s for s in range(n) if not states[s].done]
            while live:
                lane.slots = [s if s in live else None for s in range(rows)]
                lane.set_decode_groups(device)
                ids = [states[s].tokens[-1] if s in live else settings.pad_id for s in range(rows)]
                pos = [lane.length[s] if s in live else 0 for s in range(rows)]
                logits = _forward(model, torch.tensor(ids, device=device).unsqueeze(1),
                                  torch.tensor(pos, device=device).unsqueeze(1), cache, keyword)
                drawn = draw(logits, [states[s] if s in live else None for s in range(rows)], settings)
                for s in live:
                    lane.length[s] += 1
                    states[s].take(drawn[s], settings)
                live = [s for s in live if not states[s].done]
                if step_hook is not None:
                    step_hook()
    finally:
        _LANE.reset(token)
    return [st.tokens for st in states]

