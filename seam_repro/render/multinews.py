"""MultiNews prompts: the base template. Port of upstream ``datasets_classes/mds/multi_news.py``
(which inherits ``Dataset.get_sample``). Test target: the reference summary string."""

from __future__ import annotations

from typing import Any

from seam_repro.render.common import base_block
from seam_repro.render.context import RunContext
from seam_repro.render.template import documents_template


def _block(ctx: RunContext, _text: str, documents: list[str], target: Any = "") -> str:
    """The base template has no per-instance text besides the documents: ``_text`` is unused."""
    return base_block(ctx.instructions, documents, target)


TEMPLATE = documents_template(_block, "target", "target")
few_shots = TEMPLATE.few_shots
"""Base-template demos (also ECB+ and SciCo, whose demo documents come pre-marked)."""
