"""OpenASP prompts. Port of upstream ``datasets_classes/mds/aspect_based.py::get_sample``.

Upstream quirk kept in the ``upstream`` profile: the instruction paraphrase is drawn (a random
draw is consumed) but never written into the prompt. ``seam-repro-1`` puts it first.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.instances import Instance
from seam_repro.render.common import number_documents, shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template, demo_blocks


def _block(ctx: RunContext, aspect_label: str, documents: list[str], target: Any = "") -> str:
    head = f"Aspect label: {aspect_label}\n\nThe provided documents:\n"
    if not ctx.upstream:
        head = f"*Instructions*: {ctx.instructions}\n{head}"
    return number_documents(documents, head, f"\nAspect-based summary: {target}")


def few_shots(ctx: RunContext) -> str:
    return demo_blocks(ctx, lambda demo, docs: _block(ctx, demo.get("aspect_label", ""), docs, demo.get("target", "")))


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    return _block(ctx, instance.aspect_label or "", docs), instance.target


TEMPLATE = Template(few_shots, test_block)
