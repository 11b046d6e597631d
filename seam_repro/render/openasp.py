"""OpenASP prompts. Port of upstream ``datasets_classes/mds/aspect_based.py::get_sample``.

Upstream quirk kept in the ``upstream`` profile: the instruction paraphrase is drawn (a random
draw is consumed) but never written into the prompt. ``seam-repro-1`` puts it first.
"""

from __future__ import annotations

from typing import Any

from seam_repro.render.common import number_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import documents_template


def _block(ctx: RunContext, aspect_label: str, documents: list[str], target: Any = "") -> str:
    head = f"Aspect label: {aspect_label}\n\nThe provided documents:\n"
    if not ctx.upstream:
        head = f"*Instructions*: {ctx.instructions}\n{head}"
    return number_documents(documents, head, f"\nAspect-based summary: {target}")


TEMPLATE = documents_template(_block, "aspect_label", "target")
