"""ECB+ and SciCo prompts: mentions marked ``[first token ... last token](id)`` with drawn ids.

Ports of upstream ``datasets_classes/cdcr/ecb.py`` (``_process_single_dataset``, ``pre_process``)
and ``datasets_classes/cdcr/scico.py::pre_process``; both render with the base template.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from seam_repro.errors import InputError
from seam_repro.instances import Instance
from seam_repro.render.common import base_block, shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.multinews import few_shots
from seam_repro.render.template import Template


def _by_cluster(mentions: Sequence[Any], mention_ids: Sequence[int]) -> list[list[int]]:
    """The drawn ids of each cluster's mentions, clusters in order of first mention."""
    by_cluster: dict[Any, list[int]] = {}
    for mention, mid in zip(mentions, mention_ids, strict=True):
        by_cluster.setdefault(mention.cluster_id, []).append(int(mid))
    return list(by_cluster.values())


def _first_rows(tokens: Sequence[Any]) -> dict[int, int]:
    """Token id -> the first row carrying it (where a mention's mark goes)."""
    first: dict[int, int] = {}
    for row, token in enumerate(tokens):
        first.setdefault(token.token_id, row)
    return first


def _annotated_rows(tokens: Sequence[Any]) -> list[int] | None:
    """The rows upstream keeps: token ids between the first and last annotated one, in token-id
    order (rows with equal ids in file order); None when no token is annotated."""
    annotated = [t.token_id for t in tokens if t.is_annotated]
    if not annotated:
        return None
    lo, hi = min(annotated), max(annotated)
    return sorted((r for r, t in enumerate(tokens) if lo <= t.token_id <= hi), key=lambda r: tokens[r].token_id)


def ecb_documents(instance: Instance, mention_ids: Sequence[int]) -> list[str]:
    """Marked document strings of one ECB+ topic, before sorting and permutation.

    Each document is cut to the tokens between its first and last annotated token (by token id),
    marks are applied in mention order to the first row carrying the mention's first/last token id,
    so marks on shared tokens nest exactly as upstream's successive ``DataFrame.loc`` edits do.
    Marks on rows outside the annotated span are checked and dropped, as upstream's cut drops them.
    Fewer ids than mentions is an ``IndexError`` (once the mentions are found valid).
    """
    docs = {d.doc_id: d for d in instance.documents}
    first_rows: dict[str, dict[int, int]] = {}
    marks: list[tuple[str, int, int]] = []
    for k, mention in enumerate(instance.mentions):
        if mention.doc_id not in docs:
            raise InputError(instance.dataset, f"mention {k} names document '{mention.doc_id}' not in topic",
                             record=instance.instance_id, field="doc_id")
        if not mention.token_ids:
            raise InputError(instance.dataset, f"mention {k} has no tokens", record=instance.instance_id,
                             field="tokens_ids")
        if mention.doc_id not in first_rows:
            first_rows[mention.doc_id] = _first_rows(docs[mention.doc_id].tokens)
        start, end = mention.token_ids[0], mention.token_ids[-1]
        first, last = first_rows[mention.doc_id].get(start), first_rows[mention.doc_id].get(end)
        if first is None or last is None:
            raise InputError(instance.dataset, f"mention {k} token ids {start}..{end} not in document "
                             f"'{mention.doc_id}'", record=instance.instance_id, field="tokens_ids")
        marks.append((mention.doc_id, first, last))
    kept = {doc_id: _annotated_rows(docs[doc_id].tokens) for doc_id in first_rows}
    for doc_id, rows in kept.items():
        if rows is None:
            raise InputError(instance.dataset, f"document '{doc_id}' has no annotated token",
                             record=instance.instance_id, field="is_annotated")
    if len(mention_ids) < len(instance.mentions):
        raise IndexError(f"{len(mention_ids)} mention ids for {len(instance.mentions)} mentions")
    texts = {doc_id: [t.text for t in docs[doc_id].tokens] for doc_id in first_rows}
    for k, (doc_id, first, last) in enumerate(marks):
        texts[doc_id][first] = "[" + texts[doc_id][first]
        texts[doc_id][last] += f"]({mention_ids[k]})"
    return [" ".join([texts[doc_id][r] for r in rows or ()]) for doc_id, rows in kept.items()]


def ecb_test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None) -> tuple[str, Any]:
    mention_ids = mention_ids or ()
    docs = sorted(ecb_documents(instance, mention_ids))
    shuffled = shuffle_documents(docs, ctx.max_num_docs, ctx.doc_order)
    # Upstream turns each cluster's id list into a set and back before sorting the outer list, so the
    # inner order is CPython's set iteration order (hash-bucket order, mostly but not always ascending
    # for small ints); the same set built from the same ids in the same order reproduces it exactly.
    target = sorted([list(set(ids)) for ids in _by_cluster(instance.mentions, mention_ids)])
    return base_block(ctx.instructions, shuffled), target


def scico_documents(instance: Instance, mention_ids: Sequence[int]) -> list[str]:
    """Marked SciCo documents: paragraphs space-joined, each followed by a newline, grouped by
    ``doc_ids`` (which upstream requires to be contiguous from 0)."""
    tokens = [list(p) for p in instance.paragraphs]
    for k, mention in enumerate(instance.mentions):
        p, start, end = mention.paragraph, mention.start, mention.end
        if not (0 <= p < len(tokens)) or not (0 <= start <= end < len(tokens[p])):
            raise InputError(instance.dataset, f"mention {k} [{p}, {start}, {end}] outside the paragraphs",
                             record=instance.instance_id, field="mentions")
        tokens[p][start] = f"[{tokens[p][start]}"
        tokens[p][end] = f"{tokens[p][end]}]({mention_ids[k]})"
    paragraphs = [" ".join(par) for par in tokens]
    documents: list[str] = []
    for index, doc_id in enumerate(instance.paragraph_doc_ids):
        if doc_id == len(documents):
            documents.append("")
        elif not 0 <= doc_id < len(documents):
            raise InputError(instance.dataset, f"doc_ids must be contiguous from 0, got {doc_id} at paragraph "
                             f"{index}", record=instance.instance_id, field="doc_ids")
        documents[doc_id] += f"{paragraphs[index]}\n"
    return documents


def scico_test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None) -> tuple[str, Any]:
    mention_ids = mention_ids or ()
    docs = shuffle_documents(scico_documents(instance, mention_ids), ctx.max_num_docs, ctx.doc_order)
    return base_block(ctx.instructions, docs), sorted(_by_cluster(instance.mentions, mention_ids))


# Coreference demos carry pre-marked documents and list-of-lists targets: the base-template demos.
ECB = Template(few_shots, ecb_test_block)
SCICO = Template(few_shots, scico_test_block)
