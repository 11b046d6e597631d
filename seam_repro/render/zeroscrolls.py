"""ZeroSCROLLS-style prompts: instruction, context with header, query, response header, and the
context trimmed from the end to a token budget with the explicit omission note.

Replicates ZeroSCROLLS (Shaham et al., 2023) §3.2 "Prompt Structure" and the query-keeping
truncation of ``experiments/hf/run_hf_model.py::process_model_input``, through the helpers of
``seam_repro.suites.zeroscrolls`` (``build_prompt``, ``trim_to_budget``). Zero-shot, as
ZeroSCROLLS is: the sampled factors are the instruction paraphrase, the document order and the
instance subsample.

Layout settings come from the dataset's ``template_options`` in the suite file:

* ``context_header`` / ``context_name`` / ``response_header`` (strings, required), ``query_header``
  (string, or null for tasks without a query), ``task_kind`` (``summarization``, ``qa`` or
  ``aggregation``; decides the chat suffix);
* ``document_label`` (default ``"Document {i}:"``): the line above each document, ``{i}`` = its
  1-based position in the run's order; documents are separated by a blank line;
* ``max_tokens`` (optional positive int): budget for the WHOLE prompt in whitespace-separated
  tokens. Manifests are model-independent, so the budget is counted with the kit's whitespace
  tokenizer, not a model's (ZeroSCROLLS trims per model tokenizer);
* ``chat`` (default false): the chat variant (no response header; "Do not provide any
  explanation." for QA/aggregation).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.errors import InputError
from seam_repro.instances import Instance
from seam_repro.render.common import shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template
from seam_repro.suites.zeroscrolls import PromptTemplate, build_prompt, trim_to_budget

TASK_KINDS = ("summarization", "qa", "aggregation")


def _option(ctx: RunContext, key: str, kind: type | tuple[type, ...], default: Any = ..., form: str = "") -> Any:
    """One template option, type-checked; errors name the suite dataset and the option."""
    opts = ctx.options
    if key not in opts:
        if default is ...:
            raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"missing; expected {form}",
                             field=f"template_options.{key}")
        return default
    value = opts[key]
    if not isinstance(value, kind) or (isinstance(value, bool) and bool not in (kind if isinstance(kind, tuple) else (kind,))):
        raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"got {value!r}; expected {form}",
                         field=f"template_options.{key}")
    return value


def prompt_template(ctx: RunContext) -> PromptTemplate:
    """The §3.2 template of a run: the sampled paraphrase plus the suite's headers."""
    kind = _option(ctx, "task_kind", str, "qa", f"one of {TASK_KINDS}")
    if kind not in TASK_KINDS:
        raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"got {kind!r}; expected one of {TASK_KINDS}",
                         field="template_options.task_kind")
    return PromptTemplate(
        instruction=ctx.instructions,
        context_header=_option(ctx, "context_header", str, form="a header string such as 'Transcript:'"),
        context_name=_option(ctx, "context_name", str, form="what the omission note calls the context"),
        response_header=_option(ctx, "response_header", str, form="a header string such as 'Answer:'"),
        query_header=_option(ctx, "query_header", (str, type(None)), None, "a header string or null"),
        task_kind=kind,
    )


def context_text(ctx: RunContext, documents: Sequence[str]) -> str:
    """Documents in the run's order, each under its label line, separated by blank lines."""
    label = _option(ctx, "document_label", str, "Document {i}:", "a label such as 'Review {i}:'")
    return "\n\n".join(f"{label.replace('{i}', str(j))}\n{text}" for j, text in enumerate(documents, start=1))


def few_shots(ctx: RunContext) -> str:
    """ZeroSCROLLS is zero-shot: a run with demonstrations is a configuration error."""
    if ctx.demo_indices:
        raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"{len(ctx.demo_indices)} demonstrations "
                         "drawn, but this template is zero-shot; set num_demonstrations to 0",
                         field="num_demonstrations")
    return ""


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    template = prompt_template(ctx)
    docs = shuffle_documents([d.text for d in instance.documents], ctx.max_num_docs, ctx.doc_order)
    query = instance.question
    where = f"{instance.dataset}: record {instance.instance_id}"
    if (template.query_header is None) != (query is None):
        want = "a query" if query is None else "no query"
        raise InputError(where, f"the template's query_header is {template.query_header!r}, so the record needs {want}",
                         field="query")
    context = context_text(ctx, docs)
    chat = _option(ctx, "chat", bool, False, "true or false")
    budget = _option(ctx, "max_tokens", (int, type(None)), None, "a positive integer or null")
    if budget is None:
        return build_prompt(template, context, query, chat=chat), instance.target
    return trim_to_budget(template, context, budget, query, chat=chat).prompt, instance.target


TEMPLATE = Template(few_shots, test_block, separator="")
"""No demos, so the message is the test block itself."""
