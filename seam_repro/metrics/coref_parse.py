"""Coreference answers: parse a model response into clusters and score a run of them.

Parsing is a port of upstream SEAM ``evaluation_classes/coreference.py::Coref._postprocess``
(HEAD 6ad83f4) without ``eval``:

* every match of ``\\[[\\d, ]+\\]`` (a flat list of digits, commas, spaces) becomes a cluster, in
  order; then, in the text after the last such match, the first ``\\[[\\d, ]+`` (an unclosed list)
  gets a ``]`` appended and becomes one more cluster;
* clusters with fewer than 2 entries are dropped; each mention maps to the index of the last kept
  cluster that lists it (so ``[[1,2],[2,3]]`` leaves mention 1 alone in cluster 0).

Upstream ``eval``s each match. A match that Python cannot evaluate (``[1 2]``, ``[01]``, ``[,1]``,
non-ASCII digits, an int over 4300 digits) makes upstream's whole evaluation crash; here it is
skipped and reported in ``ParsedClusters.upstream_would_crash``.

Scoring a run (``score_run``) reproduces how SEAM scores one run with the perl scorer: one document
per instance in a gold and a prediction file, micro-summed over all documents. Mode ``upstream``
scores the files SEAM writes, where the scorer matches mentions by *line position* (upstream quirk
5, see ``conll_io``); mode ``corrected`` matches mentions by id.

In mode ``upstream`` the gold file is read either whole (``gold_block_size=None``: *as intended*,
upstream with the file flushed) or *as published*: only the bytes CPython had written when perl
ran, for a file system block size (``metrics.unflushed``). perl scores every document of the gold
file it read, so documents cut away are ignored, a document cut mid-way is scored on its first
mentions, and a cut ``#begin document`` line is a document of the cut name.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal

from seam_repro.metrics.conll_io import (
    chains_from_assignment,
    gold_assignment,
    parse_conll_file,
    seam_gold_text,
    seam_prediction_text,
)
from seam_repro.metrics.coref import METRICS, CorefScores, score_document, total
from seam_repro.metrics.unflushed import published_gold

_CLOSED = re.compile(r"\[[\d, ]+\]")  # Unicode \d on purpose: upstream's pattern, same match spans
_OPEN = re.compile(r"\[[\d, ]+")
_UPSTREAM_INT_DIGITS = 4300
"""CPython 3.11's default int-string limit: ``eval`` of a longer literal raises SyntaxError."""
_NUMBER = re.compile(r"[0-9]+")
# an int literal eval takes: zeros (any length), or no leading zero and at most 4300 digits
_INT = rf"(?:0+|[1-9][0-9]{{0,{_UPSTREAM_INT_DIGITS - 1}}})"
_INT_LIST = re.compile(rf"\[ *(?:{_INT} *, *)*+(?:{_INT} *)?+\]", re.ASCII)
# ``[[int, ...], ...]`` (whitespace and trailing commas allowed); possessive repeats never backtrack
_STRICT_INNER = r"\[\s*(?:[0-9]+\s*,\s*)*+(?:[0-9]+\s*)?+\]"
_STRICT = re.compile(rf"\[\s*(?:{_STRICT_INNER}\s*,\s*)*+(?:{_STRICT_INNER}\s*)?+\]", re.ASCII)

Mode = Literal["upstream", "corrected"]


@dataclass(frozen=True)
class ParsedClusters:
    """A parsed coreference answer."""

    lists: tuple[tuple[int, ...], ...]
    """Every list found, in order (singletons and empty lists included)."""
    mention_to_cluster: dict[int, int]
    """What upstream writes to the prediction file: mention -> index among lists of size >= 2."""
    upstream_format_ok: bool
    """Upstream's ``correct_format``: at least one list found (empty lists count)."""
    valid: bool
    """Strict check: the whole answer is a list of lists of non-negative integers."""
    upstream_would_crash: tuple[str, ...] = ()
    """Matches upstream's ``eval`` would raise on (first 80 characters of each)."""

    @property
    def clusters(self) -> list[list[int]]:
        """Predicted clusters after upstream's singleton drop and last-assignment rule."""
        return chains_from_assignment(self.mention_to_cluster)


def parse_clusters(response: str) -> ParsedClusters:
    """Parse one (already extracted) model answer with upstream's rules (module docstring)."""
    lists: list[tuple[int, ...]] = []
    crash: list[str] = []
    closed = list(_CLOSED.finditer(response))
    tail = _OPEN.search(response, closed[-1].end() if closed else 0)
    found = [(m.group(), m.group()) for m in closed] + ([(tail.group(), tail.group() + "]")] if tail else [])
    for shown, text in found:  # an unclosed tail is evaluated with a "]" appended
        if _INT_LIST.fullmatch(text) is None:  # eval raises SyntaxError (missing comma, leading zero...)
            crash.append(shown[:80])
        else:  # the value eval gives
            lists.append(tuple(0 if n[0] == "0" else int(n) for n in _NUMBER.findall(text)))
    assignment: dict[int, int] = {}
    for i, cluster in enumerate(c for c in lists if len(c) > 1):
        for mention in cluster:
            assignment[mention] = i
    valid = _STRICT.fullmatch(response.strip()) is not None
    return ParsedClusters(tuple(lists), assignment, len(lists) > 0, valid, tuple(crash))


@dataclass(frozen=True)
class InstanceCorefScore:
    """One instance scored alone (its own document), with its parsed answer."""

    instance_id: str
    scores: CorefScores
    parsed: ParsedClusters | None
    """None when the run has no prediction for this instance (scored as an empty response)."""
    gold_read: Literal["whole", "partial", "absent"] = "whole"
    """How much of this instance's gold document the scorer read (as-published mode cuts)."""

    @property
    def conll_f1(self) -> float:
        return self.scores.conll_f1 or 0.0

    @property
    def scored(self) -> bool:
        """False when the scorer never saw this instance's gold document (it ignored the instance)."""
        return self.gold_read != "absent"


@dataclass(frozen=True)
class CorefRunScore:
    """A run's coreference score: micro-summed over all its instances, as the scorer does."""

    scores: CorefScores
    instances: list[InstanceCorefScore] = field(default_factory=list)
    gold_bytes_read: int | None = None
    """As-published mode: bytes of the gold file perl could read (None: the whole file)."""
    gold_bytes_total: int | None = None
    gold_documents_read: int | None = None
    """As-published mode: gold documents perl scored, cut names included."""

    @property
    def conll_f1(self) -> float:
        """CoNLL-F1 (0-100) from exact counts."""
        return self.scores.conll_f1 or 0.0

    @property
    def conll_f1_printed(self) -> float:
        """CoNLL-F1 (0-100) as SEAM computes it from the perl output (truncated percentages)."""
        return self.scores.conll_f1_printed or 0.0


def score_run(gold: Sequence[tuple[str, Sequence[Sequence[int]]]], pred: Sequence[tuple[str, str]],
              mode: Mode = "upstream", *, gold_block_size: int | None = None) -> CorefRunScore:
    """Score one run: ``gold`` = (instance id, gold clusters incl. singletons) in run order, ``pred``
    = (instance id, extracted model answer). Instances are matched by id (a repeated id keeps its
    last entry, like upstream's dicts and the scorer's document names); a gold instance without a
    prediction scores as an empty response; predictions for unknown ids are ignored.
    ``gold_block_size`` (mode ``upstream`` only): score the gold file as published (module docstring)."""
    parsed: dict[str, ParsedClusters] = {str(iid): parse_clusters(text) for iid, text in pred}
    gold_by_id = {str(iid): gold_assignment(clusters, "gold", iid) for iid, clusters in gold}
    read: dict[str, Literal["whole", "partial", "absent"]] = {iid: "whole" for iid in gold_by_id}
    extra: dict[str, int] = {}
    if mode == "upstream":
        if gold_block_size is None:
            gold_text: str | bytes = seam_gold_text(gold)
        else:
            gold_text, extra["gold_bytes_total"] = published_gold(gold, gold_block_size)
            extra["gold_bytes_read"] = len(gold_text)
        key_docs = parse_conll_file(gold_text, "<gold conll>", require_documents=False).documents
        pred_text = seam_prediction_text((iid, p.mention_to_cluster) for iid, p in parsed.items())
        resp_docs = parse_conll_file(pred_text, "<prediction conll>", require_documents=False).documents
        # perl scores every document of the key file it read
        scored = {name: score_document(key.entities, resp_docs[name].entities if name in resp_docs else [],
                                       METRICS) for name, key in key_docs.items()}
        if gold_block_size is not None:
            extra["gold_documents_read"] = len(key_docs)
            for iid, assignment in gold_by_id.items():
                doc = key_docs.get(f"id={iid}")
                if doc is None:
                    read[iid] = "absent"
                elif sum(map(len, doc.entities)) < len(assignment):
                    read[iid] = "partial"
        per_doc = {iid: scored.get(f"id={iid}", CorefScores()) for iid in gold_by_id}
    else:
        scored = per_doc = {iid: score_document(chains_from_assignment(assignment),
                                                parsed[iid].clusters if iid in parsed else [], METRICS)
                            for iid, assignment in gold_by_id.items()}
    ids = [str(iid) for iid, _ in gold]
    instances = [InstanceCorefScore(iid, per_doc[iid], parsed.get(iid), read[iid]) for iid in ids]
    return CorefRunScore(total(scored.values()), instances, **extra)

