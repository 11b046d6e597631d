"""A prompt template: how a run's demonstrations and one test instance become the user message."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, NamedTuple

from seam_repro.instances import Instance
from seam_repro.render.common import shuffle_documents
from seam_repro.render.context import RunContext

TestBlock = Callable[[Instance, RunContext, Sequence[int] | None], tuple[str, Any]]


class Template(NamedTuple):
    """A dataset's renderer."""

    few_shots: Callable[[RunContext], str]
    """The demonstrations block of a run (identical for every instance of the run)."""
    test_block: TestBlock
    """(instance, run context, drawn mention ids) -> (test block text, gold target)."""
    separator: str = "\n\n"
    """Between demos and the test block (upstream ``get_sample2msg``; FuseReviews uses none)."""

    def prefix(self, demos: str) -> str:
        """What every message of a run starts with, so writers can hash and escape it once per run."""
        return demos + self.separator


def demo_blocks(ctx: RunContext, make_block: Callable[[dict[str, Any], list[str]], str]) -> str:
    """Render the run's demos in sampled order, each with the run's document permutation applied
    to its documents, joined by a blank line (upstream ``Dataset.get_prompt``)."""
    return "\n\n".join(make_block(demo, shuffle_documents(demo.pop("documents"), ctx.max_num_docs, ctx.doc_order))
                       for demo in ctx.demos())


def documents_template(block: Callable[[RunContext, str, list[str], Any], str], field: str, answer: str) -> Template:
    """The template of a dataset whose demos and test block share one ``block(ctx, text, documents,
    answer)``: ``text`` is the demo's ``field`` (the instance's attribute of that name), the demo's
    answer its ``answer`` key; the test block has no answer and its target is the instance's."""

    def few_shots(ctx: RunContext) -> str:
        return demo_blocks(ctx, lambda demo, docs: block(ctx, demo.get(field, ""), docs, demo.get(answer, "")))

    def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
        docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
        return block(ctx, getattr(instance, field, None) or "", docs, ""), instance.target

    return Template(few_shots, test_block)
