"""FuseReviews (fusion in context) prompts. Port of upstream
``datasets_classes/mds/fuse_reviews.py`` (``_make_demo``, ``_add_highlights``,
``_generate_prompts``) without the chain-of-thought variant, which upstream builds but never uses.

Highlights are the literal markers ``{HS}``/``{HE}``. The eight reviews of a test instance follow
the run's permutation (``review_i`` takes the text of ``review_{doc_order[i]}``); demos do not.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

from seam_repro.errors import InputError
from seam_repro.instances import Instance
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


_MARKED = re.compile(r"\{HS\}(.*?)\{HE\}", re.DOTALL)


def _numbered_spans(text: str) -> str:
    """``1. span\n 2. span`` of a highlighted review."""
    return "\n ".join([f"{i + 1}. {span}" for i, span in enumerate(_MARKED.findall(text))])


def _fill(structure: str, instructions: str, reviews: Mapping[str, str], answer: str) -> tuple[str, str]:
    """One demo or test block; returns (block, highlights listing). The placeholders are filled by
    successive ``str.replace`` calls on the whole text in upstream's order, so a value holding a
    later placeholder is filled too, as upstream's is."""
    h_rev = "\n".join(f"{name}: {text}" for name, text in reviews.items())
    # upstream also replaces "{HS}" and "{HE}" by HS and HE, which are those same strings: no change
    listing = "\n".join(f"{name}:\n {_numbered_spans(text)}" for name, text in reviews.items())
    prompt = structure.replace("{INST}", instructions).replace("{H_REV}", h_rev).replace("{HIGHLIGHTS}", listing)
    return prompt.replace("{COT}", "").replace("{A}", answer).strip(), listing


def few_shots(ctx: RunContext) -> str:
    """Demos joined by ``demo_sep``; the test block follows the last separator directly."""
    pf = ctx.prompt_file
    return "".join(_fill(pf["prompt_structure"], ctx.instructions, demo["reviews"], demo["output"])[0] + pf["demo_sep"]
                   for demo in ctx.demos("demos"))


def test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None = None) -> tuple[str, Any]:
    docs = instance.documents
    if len(docs) != ctx.max_num_docs:
        raise InputError(instance.dataset, f"expected {ctx.max_num_docs} reviews, found {len(docs)}",
                         record=instance.instance_id, field="review_i_text")
    highlighted = {i: add_highlights(d.text, d.highlights, merge_overlaps=not ctx.upstream,
                                     where=f"{instance.dataset}: record {instance.instance_id}: review_{i}")
                   for i, d in enumerate(docs)}
    shuffled = {f"review_{i}": highlighted[ctx.doc_order[i]] for i in range(len(docs))}
    block, listing = _fill(ctx.prompt_file["prompt_structure"], ctx.instructions, shuffled, "")
    return block, {"highlights_concat": listing, "review_side_alignments": list(instance.review_alignments)}


TEMPLATE = Template(few_shots, test_block, separator="")
"""Upstream concatenates the demo_sep-terminated demos and the test block directly."""
