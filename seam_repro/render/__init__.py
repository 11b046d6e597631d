"""Render prompts from recorded choices (stage *render*). One module per template family; which
template a dataset uses is declared by its spec (``data/suites/<suite>.json``), which the run
context carries, not coded here.

``render_instance`` is pure: instance + recorded run choices → (prompt text, gold target). Rendering
a whole manifest is ``manifest.prompts.render_records`` (manifest imports render, never the reverse).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.instances import Instance
from seam_repro.render.context import RunContext


def few_shots(ctx: RunContext) -> str:
    """The demonstrations block of a run (identical for every instance of the run)."""
    return ctx.spec.template_obj().few_shots(ctx)


def render_instance(instance: Instance, ctx: RunContext, demos: str,
                    mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    """Return the exact user-message text and the gold target of one instance."""
    template = ctx.spec.template_obj()
    block, target = template.test_block(instance, ctx, mention_ids)
    return template.message(demos, block), target
