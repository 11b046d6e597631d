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


_REVIEWS: dict[tuple[Any, ...], tuple[Any, tuple[dict[int, str], bool]]] = {}
"""Highlighted reviews by instance and merge_overlaps (``common.by_identity``)."""


def _highlighted_reviews(instance: Instance, merge_overlaps: bool) -> tuple[dict[int, str], bool]:
    """Review index -> highlighted text of an instance, and whether their braces are all markers'
    (``_markers_only``), built once per process (every run renders the same instance again, only
    the reviews' order changes; ``add_highlights`` is pure)."""
    def build() -> tuple[dict[int, str], bool]:
        reviews = {i: add_highlights(d.text, d.highlights, merge_overlaps=merge_overlaps,
                                     where=f"{instance.dataset}: record {instance.instance_id}: review_{i}")
                   for i, d in enumerate(instance.documents)}
        return reviews, all(map(_markers_only, reviews.values()))
    return by_identity(_REVIEWS, instance, build, merge_overlaps)


@functools.cache
def _review_names(n: int) -> tuple[str, ...]:
    return tuple(f"review_{i}" for i in range(n))


_PLACEHOLDERS = ("{INST}", "{H_REV}", "{HIGHLIGHTS}", "{COT}", "{A}")
"""What ``_fill`` replaces, in upstream's order."""


def _markers_only(text: str) -> bool:
    """True when every brace of ``text`` belongs to a ``{HS}`` or ``{HE}`` marker (two markers
    cannot overlap: each starts at its own ``{``)."""
    markers = text.count(HS) + text.count(HE)
    return text.count("{") == markers == text.count("}")


@functools.lru_cache(maxsize=64)
def _structure_parts(structure: str) -> tuple[str | int, ...] | None:
    """A prompt structure as literal segments (``str``) and placeholders (their index in
    ``_PLACEHOLDERS``), or None when a segment holds a brace or a brace starts no placeholder
    (then only the successive replaces say what the text is)."""
    parts: list[str | int] = []
    at = 0
    while (brace := structure.find("{", at)) >= 0:
        name = next((k for k, p in enumerate(_PLACEHOLDERS) if structure.startswith(p, brace)), None)
        if name is None or "}" in structure[at:brace]:
            return None
        parts += (structure[at:brace], name)
        at = brace + len(_PLACEHOLDERS[name])
    if "}" in structure[at:]:
        return None
    parts.append(structure[at:])
    return tuple(parts)


def _fill(structure: str, instructions: str, reviews: Mapping[str, str], answer: str,
          markers_only: bool | None = None) -> tuple[str, str]:
    """One demo or test block; returns (block, highlights listing). ``markers_only``: whether every
    brace of the reviews' texts is a marker's (``_markers_only``), when the caller knows it.

    Upstream fills the placeholders by successive ``str.replace`` calls on the whole text, so a
    value holding a later placeholder would be filled too. When the structure's segments hold no
    brace and every brace of the instructions, review names and texts is a marker's (``{HS}`` and
    ``{HE}`` start no placeholder; the listing's spans lie between markers, so its braces are
    markers' too), every brace of each step's text starts an intact marker or an unfilled
    placeholder of the structure: each replace then fills exactly the structure's own
    placeholders, and one join of the segments and values is the same text (scanning the ~5 KB
    block five times was most of a block's cost)."""
    h_rev = "\n".join(f"{name}: {text}" for name, text in reviews.items())
    # upstream also replaces "{HS}" and "{HE}" by HS and HE, which are those same strings: no change
    listing = "\n".join(f"{name}:\n {_numbered_spans(text)}" for name, text in reviews.items())
    # a structure or answer of another type (a user's prompt file) fails in the replaces, as upstream's does
    parts = _structure_parts(structure) if type(structure) is str and type(answer) is str else None
    if parts is not None and markers_only is None:
        markers_only = all(map(_markers_only, reviews.values()))
    if parts is not None and markers_only and _markers_only(instructions) and all(map(_markers_only, reviews)):
        values = (instructions, h_rev, listing, "", answer)
        prompt = "".join([part if type(part) is str else values[part] for part in parts])
    else:
        prompt = _fill_by_replaces(structure, instructions, h_rev, listing, answer)
    return prompt.strip(), listing


def _fill_by_replaces(structure: str, instructions: str, h_rev: str, listing: str, answer: str) -> str:
    """Upstream's successive replaces, in its order (the reference ``_fill`` is held to)."""
    prompt = structure.replace("{INST}", instructions)
    prompt = prompt.replace("{H_REV}", h_rev)
    prompt = prompt.replace("{HIGHLIGHTS}", listing)
    prompt = prompt.replace("{COT}", "")
    return prompt.replace("{A}", answer)


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
    highlighted, markers_only = _highlighted_reviews(instance, not ctx.upstream)
    names, order = _review_names(len(docs)), ctx.doc_order
    shuffled = {names[i]: highlighted[order[i]] for i in range(len(docs))}  # review_i: text of review_{order[i]}
    block, listing = _fill(ctx.prompt_file["prompt_structure"], ctx.instructions, shuffled, "", markers_only)
    target = {"highlights_concat": listing, "review_side_alignments": list(instance.review_alignments)}
    return block, target


TEMPLATE = Template(few_shots, test_block, separator="")
"""Upstream concatenates the demo_sep-terminated demos and the test block directly."""
