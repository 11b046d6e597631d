"""Render prompts from recorded choices (stage *render*). One module per template family.

``render_instance`` is pure: instance + recorded run choices → (prompt text, gold target).
``render_manifest`` loads a manifest's sources and renders every recorded instance.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.instances import Instance
from seam_repro.render import coref, fusereviews, multinews, musique, openasp
from seam_repro.render.common import join_message
from seam_repro.render.context import RunContext

TASKS: dict[str, str] = {
    "ECB": "coreference",
    "SciCo": "coreference",
    "MultiNews": "summarization",
    "OpenASP": "summarization",
    "MusiQue": "qa",
    "FuseReviews": "fic",
}

_FEW_SHOTS = {
    "ECB": coref.few_shots,
    "SciCo": coref.few_shots,
    "MultiNews": multinews.few_shots,
    "OpenASP": openasp.few_shots,
    "MusiQue": musique.few_shots,
    "FuseReviews": fusereviews.few_shots,
}


def few_shots(ctx: RunContext) -> str:
    """The demonstrations block of a run (identical for every instance of the run)."""
    return _FEW_SHOTS[ctx.dataset](ctx)


def render_instance(
    instance: Instance, ctx: RunContext, demos: str, mention_ids: Sequence[int] | None = None
) -> tuple[str, Any]:
    """Return the exact user-message text and the gold target of one instance."""
    name = ctx.dataset
    if name == "ECB":
        block, target = coref.ecb_test_block(instance, ctx, mention_ids or ())
    elif name == "SciCo":
        block, target = coref.scico_test_block(instance, ctx, mention_ids or ())
    elif name == "FuseReviews":
        block, target = fusereviews.test_block(instance, ctx)
        return demos + block, target  # upstream concatenates demo_sep-terminated demos directly
    elif name == "MultiNews":
        block, target = multinews.test_block(instance, ctx)
    elif name == "OpenASP":
        block, target = openasp.test_block(instance, ctx)
    elif name == "MusiQue":
        block, target = musique.test_block(instance, ctx)
    else:  # pragma: no cover - guarded by config validation
        raise KeyError(name)
    return join_message(demos, block), target


def render_manifest(manifest_path: Any, data_dir: Any = None, prompts_dir: Any = None,
                    allow_unfrozen: bool = False) -> list[dict[str, Any]]:
    """Prompt records (docs/ARCHITECTURE.md) of every instance a manifest records, in order."""
    from seam_repro.manifest import load_manifest, render_records

    manifest = load_manifest(manifest_path)
    return render_records(manifest, data_dir=data_dir, prompts_dir=prompts_dir, base=manifest_path,
                          allow_unfrozen=allow_unfrozen)
