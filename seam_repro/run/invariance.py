"""Whether a model's predictions in a run folder depend on how they were batched, and whether two
runs can be compared token for token.

A run's model entry records, in ``generation["kernels"]``, the generation layout it ran under:
``default`` (batched ``model.generate``: an output may move with batch size, neighbours and padding),
a batch-invariant layout (``seam-lanes-v1/rows=8``, hf ``--deterministic``; ``vllm-batch-invariant/...``),
or nothing (runs made before the switch existed, and the echo backend, which draws from the seed alone).
"""

from __future__ import annotations

from typing import Any

DEFAULT = "default"


def kernels(entry: dict[str, Any]) -> str | None:
    """The layout a model entry of run.json ran under, or None where it predates the record."""
    value = (entry.get("generation") or {}).get("kernels")
    return value if isinstance(value, str) else None


def invariant_layout(backend: str | None, layout: str | None) -> bool:
    """True where outputs made by ``backend`` under ``layout`` are a function of each instance alone."""
    return backend == "echo" or (isinstance(layout, str) and layout != DEFAULT)


def batch_invariant(entry: dict[str, Any]) -> bool:
    """True where a run.json model entry's outputs do not depend on their batch."""
    return invariant_layout(entry.get("backend_name"), kernels(entry))


def session_batch_sizes(run_json: dict[str, Any]) -> set[int]:
    """Every batch size any replay session of this run folder used."""
    sizes = {s.get("batch_size") for s in run_json.get("sessions") or [] if isinstance(s, dict)}
    return {s for s in sizes if isinstance(s, int)}


TOKEN_FIELDS = ("backend", "prompt_path", "max_new_tokens", "temperature", "do_sample", "top_p", "truncation", "dtype",
                "model_args", "kernels")
"""Fields of a scored protocol's ``generation`` that two runs must share to agree token for token
(batch size, shard, limit and selection are left out: under a batch-invariant layout they do not matter)."""


def scored_comparability(items: list[tuple[str, str, str, dict[str, Any] | None]]) -> list[str]:
    """Report and diff notes from scored results, ``(label, model id, revision, protocol generation)``
    each: whether each run's outputs are batch-invariant, and for every two runs of the same model
    whether their predictions can be compared token for token, or only by score."""
    notes = []
    for label, _mid, _rev, gen in items:
        k = (gen or {}).get("kernels")
        if invariant_layout((gen or {}).get("backend"), k):
            notes.append(f"{label}: batch-invariant outputs ({k or 'echo'}): each prediction regenerates byte "
                         "for byte at any batch size on the same machine (`seam-repro recheck`).")
        else:
            notes.append(f"{label}: outputs from {k or 'unrecorded'} kernels: a prediction may change with batch "
                         "size, neighbours and padding, so only scores, not tokens, compare across runs.")
    for i, (la, ma, ra, ga) in enumerate(items):
        for lb, mb, rb, gb in items[i + 1:]:
            if (ma, ra) != (mb, rb):
                continue
            a, b = ga or {}, gb or {}
            differ = [f for f in TOKEN_FIELDS if a.get(f) != b.get(f)]
            invariant = all(invariant_layout(x.get("backend"), x.get("kernels")) for x in (a, b))
            if not differ and invariant:
                notes.append(f"{la} and {lb}: comparable token for token (same model, settings and batch-invariant "
                             f"layout {a.get('kernels') or 'echo'}; on different machines, compare fingerprints).")
            else:
                why = f"{', '.join(differ)} differ" if differ else "not batch-invariant"
                notes.append(f"{la} and {lb}: same model, but not comparable token for token ({why}); compare "
                             "their scores.")
    return notes
