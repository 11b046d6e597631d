"""MultiNews prompts: the base template. Port of upstream ``datasets_classes/mds/multi_news.py``
(which inherits ``Dataset.get_sample``). Test target: the reference summary string."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.instances import Instance
from seam_repro.render.common import base_block, shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template, demo_blocks


def few_shots(ctx: RunContext) -> str:
    """Base-template demos (also ECB+ and SciCo, whose demo documents come pre-marked)."""
    return demo_blocks(ctx, lambda demo, docs: base_block(ctx.instructions, docs, demo.get("target", "")))


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    return base_block(ctx.instructions, docs), instance.target


TEMPLATE = Template(few_shots, test_block)
