"""MultiNews prompts: the base template. Port of upstream ``datasets_classes/mds/multi_news.py``
(which inherits ``Dataset.get_sample``). Test target: the reference summary string."""

from __future__ import annotations

from typing import Any

from seam_repro.instances import Instance
from seam_repro.render.common import base_block, shuffle_documents
from seam_repro.render.context import RunContext


def few_shots(ctx: RunContext) -> str:
    blocks = []
    for demo in ctx.demos():
        docs = shuffle_documents(demo.pop("documents"), ctx.max_num_docs, ctx.doc_order)
        blocks.append(base_block(ctx.instructions, docs, demo.get("target", "")))
    return "\n\n".join(blocks)


def test_block(instance: Instance, ctx: RunContext) -> tuple[str, Any]:
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    return base_block(ctx.instructions, docs), instance.target
