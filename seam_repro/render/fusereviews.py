"""FuseReviews (fusion in context) prompts. Port of upstream
``datasets_classes/mds/fuse_reviews.py`` (``_make_demo``, ``_add_highlights``,
``_generate_prompts``) without the chain-of-thought variant, which upstream builds but never uses.

The template is filled by successive ``str.replace`` calls on the whole accumulated string, in
upstream's order; that order is kept so that text containing a placeholder renders identically.
Highlights are the literal markers ``{HS}``/``{HE}``. The eight reviews of a test instance follow
the run's permutation (``review_i`` takes the text of ``review_{doc_order[i]}``); demos do not.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from seam_repro.errors import InputError
from seam_repro.instances import Instance
from seam_repro.render.common import by_identity
from seam_repro.render.context import RunContext
from seam_repro.render.template import Template

HS, HE = "{HS}", "{HE}"


def add_highlights(text: str, spans: Sequence[tuple[int, int]], *, merge_overlaps: bool, where: str) -> str:
    """Insert ``{HS}``/``{HE}`` around each character span (upstream ``_add_highlights``).

    Upstream asserts that removing the markers gives back the text, which fails for overlapping
    spans; the ``upstream`` profile reports that as a data error, ``seam-repro-1`` merges them.
    """
    if not spans:
        return text
    ordered = sorted((tuple(s) for s in spans), key=lambda s: s[0])
    if merge_overlaps:
        merged: list[list[int]] = []
        for s, e in ordered:
            if merged and s <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], e)
            else:
                merged.append([s, e])
        ordered = [(s, e) for s, e in merged]
    out = text[: ordered[0][0]]
    for i, (s, e) in enumerate(ordered):
        nxt = ordered[i + 1][0] if i < len(ordered) - 1 else len(text)
        out += HS + text[s:e] + HE + text[e:nxt]
    if out.replace(HS, "").replace(HE, "") != text:
        raise InputError(where, f"highlight offsets {list(ordered)} overlap or leave the text; upstream SEAM "
                         "asserts on this row (use --profile seam-repro-1 to merge overlaps)", field="offsets")
    return out


@functools.lru_cache(maxsize=8192)
def _numbered_spans(text: str) -> str:
    """``1. span\n 2. span`` of a highlighted review. Cached: a test review is listed again in
    every run (only its slot changes), and its highlighted text is the same cached string."""
    return "\n ".join([f"{i + 1}. {span}" for i, span in enumerate(_marked_spans(text))])


def _marked_spans(text: str) -> list[str]:
    """The texts between each ``{HS}`` and the first ``{HE}`` after it, left to right (what the
    regex ``\\{HS\\}(.*?)\\{HE\\}`` with DOTALL finds; str.find needs no regex compiled at import)."""
    spans, at = [], 0
    while (start := text.find(HS, at)) >= 0 and (end := text.find(HE, start + len(HS))) >= 0:
        spans.append(text[start + len(HS):end])
        at = end + len(HE)
    return spans


_REVIEWS: dict[tuple[Any, ...], tuple[Any, dict[str, str]]] = {}
"""Highlighted reviews by instance and merge_overlaps (``common.by_identity``)."""


def _highlighted_reviews(instance: Instance, merge_overlaps: bool) -> dict[str, str]:
    """``review_i -> highlighted text`` of an instance, built once per process (every run renders
    the same instance again, only the reviews' order changes; ``add_highlights`` is pure)."""
    return by_identity(_REVIEWS, instance, lambda: {
        f"review_{i}": add_highlights(d.text, d.highlights, merge_overlaps=merge_overlaps,
                                      where=f"{instance.dataset}: record {instance.instance_id}: review_{i}")
        for i, d in enumerate(instance.documents)
    }, merge_overlaps)


def _fill(structure: str, instructions: str, reviews: Mapping[str, str], answer: str) -> tuple[str, str]:
    """One demo or test block; returns (block, highlights listing)."""
    prompt = structure.replace("{INST}", instructions)
    prompt = prompt.replace("{H_REV}", "\n".join(f"{name}: {text}" for name, text in reviews.items()))
    # upstream then replaces "{HS}" and "{HE}" by HS and HE, which are those same strings: no change
    listing = "\n".join(f"{name}:\n {_numbered_spans(text)}" for name, text in reviews.items())
    prompt = prompt.replace("{HIGHLIGHTS}", listing)
    prompt = prompt.replace("{COT}", "")
    prompt = prompt.replace("{A}", answer)
    return prompt.strip(), listing


def few_shots(ctx: RunContext) -> str:
    """Demos joined by ``demo_sep``; the test block follows the last separator directly."""
    pf = ctx.prompt_file
    head = ""
    for demo in ctx.demos("demos"):
        block, _ = _fill(pf["prompt_structure"], ctx.instructions, demo["reviews"], demo["output"])
        head += block + pf["demo_sep"]
    return head


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    docs = instance.documents
    if len(docs) != ctx.max_num_docs:
        raise InputError(instance.dataset, f"expected {ctx.max_num_docs} reviews, found {len(docs)}",
                         record=instance.instance_id, field="review_i_text")
    highlighted = _highlighted_reviews(instance, not ctx.upstream)
    shuffled = {f"review_{i}": highlighted[f"review_{ctx.doc_order[i]}"] for i in range(len(docs))}
    block, listing = _fill(ctx.prompt_file["prompt_structure"], ctx.instructions, shuffled, "")
    target = {"highlights_concat": listing, "review_side_alignments": list(instance.review_alignments)}
    return block, target


TEMPLATE = Template(few_shots, test_block, separator="")
"""Upstream concatenates the demo_sep-terminated demos and the test block directly."""
