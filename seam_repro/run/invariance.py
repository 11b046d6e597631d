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
        backend = (gen or {}).get("backend")
        if backend == "echo" or (isinstance(k, str) and k != DEFAULT):
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
            invariant = all(x.get("backend") == "echo" or x.get("kernels") not in (None, DEFAULT) for x in (a, b))
            if not differ and invariant:
                notes.append(f"{la} and {lb}: comparable token for token (same model, settings and batch-invariant "
                             f"layout {a.get('kernels') or 'echo'}; on different machines, compare fingerprints).")
            else:
                why = f"{', '.join(differ)} differ" if differ else "not batch-invariant"
                notes.append(f"{la} and {lb}: same model, but not comparable token for token ({why}); compare "
                             "their scores.")
    return notes
