"""The one typed instance model every loader produces and every renderer consumes.

A loader returns ``LoadedDataset``: every split of the source in the order upstream SEAM iterates
them (the upstream sampler consumes random draws for splits it never evaluates, so all splits are
kept). Instances keep the raw id as the source has it (``raw_id``: an int DataFrame index for
MultiNews/FuseReviews, a topic for ECB+, ``guid``/``id`` strings elsewhere) because upstream
renders and reports that id; ``instance_id`` is its canonical string form used in manifests.

The records are immutable named tuples (a corpus builds tens of thousands of tokens). What that
means for callers: ``inst._replace(...)`` instead of ``dataclasses.replace``; equality is tuple
equality over every field; the mapping defaults are one shared read-only ``{}``; never
``json.dumps`` a record (it would write a list).
"""

from collections.abc import Iterable, Mapping
from types import MappingProxyType
from typing import Any, NamedTuple


class Token(NamedTuple):
    """One ECB+ token row of the Cattan et al. JSON: ``[sent_id, token_id, token_text, is_annotated, ...]``."""

    sent_id: int
    token_id: int
    """Document-level token id (ECB+ ``t_id``); mentions refer to it."""
    text: str
    is_annotated: bool
    """True for tokens of validated sentences; upstream cuts each document to the span between the
    first and last such token."""


EMPTY_MAPPING: Mapping[str, Any] = MappingProxyType({})
"""The shared default of the mapping fields below: read-only, so no record can change another's."""


class Mention(NamedTuple):
    """A gold coreference mention.

    ECB+: ``doc_id`` and ``token_ids`` (document token ids, first and last mark the span).
    SciCo: ``paragraph`` (index into ``Instance.paragraphs``), ``start`` and ``end`` (inclusive token
    offsets inside that paragraph). ``cluster_id`` keeps the source's type (int or str).
    """

    cluster_id: Any
    doc_id: str = ""
    token_ids: tuple[int, ...] = ()
    paragraph: int = -1
    start: int = -1
    end: int = -1


class Document(NamedTuple):
    """One source document. Plain-text datasets fill ``text``; ECB+ fills ``tokens``."""

    doc_id: str
    text: str = ""
    title: str = ""
    tokens: tuple[Token, ...] = ()
    highlights: tuple[tuple[int, int], ...] = ()
    """FuseReviews: highlighted character spans ``[start, end)`` of ``text`` (``review_i_offsets``)."""


def plain_documents(texts: Iterable[str]) -> tuple[Document, ...]:
    """Documents ``"0"``, ``"1"``, ... holding these texts in order."""
    return tuple(Document(doc_id=str(i), text=t) for i, t in enumerate(texts))


class Instance(NamedTuple):
    """One evaluation instance (a topic for ECB+/SciCo, a question for MuSiQue, ...)."""

    dataset: str
    split: str
    instance_id: str
    raw_id: Any
    documents: tuple[Document, ...]
    question: str | None = None
    """MuSiQue question as written in the source (upstream appends '?' when rendering)."""
    aspect_label: str | None = None
    """OpenASP aspect label."""
    target: Any = None
    """Gold target: summary string; MuSiQue ``{"is_answerable", "answer_content"}``; clusters of
    mention indices for coreference (filled by the renderer once mention ids are drawn)."""
    answer_aliases: tuple[str, ...] = ()
    mentions: tuple[Mention, ...] = ()
    paragraphs: tuple[tuple[str, ...], ...] = ()
    """SciCo: tokens of every paragraph of the topic, in row order."""
    paragraph_doc_ids: tuple[int, ...] = ()
    """SciCo: the document index of each paragraph (``doc_ids`` column)."""
    review_alignments: tuple[str, ...] = ()
    """FuseReviews: unique review-side alignment span texts, sorted (coverage targets)."""
    extra: Mapping[str, Any] = EMPTY_MAPPING
    """Source fields kept for reporting only (never read by the renderer). Part of ``==`` (a
    dataclass field excluded it): equal instances come from equal source rows, extra included."""


class LoadedDataset(NamedTuple):
    """All splits of one dataset, in upstream iteration order, plus where they came from."""

    name: str
    splits: dict[str, list[Instance]]
    files: Mapping[str, str] = EMPTY_MAPPING
    """Relative file name -> sha256 of every file read (recorded in the manifest)."""

    def split(self, name: str) -> list[Instance]:
        from seam_repro.errors import MissingDataError

        if name not in self.splits:
            raise MissingDataError(f"{self.name}: split '{name}' not found; "
                                   f"available: {', '.join(self.splits) or 'none'}")
        return self.splits[name]
