"""MuSiQue prompts. Port of upstream ``datasets_classes/qa/MuSiQue.py::get_sample``.

Upstream quirks kept in the ``upstream`` profile: no space after ``*Instructions*:``; the
paraphrase's ``output_format`` is never passed, so an empty string and a trailing space remain;
``?`` is appended to every question (``??`` for questions that already end with one); question
and ``*The documents*:`` share a line. ``seam-repro-1`` inserts the output format, adds ``?`` only
when missing, puts the documents header on its own line and writes demo answers as JSON.
"""

from __future__ import annotations

import json
from typing import Any

from seam_repro.render.common import number_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import documents_template


def _block(ctx: RunContext, question: str, documents: list[str], answer: Any = "") -> str:
    if ctx.upstream:
        return number_documents(documents, f"*Instructions*:{ctx.instructions} \n*Question*: {question}? "
                                "*The documents*:\n", f"\n*Answer*: {answer}")
    if isinstance(answer, dict):
        answer = json.dumps(answer, ensure_ascii=False)  # JSON, not a Python repr, in seam-repro-1
    output_format = ctx.paraphrase.get("output_format", "")
    q = question if question.rstrip().endswith("?") else f"{question}?"
    head = f"*Instructions*: {ctx.instructions} {output_format}".rstrip()
    return number_documents(documents, f"{head}\n*Question*: {q}\n*The documents*:\n", f"\n*Answer*: {answer}")


TEMPLATE = documents_template(_block, "question", "answer")
