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


def batch_invariant(entry: dict[str, Any]) -> bool:
    """True where the entry's outputs are a function of each instance alone (not of its batch)."""
    if entry.get("backend_name") == "echo":
        return True
    k = kernels(entry)
    return k is not None and k != DEFAULT


def session_batch_sizes(run_json: dict[str, Any]) -> set[int]:
    """Every batch size any replay session of this run folder used."""
    sizes = {s.get("batch_size") for s in run_json.get("sessions") or [] if isinstance(s, dict)}
    return {s for s in sizes if isinstance(s, int)}


def token_comparability(a: dict[str, Any], b: dict[str, Any], fp_a: dict[str, Any] | None = None,
                        fp_b: dict[str, Any] | None = None) -> tuple[bool, str]:
    """Whether two model entries' predictions can be expected to agree token for token, and why not.

    They can where both ran the same model revision, backend and generation settings under one
    batch-invariant layout on the same kind of machine (device, library versions); anything less
    leaves only score-level comparison."""
    for name in ("id", "revision", "backend_name"):
        if a.get(name) != b.get(name):
            return False, f"different {name} ({a.get(name)!r} vs {b.get(name)!r})"
    ga = {k: v for k, v in (a.get("generation") or {}).items() if k != "kernels"}
    gb = {k: v for k, v in (b.get("generation") or {}).items() if k != "kernels"}
    if ga != gb:
        diff = sorted(k for k in set(ga) | set(gb) if ga.get(k) != gb.get(k))
        return False, f"different generation settings ({', '.join(diff)})"
    if not (batch_invariant(a) and batch_invariant(b)):
        return False, ("not batch-invariant (kernels: "
                       f"{kernels(a) or 'unrecorded'} vs {kernels(b) or 'unrecorded'}): outputs may move with the batch")
    if kernels(a) != kernels(b):
        return False, f"different kernel layouts ({kernels(a)} vs {kernels(b)})"
    if fp_a is not None and fp_b is not None:
        for name in ("torch", "transformers", "cuda", "gpus", "machine"):
            if fp_a.get(name) != fp_b.get(name):
                return False, f"different machines ({name}: {fp_a.get(name)!r} vs {fp_b.get(name)!r})"
    return True, f"token for token: same model, settings and batch-invariant layout ({kernels(a) or 'echo'})"
