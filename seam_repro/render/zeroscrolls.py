"""ZeroSCROLLS-style prompts: instruction, context with header, query, response header, and the
context trimmed from the end to a token budget with the explicit omission note.

Replicates ZeroSCROLLS (Shaham et al., 2023) §3.2 "Prompt Structure" and the query-keeping
truncation of ``experiments/hf/run_hf_model.py::process_model_input``. Zero-shot, as ZeroSCROLLS
is: the sampled factors are the instruction paraphrase, the document order and the instance subsample.

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

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, get_args

from seam_repro.errors import InputError
from seam_repro.files.reading import is_a
from seam_repro.instances import Instance
from seam_repro.render.common import shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template

TaskKind = Literal["summarization", "qa", "aggregation"]
TASK_KINDS: tuple[str, ...] = get_args(TaskKind)

OMISSION_NOTE = "[The rest of the {context_name} is omitted]"
"""Appended to a trimmed context (paper Figure 3: "[The rest of the transcript is omitted]")."""

CHAT_QA_SUFFIX = "Do not provide any explanation."
"""Appended to QA and aggregation instructions for chat models (§3.2)."""


@dataclass(frozen=True)
class PromptTemplate:
    """The generic template of §3.2: instruction, context (with header), query, response header."""

    instruction: str
    context_header: str
    """E.g. ``"Transcript:"``, ``"Report:"``, ``"Reviews:"``."""
    context_name: str
    """What the omission note calls the context, e.g. ``"transcript"``."""
    response_header: str
    """Dropped in the chat variant."""
    query_header: str | None = None
    """``None`` for tasks without a query."""
    task_kind: TaskKind = "qa"


def build_prompt(template: PromptTemplate, context: str, query: str | None = None, *, chat: bool = False,
                 trimmed: bool = False) -> str:
    """Instruction, headed context, headed query and response header, separated by blank lines.

    ``chat`` omits the response header and, for QA/aggregation, appends "Do not provide any
    explanation." to the instruction (§3.2). ``trimmed`` appends the omission note to the context.
    """
    if (template.query_header is None) != (query is None):
        raise InputError("zeroscrolls prompt", "the template has a query header but no query was given" if query is None
                         else "a query was given but the template has no query header", field="query")
    instruction = template.instruction
    if chat and template.task_kind in ("qa", "aggregation"):
        instruction = f"{instruction} {CHAT_QA_SUFFIX}"
    body = context.rstrip()
    if trimmed:
        note = OMISSION_NOTE.format(context_name=template.context_name)
        body = f"{body}\n\n{note}" if body else note
    blocks = [instruction, f"{template.context_header}\n{body}"]
    if template.query_header is not None:
        blocks.append(f"{template.query_header}\n{query}")
    prompt = "\n\n".join(blocks)
    if not chat:
        prompt += f"\n\n{template.response_header}\n"
    return prompt


Tokenizer = Callable[[str], Sequence[object]]
"""Any encode function: text -> token sequence (only its length is used), e.g.
``lambda t: hf_tokenizer.encode(t, add_special_tokens=False)``."""

_WORD = re.compile(r"\S+")


@dataclass(frozen=True)
class TrimmedPrompt:
    prompt: str
    trimmed: bool
    n_tokens: int
    """Of the whole prompt, under the tokenizer used."""
    context_words_kept: int


def trim_to_budget(template: PromptTemplate, context: str, max_tokens: int, query: str | None = None, *,
                   tokenizer: Tokenizer = str.split, chat: bool = False) -> TrimmedPrompt:
    """Build the prompt, trimming the *end* of the context so the whole prompt fits ``max_tokens``.

    Instruction, query and response header are always kept (as ZeroSCROLLS' ``process_model_input``
    keeps the query suffix); a trimmed context ends with the omission note. The cut falls on a word
    boundary and the longest fitting prefix is found by binary search over the number of context
    words, so any tokenizer (whitespace, BPE) can be passed in as an encode function.
    """
    if max_tokens <= 0:
        raise InputError("zeroscrolls prompt", f"max_tokens must be positive, got {max_tokens}", field="max_tokens")
    full = build_prompt(template, context, query, chat=chat)
    n_full = len(tokenizer(full))
    words = list(_WORD.finditer(context))
    if n_full <= max_tokens:
        return TrimmedPrompt(full, False, n_full, len(words))

    def prompt_with(k: int) -> str:
        prefix = context[: words[k - 1].end()] if k > 0 else ""
        return build_prompt(template, prefix, query, chat=chat, trimmed=True)

    lo, hi = 0, len(words)  # invariant: prompt_with(lo) fits (checked below), prompt_with(hi) does not
    n_lo = len(tokenizer(prompt_with(0)))
    if n_lo > max_tokens:
        raise InputError("zeroscrolls prompt", f"instruction, query and omission note alone take {n_lo} tokens, "
                         f"more than the budget of {max_tokens}", field="max_tokens")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        n_mid = len(tokenizer(prompt_with(mid)))
        if n_mid <= max_tokens:
            lo, n_lo = mid, n_mid
        else:
            hi = mid
    return TrimmedPrompt(prompt_with(lo), True, n_lo, lo)


def _option(ctx: RunContext, key: str, kind: type | tuple[type, ...], default: Any = ..., form: str = "") -> Any:
    """One template option, type-checked; errors name the suite dataset and the option."""
    opts = ctx.options
    if key not in opts:
        if default is ...:
            raise InputError(f"suite {ctx.suite}: datasets.{ctx.dataset}", f"missing; expected {form}",
                             field=f"template_options.{key}")
        return default
    value = opts[key]
    if not is_a(value, kind):
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
    if (template.query_header is None) != (query is None):
        raise InputError(f"{instance.dataset}: record {instance.instance_id}", f"the template's query_header is "
                         f"{template.query_header!r}, so the record needs {'a query' if query is None else 'no query'}",
                         field="query")
    context = context_text(ctx, docs)
    chat = _option(ctx, "chat", bool, False, "true or false")
    budget = _option(ctx, "max_tokens", (int, type(None)), None, "a positive integer or null")
    if budget is None:
        return build_prompt(template, context, query, chat=chat), instance.target
    return trim_to_budget(template, context, budget, query, chat=chat).prompt, instance.target


TEMPLATE = Template(few_shots, test_block, separator="")
"""No demos, so the message is the test block itself."""
