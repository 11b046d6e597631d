"""IGCS-style content-selection prompts: instruction, output-format sentence, numbered documents.

Replicates the IGCS-Bench prompt (Amar et al., Figure 3), ``igcs_prompt``:
``<instruction>. Output the exact <selection type> from the given <source type> as a valid json
array of strings. Do not change the copied text.`` followed by ``document #0:`` … blocks in the
run's document order. The sampled paraphrase may hold ``{query}``, replaced (plain text
substitution, never ``str.format``) by the record's query, e.g. the aspect of an aspect-based
selection. Zero-shot; sampled factors are the paraphrase, document order and instance subsample.

``template_options``: ``selection_type`` (default ``"text phrases"``). Units of a dataset with
``"units": "document"`` (document-level inference, IGCS §5.3) hold one document each and are
prompted alone about "the given document" (§5.3); scoring puts an instance's units back together
and grounds each span in its own document first (``scoring``, ``metrics/igcs.py``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.errors import InputError
from seam_repro.instances import Instance
from seam_repro.render.common import shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template
from seam_repro.render.zeroscrolls import few_shots


def igcs_prompt(instruction: str, documents: Sequence[str], *, selection_type: str = "text phrases",
                source_type: str = "documents") -> str:
    """The IGCS-Bench template (Figure 3): instruction, output-format sentence, numbered documents."""
    head = (f"{instruction.rstrip().rstrip('.')}. Output the exact {selection_type} from the given {source_type} "
            "as a valid json array of strings. Do not change the copied text.")
    docs = "\n\n".join(f"document #{i}:\n{d}" for i, d in enumerate(documents))
    return f"{head}\n\n{docs}"


QUERY = "{query}"


def instruction(ctx: RunContext, instance: Instance) -> str:
    """The paraphrase with ``{query}`` filled; a query with nowhere to go (or the reverse) is an
    error, because the prompt would silently lose the task's subject."""
    text, query = ctx.instructions, instance.question
    where = f"{instance.dataset}: record {instance.instance_id}"
    if QUERY in text and query is None:
        raise InputError(where, f"paraphrase {ctx.paraphrase_index} refers to {QUERY} but the record has no query",
                         field="query")
    if QUERY not in text and query is not None:
        raise InputError(where, f"the record has a query but paraphrase {ctx.paraphrase_index} has no {QUERY} "
                         "placeholder", field="query")
    return text.replace(QUERY, query) if query is not None else text


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    selection = ctx.options.get("selection_type", "text phrases")
    if not isinstance(selection, str) or not selection.strip():
        raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"got {selection!r}; expected a non-empty "
                         "string such as 'sentences'", field="template_options.selection_type")
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    doc_level = isinstance(instance.target, dict) and "doc_index" in instance.target
    return igcs_prompt(instruction(ctx, instance), docs, selection_type=selection,
                       source_type="document" if doc_level else "documents"), instance.target


TEMPLATE = Template(few_shots, test_block, separator="")
"""Zero-shot: the message is the test block itself."""
