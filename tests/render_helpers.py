"""One instance rendered as ``manifest.prompts`` renders a run's instances (the run's demos, the
template's separator, the test block), for tests that check a single prompt."""

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
    """The exact user-message text and the gold target of one instance."""
    template = ctx.spec.template_obj()
    block, target = template.test_block(instance, ctx, mention_ids)
    return template.prefix(demos) + block, target
