"""``conll-score``: a drop-in for ``perl scorer.pl <metric> KEY RESPONSE`` (reference-coreference-
scorers v8.01) on CoNLL-2012 files, printing the scorer's TOTALS blocks plus the CoNLL score."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import click

from seam_repro.metrics.coref import METRICS, BlancCounts, CorefScores, Counts, perl_percent

if TYPE_CHECKING:
    from seam_repro.metrics.conll_io import ConllFile


def _num(value: float) -> str:
    """Numbers as perl prints them (``%.15g``: ``6`` not ``6.0``, ``3.33333333333333``)."""
    return f"{value:.15g}"


def _rpf_line(c: Counts) -> str:
    return (f"Recall: ({_num(c.recall_num)} / {_num(c.recall_den)}) {_num(perl_percent(c.recall))}%\t"
            f"Precision: ({_num(c.precision_num)} / {_num(c.precision_den)}) "
            f"{_num(perl_percent(c.precision))}%\tF1: {_num(perl_percent(c.f1))}%\n" + "-" * 74 + "\n")


def format_text(scores: CorefScores, metrics: list[str]) -> str:
    """The CoNLL score, then the TOTALS part of the perl scorer's output for each metric."""
    out = []
    if scores.conll_f1 is not None:
        # First, like perl's "version:" line, so parsers that split on "METRIC" (SEAM's
        # process_conll_out) never see it.
        out.append(f"CoNLL score (mean of MUC, B3, CEAF-e F1): {scores.conll_f1:.4f}"
                   f" (mean of printed F1s: {scores.conll_f1_printed:.4f})\n")
    for name in metrics:
        out += [f"\nMETRIC {name}:\n\n====== TOTALS =======\n",
                "Identification of Mentions: " + _rpf_line(scores.mentions)]
        m = scores.metric(name)
        if isinstance(m, BlancCounts):
            out += ["\nCoreference:\n", "Coreference links: " + _rpf_line(m.coref),
                    "Non-coreference links: " + _rpf_line(m.noncoref)]
            out.append(f"BLANC: Recall: ({_num(m.recall)} / 1) {_num(perl_percent(m.recall))}%\t"
                       f"Precision: ({_num(m.precision)} / 1) {_num(perl_percent(m.precision))}%\t"
                       f"F1: {_num(perl_percent(m.f1))}%\n" + "-" * 74 + "\n")
        elif m is not None:
            out.append("Coreference: " + _rpf_line(m))
    return "".join(out)


def _counts_json(c: Counts) -> dict[str, float]:
    return {k: getattr(c, k) for k in ("recall", "precision", "f1", "recall_num", "recall_den", "precision_num",
                                       "precision_den")}


def to_json(scores: CorefScores, metrics: list[str], key: Path, response: Path) -> dict[str, object]:
    """One JSON object: R/P/F1 as fractions (0-1) with their counts; CoNLL-F1 on the 0-100 scale."""
    out: dict[str, object] = {}
    for name in metrics:
        m = scores.metric(name)
        if isinstance(m, BlancCounts):
            out[name] = {"recall": m.recall, "precision": m.precision, "f1": m.f1,
                         "coref_links": _counts_json(m.coref), "noncoref_links": _counts_json(m.noncoref)}
        elif m is not None:
            out[name] = _counts_json(m)
    return {"key": str(key), "response": str(response), "documents": scores.n_documents,
            "mentions": _counts_json(scores.mentions), "metrics": out, "conll_f1": scores.conll_f1,
            "conll_f1_printed": scores.conll_f1_printed}


def mismatch_warnings(key: Path, response: Path, key_file: ConllFile, resp_file: ConllFile) -> list[str]:
    """What makes scorer.pl silently score less than the user expects: key documents absent from
    the response (scored as empty), response documents the key lacks (ignored), and cluster labels
    that are not numbers (ignored). The scores stay exactly perl's; this only says why. Taken from
    the reader's own pass over each file (``ConllFile``), so neither file is read again."""
    out = []
    key_set, resp_set = set(key_file.names), set(resp_file.names)
    missing = [n for n in dict.fromkeys(key_file.names) if n not in resp_set]
    extra = [n for n in dict.fromkeys(resp_file.names) if n not in key_set]
    if missing:
        also = f"; response has {extra[0]!r} first" if extra else ""
        out.append(f"warning: {response}: {len(missing)} of {len(key_set)} key document(s) have no response "
                   f"document of the same name and score as empty (first: {missing[0]!r}{also})")
    elif extra:
        out.append(f"warning: {response}: {len(extra)} response document(s) are not in the key and are ignored "
                   f"(first: {extra[0]!r})")
    for path, odd in ((key, key_file.odd_label), (response, resp_file.odd_label)):
        if odd is not None:
            out.append(f"warning: {path}:{odd[0]}: coreference label {odd[1]!r} is not a number; scorer.pl ignores "
                       "it (cluster ids must be integers, e.g. (12) or (12 ... 12))")
    return out[:3]


@click.command("conll-score", epilog="""\b
Examples:
  seam-repro conll-score key.conll response.conll              # all metrics + the CoNLL score
  seam-repro conll-score key.conll response.conll --metric muc
  seam-repro conll-score key.conll response.conll --json > scores.json""")
@click.argument("key", type=click.Path(dir_okay=False, path_type=Path))
@click.argument("response", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--metric", type=click.Choice(["all", *METRICS]), default="all", show_default=True,
              help="Metric to compute; 'all' runs muc, bcub, ceafm, ceafe, blanc like scorer.pl all.")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object instead of the scorer's text.")
def conll_score(key: Path, response: Path, metric: str, as_json: bool) -> None:
    """Score a CoNLL coreference RESPONSE file against KEY like the official perl scorer.

    Totals are micro-averaged over the key's documents (counts summed, then R/P/F1); a document
    missing from RESPONSE counts as an empty response. With all metrics the CoNLL score (mean of
    MUC, B3 and CEAF-e F1, 0-100) is printed too.
    """
    from seam_repro.metrics.conll_io import read_conll_file, score_conll

    if "numpy" not in sys.modules:
        # CEAF's assignments, where scipy's solver is needed, need numpy but no BLAS: one OpenBLAS
        # thread instead of one per core halves numpy's start-up CPU in this single-purpose process
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
    metrics = list(METRICS) if metric == "all" else [metric]
    key_file = read_conll_file(key)
    resp_file = read_conll_file(response, require_documents=False)
    scores = score_conll(key_file.documents, resp_file.documents, metrics, response)
    for warning in mismatch_warnings(key, response, key_file, resp_file):
        click.echo(warning, err=True)
    if as_json:
        click.echo(json.dumps(to_json(scores, metrics, key, response), sort_keys=True))
    else:
        click.echo(format_text(scores, metrics), nl=False)
