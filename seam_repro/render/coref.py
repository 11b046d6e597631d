"""ECB+ and SciCo prompts: mentions marked ``[first token ... last token](id)`` with drawn ids.

Ports of upstream ``datasets_classes/cdcr/ecb.py`` (``_process_single_dataset``, ``pre_process``)
and ``datasets_classes/cdcr/scico.py::pre_process``; both render with the base template.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import accumulate, compress
from typing import Any, NamedTuple

from seam_repro.errors import InputError
from seam_repro.instances import Instance
from seam_repro.render.common import base_block, by_identity, shuffle_documents
from seam_repro.render.context import RunContext
from seam_repro.render.multinews import few_shots
from seam_repro.render.template import Template


def _clusters_as_upstream(cluster_of: Sequence[Any], mention_ids: Sequence[int]) -> list[list[int]]:
    """``sorted([list(set(ids)) for each cluster])``.

    Upstream turns each cluster's id list into a ``set`` and back into a list before sorting the
    outer list, so the inner order is CPython's set iteration order (hash-bucket order, which for
    small ints is mostly but not always ascending). Building the same set from the same ids in the
    same insertion order reproduces it exactly.
    """
    by_cluster: dict[Any, list[int]] = {}
    for cluster_id, mid in zip(cluster_of, mention_ids, strict=True):
        by_cluster.setdefault(cluster_id, []).append(int(mid))
    return sorted([list(set(ids)) for ids in by_cluster.values()])


class _DocLayout(NamedTuple):
    """What rendering needs of one ECB+ document that no run changes: computed once per token
    tuple, not once per run (10 runs re-cut and re-sorted the same documents). A named tuple, as
    the records of ``instances.py`` are (that module says why).

    When the rows' token ids are consecutive (the corpus's numbering) no per-row map is built (two
    dicts of every row were half of the layout's cost, and a run looks up a few rows): a token
    id's row is its offset from the first id, and the annotated span is rows ``start..`` in order."""

    texts: tuple[str, ...]
    ids: list[int]
    """Token id of every row."""
    first_row: dict[int, int] | None
    """Token id -> first row carrying it; None when ``ids`` are consecutive (see ``row``)."""
    parts: tuple[str, ...] | None
    """Texts of the rows between the first and last annotated token id, in token-id order (rows
    with equal ids in file order); None when no token is annotated."""
    position: dict[int, int] | None
    """Row -> its index in ``parts``; None when ``parts`` are the rows ``start..`` in order."""
    start: int = 0

    def row(self, token_id: int) -> int | None:
        """The first row carrying ``token_id`` (where a mark goes), None when no row does."""
        if self.first_row is not None:
            return self.first_row.get(token_id)
        if type(token_id) is int:
            k = token_id - self.ids[0]
            return k if 0 <= k < len(self.ids) else None
        return self.ids.index(token_id) if token_id in self.ids else None  # 3.0 is 3, as a dict key

    def place(self, row: int) -> int | None:
        """The index of ``row`` in ``parts``, None when the row is outside the annotated span."""
        if self.position is not None:
            return self.position.get(row)
        k = row - self.start
        return k if self.parts is not None and 0 <= k < len(self.parts) else None


_Entry = tuple[_DocLayout, str, list[int]]
"""A document's layout, its unmarked text (``parts`` joined by spaces) and the cumulative lengths
of ``parts`` (part ``k`` starts at ``cum[k] + k`` in that text)."""
_LAYOUTS: dict[tuple[Any, ...], tuple[Any, _Entry]] = {}
"""``_Entry`` by token tuple (``common.by_identity``)."""


def _layout(tokens: tuple[Any, ...]) -> _DocLayout:
    return _entry(tokens)[0]


def _entry(tokens: tuple[Any, ...]) -> _Entry:
    """The document's ``_Entry``, computed once per token tuple, not once per run."""
    return by_identity(_LAYOUTS, tokens, lambda: _new_entry(tokens))


def _new_entry(tokens: tuple[Any, ...]) -> _Entry:
    """Columns taken by one C transpose of the ``Token`` rows; when token ids are consecutive along
    the rows (the corpus's numbering), the annotated span is one slice of rows (from the lowest
    annotated id to the highest), instead of a filter and a stable sort by id."""
    _, token_ids, texts, is_annotated = zip(*tokens, strict=True) if tokens else ((), (), (), ())
    ids = list(token_ids)
    if ids and ids == list(range(ids[0], ids[0] + len(ids))):
        n = len(ids)
        first = next(compress(range(n), is_annotated), None)  # the first annotated row holds the lowest id
        parts, start = None, 0
        if first is not None:
            start = first
            parts = texts[first:n - next(compress(range(n), reversed(is_annotated)))]  # to the last one
        layout = _DocLayout(texts, ids, None, parts, None, start)
    else:
        first_row = dict(zip(reversed(ids), range(len(ids) - 1, -1, -1), strict=True))  # the first row wins
        annotated = list(compress(ids, is_annotated))
        parts, position = None, {}
        if annotated:
            lo, hi = min(annotated), max(annotated)
            rows = [r for r, tid in enumerate(ids) if lo <= tid <= hi]
            rows.sort(key=ids.__getitem__)  # stable: equal ids keep file order
            parts = tuple([texts[r] for r in rows])
            position = {r: k for k, r in enumerate(rows)}
        layout = _DocLayout(texts, ids, first_row, parts, position)
    return layout, " ".join(parts or ()), list(accumulate(map(len, parts or ()), initial=0))


_Mark = tuple[int, int, str, tuple[int, ...]]
"""Where a marked row's text lies in its document's unmarked text (begin, end), that text with
the ``[`` of every mention opening there, and the mentions (by index, in mention order) whose
``](id)`` closes there."""
_PLANS: dict[tuple[Any, ...], tuple[Any, list[tuple[str, list[_Mark]]]]] = {}
"""``_marking_plan`` by instance (``common.by_identity``)."""


def _marking_plan(instance: Instance) -> list[tuple[str, list[_Mark]]]:
    """Each used document's unmarked text and its marks in text order: everything of
    ``ecb_documents`` but the mention ids, the one thing a run changes (once per instance, not once
    per run). A row's marks commute: each opening prepends the same ``[``, and the closings append
    in mention order, so the marked row is ``[`` * openings + text + closings. Marks on rows outside
    the annotated span are checked and dropped, as upstream's cut drops them."""
    docs = {d.doc_id: d for d in instance.documents}
    entries: dict[str, _Entry] = {}
    opened: dict[str, dict[int, int]] = {}
    closed: dict[str, dict[int, list[int]]] = {}
    for k, mention in enumerate(instance.mentions):
        if mention.doc_id not in docs:
            raise InputError(instance.dataset, f"mention {k} names document '{mention.doc_id}' not in topic",
                             record=instance.instance_id, field="doc_id")
        if not mention.token_ids:
            raise InputError(instance.dataset, f"mention {k} has no tokens", record=instance.instance_id,
                             field="tokens_ids")
        entry = entries.get(mention.doc_id)
        if entry is None:
            entry = entries[mention.doc_id] = _entry(docs[mention.doc_id].tokens)
        layout = entry[0]
        start, end = mention.token_ids[0], mention.token_ids[-1]
        first, last = layout.row(start), layout.row(end)
        if first is None or last is None:
            raise InputError(instance.dataset, f"mention {k} token ids {start}..{end} not in document "
                             f"'{mention.doc_id}'", record=instance.instance_id, field="tokens_ids")
        opens = opened.setdefault(mention.doc_id, {})
        opens[first] = opens.get(first, 0) + 1
        closed.setdefault(mention.doc_id, {}).setdefault(last, []).append(k)
    # Upstream builds the topic's documents from a set of doc ids; order is irrelevant because the
    # strings are sorted afterwards.
    plan = []
    for doc_id in entries:
        layout, text, cum = entries[doc_id]
        if layout.parts is None:
            raise InputError(instance.dataset, f"document '{doc_id}' has no annotated token",
                             record=instance.instance_id, field="is_annotated")
        marks = []
        for row in opened[doc_id].keys() | closed[doc_id].keys():
            at = layout.place(row)
            if at is not None:  # part ``at`` starts at cum[at] + at in the space-joined text
                marks.append((cum[at] + at, cum[at + 1] + at, "[" * opened[doc_id].get(row, 0) + layout.texts[row],
                              tuple(closed[doc_id].get(row, ()))))
        plan.append((text, sorted(marks)))
    return plan


def ecb_documents(instance: Instance, mention_ids: Sequence[int]) -> list[str]:
    """Marked document strings of one ECB+ topic, before sorting and permutation.

    Each document is cut to the tokens between its first and last annotated token (by token id),
    marks are applied in mention order to the first row carrying the mention's first/last token id,
    so marks on shared tokens nest exactly as upstream's successive ``DataFrame.loc`` edits do.
    Fewer ids than mentions is an ``IndexError`` (once the mentions are found valid).
    """
    plan = by_identity(_PLANS, instance, lambda: _marking_plan(instance))
    if len(mention_ids) < len(instance.mentions):
        raise IndexError(f"{len(mention_ids)} mention ids for {len(instance.mentions)} mentions")
    used = []
    for text, marks in plan:
        # " ".join(parts with the marked ones replaced), as slices of the joined unmarked text
        pieces, done = [], 0
        for begin, end, head, closing in marks:
            pieces += (text[done:begin], head, *[f"]({mention_ids[k]})" for k in closing])
            done = end
        pieces.append(text[done:])
        used.append("".join(pieces))
    return used


def ecb_test_block(instance: Instance, ctx: RunContext, mention_ids: Sequence[int] | None) -> tuple[str, Any]:
    mention_ids = mention_ids or ()
    docs = sorted(ecb_documents(instance, mention_ids))
    shuffled = shuffle_documents(docs, ctx.max_num_docs, ctx.doc_order)
    target = _clusters_as_upstream([m.cluster_id for m in instance.mentions], mention_ids)
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
    clusters: dict[Any, list[int]] = {}
    for mention, mid in zip(instance.mentions, mention_ids, strict=True):
        clusters.setdefault(mention.cluster_id, []).append(int(mid))
    return base_block(ctx.instructions, docs), sorted(clusters.values())


# Coreference demos carry pre-marked documents and list-of-lists targets: the base-template demos.
ECB = Template(few_shots, ecb_test_block)
SCICO = Template(few_shots, scico_test_block)
