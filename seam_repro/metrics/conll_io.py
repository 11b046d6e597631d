"""CoNLL coreference file reading and SEAM's two-column file writing.

Reader: a port of how the official scorer (conll/reference-coreference-scorers v8.01,
``lib/CorScorer.pm``: ``GetFileNames`` + ``GetCoreference``) turns a file into documents of
entities. Its rules, kept on purpose because scores depend on them:

* a document starts at a ``#begin document <name>`` line (name = the rest of the line, so
  ``(LuoTestCase); part 0`` and ``id=12`` are both names); if a name occurs twice the **last**
  occurrence is scored; it ends at the first line containing ``#end document`` (or end of file);
* blank and whitespace-only lines are skipped and do not count as tokens; every other line is one
  token, numbered from 0 within the document (a mention is identified by these token positions,
  never by any id written in the file);
* the coreference column is the last tab-separated field (trailing empty fields dropped, as perl's
  ``split`` does); ``_`` means none; ``(N)`` is a one-token mention, ``(N`` opens, ``N)`` closes the
  most recently opened mention of entity ``N``; on one line singles are read first, then opens,
  then closes; entity labels are compared as strings (``01`` and ``1`` differ).

Writers: SEAM's ``evaluation_classes/coreference.py::_evaluate`` (upstream HEAD 6ad83f4) writes one
``#begin document id=<id>`` block per instance with one ``"{mention_id}\\t({cluster})"`` line per
mention sorted by id, closed by ``#end document``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from seam_repro.errors import InputError
from seam_repro.files.reading import is_a
from seam_repro.metrics.coref import CorefScores, refuses_to_score, score_document, total

Span = tuple[int, int]
"""A mention as (first token, last token) position within its document."""

_BEGIN = re.compile(r"#\s*begin document (.*)", re.ASCII)
_END = re.compile(r"#\s*end document", re.ASCII)
_DOUBLE_ANTECEDENT = re.compile(r"\(([0-9]+\+[0-9])\)")
_SINGLE = re.compile(r"\(([0-9]+)\)")
_OPEN = re.compile(r"\(([0-9]+)")
_CLOSE = re.compile(r"([0-9]+)\)")
_PLAIN = re.compile(r"(?:\([0-9]+\)?|[0-9]+\))(?:\|(?:\([0-9]+\)?|[0-9]+\)))*")
"""A field of ``|``-separated ``(N)``, ``(N`` and ``N)`` parts: a plain field, which holds no
label the scorer skips."""
_LABEL = re.compile(r"\(?[0-9]+(\+[0-9])?\)?")
"""One ``|``-separated part of a coreference field that the scorer's numeric patterns can read."""
_QUIET = frozenset(("-", "_"))
"""Coreference fields that carry no mention."""


OddLabel = tuple[int, str]
"""(1-based line number, label) of a coreference label the scorer's numeric patterns skip."""


@dataclass(frozen=True)
class ConllDocument:
    """One document: its entities (each a tuple of spans, in the order the scorer collects them)."""

    name: str
    entities: tuple[tuple[Span, ...], ...]
    n_tokens: int


@dataclass(frozen=True)
class ConllFile:
    """A whole file as read once: its scored documents plus what ``conll-score`` warns about."""

    documents: dict[str, ConllDocument]
    names: tuple[str, ...]
    """Every ``#begin document`` name in file order, repeats kept."""
    odd_label: OddLabel | None
    """The first label in a scored document that is not a number (the scorer ignores it)."""


def _labels(info: str) -> tuple[list[str], list[str], list[str]]:
    """Single, opening and closing entity labels of one coreference field, found as the scorer
    finds them: repeated leftmost ``s///`` removal, double antecedents first, then singles (a
    removal can make a new match, as in ``((1)2)``), then opens, then closes."""
    info, _ = _remove_all(_DOUBLE_ANTECEDENT, info)
    info, single = _remove_all(_SINGLE, info)
    info, opening = _remove_all(_OPEN, info)
    _, closing = _remove_all(_CLOSE, info)
    return single, opening, closing


def _remove_all(pattern: re.Pattern[str], info: str) -> tuple[str, list[str]]:
    """Perl ``s/pattern//`` repeated until no match is left: the rest, and group 1 of each match."""
    labels = []
    while m := pattern.search(info):
        info = info[: m.start()] + info[m.end() :]
        labels.append(m.group(1))
    return info, labels


def _odd_label(line: str) -> str | None:
    """The first part of a line's coreference field that the scorer's numeric patterns would skip,
    the field read as a person reads it (the last non-empty tab field, stripped; comment lines and
    one-field lines have none)."""
    line = line.rstrip("\r")
    if not line.strip() or line.lstrip().startswith("#"):
        return None
    fields = [f for f in line.split("\t") if f != ""]
    coref = fields[-1].strip() if len(fields) > 1 else ""
    if not coref or coref in _QUIET:
        return None
    return next((part for part in coref.split("|") if part and not _LABEL.fullmatch(part)), None)


def _parse_document(lines: list[str], begin: int, end: int | None, name: str, source: str
                    ) -> tuple[ConllDocument, OddLabel | None]:
    """Read the document whose ``#begin document`` is line index ``begin`` and whose first
    ``#end document`` line after it is ``end`` (None: end of file); the scorer's ``GetCoreference``.
    Also returns the document's first label the scorer skips (see ``_odd_label``): only fields
    that are neither quiet nor plain are looked at for it."""
    body = lines[begin + 1 : len(lines) if end is None else end]
    # token -> its line in body; blank means perl's whitespace class on bytes (ASCII whitespace)
    rows = [i for i, line in enumerate(body) if line.strip(" \t\n\r\x0b\x0c")]
    fields = [body[i].rstrip("\t").rpartition("\t")[2] for i in rows]
    marked = [(t, f) for t, f in enumerate(fields) if "(" in f or ")" in f]
    suspect = [t for t, f in enumerate(fields) if f not in _QUIET and not _PLAIN.fullmatch(f)]

    index: dict[str, int] = {}
    entities: list[list[Span]] = []
    half: dict[int, list[int]] = {}

    def entity(label: str) -> int:  # entities are numbered in order of first sight
        e = index.setdefault(label, len(index))
        if e == len(entities):
            entities.append([])
        return e

    for token, info in marked:
        singles, opens, closes = _labels(info)
        for label in singles:
            entities[entity(label)].append((token, token))
        for label in opens:
            half.setdefault(entity(label), []).append(token)
        for label in closes:
            e = entity(label)
            if not half.get(e):
                raise InputError(f"{source}:{begin + 2 + rows[token]}",
                                 f"'{label})' closes a mention of entity {label} that was never opened; "
                                 f"expected an earlier '({label}' in document '{name}'",
                                 field="coreference column")
            entities[e].append((half[e].pop(), token))
    for e, starts in half.items():
        if starts:
            label = next(k for k, v in index.items() if v == e)
            where = f"'#end document' (line {end + 1})" if end is not None else "the end of the file"
            raise InputError(f"{source}:{begin + 2 + rows[starts[-1]]}",
                             f"mention '({label}' of document '{name}' is never closed; expected '{label})' "
                             f"before {where}", field="coreference column")
    doc = ConllDocument(name, tuple(tuple(spans) for spans in entities), len(fields))
    for token in sorted(suspect):
        label = _odd_label(body[rows[token]])
        if label is not None:
            return doc, (begin + 2 + rows[token], label)
    return doc, None


def parse_conll_file(data: bytes | str, source: str = "<text>", *, require_documents: bool = True) -> ConllFile:
    """A CoNLL file's content: its documents keyed by name, in order of last occurrence, with the
    names and first skipped label ``conll-score`` warns about.

    ``source`` names the file in error messages. A file without any ``#begin document`` line is an
    error when ``require_documents`` (the perl scorer would silently score nothing).
    """
    raw = data.encode("utf-8", errors="surrogateescape") if isinstance(data, str) else data
    # lines as perl's <F> + chomp see them: split on \n only; surrogateescape keeps every byte
    lines = raw.decode("utf-8", errors="surrogateescape").split("\n")
    if lines[-1] == "":
        lines.pop()
    last_begin: dict[str, int] = {}  # name -> line index of its last begin line (so in file order)
    names: list[str] = []
    ends: list[int] = []
    for i, line in enumerate(lines):
        begin = _BEGIN.match(line.removesuffix("\r")) if "begin document" in line else None  # cheap pre-check
        if begin:
            name = begin.group(1)
            names.append(name)
            last_begin.pop(name, None)
            last_begin[name] = i
        if "end document" in line and _END.search(line):
            ends.append(i)
    if require_documents and not last_begin:
        raise InputError(source, "no '#begin document <name>' line found; expected a CoNLL coreference file")
    docs = {}
    odd: list[OddLabel] = []
    for name, begin in last_begin.items():
        after = bisect.bisect_right(ends, begin)
        docs[name], found = _parse_document(lines, begin, ends[after] if after < len(ends) else None, name, source)
        if found:
            odd.append(found)
    return ConllFile(docs, tuple(names), min(odd, default=None))


def read_conll_file(path: str | Path, *, require_documents: bool = True) -> ConllFile:
    """Read a CoNLL-2012 (or SEAM two-column) coreference file; see the module docstring for rules."""
    p = Path(path)
    try:
        data = p.read_bytes()
    except OSError as exc:
        raise InputError(p, f"cannot read file: {exc.strerror or exc}") from exc
    return parse_conll_file(data, str(p), require_documents=require_documents)


def chains_from_assignment(mention_to_cluster: Mapping[int, int]) -> list[list[int]]:
    """Entities as the scorer builds them from a two-column block: mentions in sorted-id order,
    entities in order of their first mention."""
    order: dict[int, list[int]] = {}
    for mention in sorted(mention_to_cluster):
        order.setdefault(mention_to_cluster[mention], []).append(mention)
    return list(order.values())


def gold_assignment(
    clusters: Sequence[Sequence[int]], source: str = "gold", record: object = None
) -> dict[int, int]:
    """Mention -> cluster index as upstream builds it from a gold target (a mention listed in two
    clusters keeps the later one, as upstream's dict assignment does)."""
    out: dict[int, int] = {}
    if isinstance(clusters, (str, bytes)) or not isinstance(clusters, Sequence):
        raise InputError(source, "expected a list of clusters (lists of int mention ids)", record, "target")
    for cluster_id, cluster in enumerate(clusters):
        if isinstance(cluster, (str, bytes)) or not isinstance(cluster, Sequence):
            raise InputError(source, f"cluster {cluster_id} is not a list of int mention ids", record,
                             "target")
        for mention in cluster:
            if not is_a(mention, int):
                raise InputError(source, f"cluster {cluster_id} holds {mention!r}; expected int mention ids",
                                 record, "target")
            out[mention] = cluster_id
    return out


def seam_block(instance_id: str, mention_to_cluster: Mapping[int, int]) -> str:
    """One ``#begin document id=...`` block exactly as upstream writes it."""
    text = str(instance_id)
    if "\n" in text or "\r" in text:
        raise InputError("conll writer", f"instance id {text!r} contains a line break; ids must be one line")
    parts = [f"#begin document id={text}\n"]
    parts.extend(f"{m}\t({mention_to_cluster[m]})\n" for m in sorted(mention_to_cluster))
    parts.append("#end document\n")
    return "".join(parts)


def seam_gold_text(instances: Iterable[tuple[str, Sequence[Sequence[int]]]]) -> str:
    """Upstream's gold file: every mention, singletons included, one block per instance."""
    return "".join(seam_block(iid, gold_assignment(clusters, "gold", iid)) for iid, clusters in instances)


def seam_prediction_text(instances: Iterable[tuple[str, Mapping[int, int]]]) -> str:
    """Upstream's prediction file from parsed assignments (``coref_parse``: only mentions of
    clusters of size >= 2 are in the assignment)."""
    return "".join(seam_block(iid, assignment) for iid, assignment in instances)


def score_conll_files(key_path: str | Path, response_path: str | Path, metrics: Sequence[str]) -> CorefScores:
    """Score a key and a response file as ``scorer.pl <metric> KEY RESPONSE`` does for each metric:
    every key document against the response document of the same name (missing = empty), counts
    summed over documents. Raises ``InputError`` where the scorer dies or refuses to score."""
    key_docs = read_conll_file(key_path).documents
    resp_docs = read_conll_file(response_path, require_documents=False).documents
    return score_conll(key_docs, resp_docs, metrics, response_path)


def score_conll(key_docs: Mapping[str, ConllDocument], resp_docs: Mapping[str, ConllDocument],
                metrics: Sequence[str], response_path: str | Path) -> CorefScores:
    """``score_conll_files`` on documents already read (``response_path`` is named in the refusal)."""
    scores = total(
        score_document(doc.entities, resp_docs[name].entities if name in resp_docs else (), metrics)
        for name, doc in key_docs.items()
    )
    if refuses_to_score(scores.repeated_mentions, len(metrics)):
        raise InputError(response_path, f"{scores.repeated_mentions} repeated response mention(s) (a span "
                         "listed again after it matched a key mention), counted once per metric pass "
                         f"({len(metrics)}); the reference scorer refuses to score above 10: list each "
                         "mention once")
    return scores
