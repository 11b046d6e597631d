"""FuseReviews loader: port of the data handling in upstream SEAM
``datasets_classes/mds/fuse_reviews.py`` (``load_dataset("lovodkin93/FuseReviews")``, the
``review_i_offsets`` highlights and ``_get_all_review_side_alignments``).

Input: a folder with ``train.csv``, ``dev.csv``, ``test.csv`` (HF splits train/validation/test),
or one CSV file whose name starts with ``train``/``dev``/``validation``/``test``. Two column
layouts are read (detected per file):

* HF layout: ``review_{0..7}_text``, ``review_{i}_offsets`` (JSON ``[[start, end], ...]``),
  ``review_{i}_alignments`` (JSON list of ``{"review": {"text": ..., ...}, ...}``; absent or
  unused for test), ``output``.
* The authors' layout (fusereviews/multi-review-fusion-in-context
  ``dev__highlights_with_full_inputs.csv``): ``review_{i}_highlight_spans`` for the offsets,
  ``summary_text`` for the output, and one ``alignments`` column (JSON list of
  ``{"review_name", "review_span_offsets": "s, e;s, e", ...}``). Each alignment becomes a
  review-side dict ``{"text": spans joined by " ... ", "offsets": [[s, e], ...]}`` (the join the
  authors use in ``clustered_alignments``); entries whose offsets are ``NaN`` carry no span and
  are skipped.

Review-side alignment targets follow upstream: unique ``(review name, review dict)`` pairs (not
unique texts, so one text can appear twice), texts sorted; empty for the ``test`` split.
Highlights keep file order; upstream sorts them when inserting ``{HS}``/``{HE}``.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

from seam_repro.datasets import file_hashes, open_text
from seam_repro.errors import InputError
from seam_repro.files.reading import is_a, parse_json_text
from seam_repro.instances import Document, Instance, LoadedDataset

DATASET = "FuseReviews"
N_REVIEWS = 8
FILE_SPLITS: dict[str, str] = {"train": "train", "dev": "validation", "validation": "validation", "test": "test"}
SPLIT_ORDER: tuple[str, ...] = ("train", "validation", "test")


def _json_list(path: Path, rec: str, row: dict[str, str], col: str, form: str, not_list: str = "") -> list[Any]:
    """One JSON list cell of the CSV (``not_list``: the error when it is no list, default "expected
    {form}"); pandas wrote missing offsets in the authors' CSV as bare ``NaN``, kept as NaN."""
    if col not in row or row[col] is None:
        raise InputError(path, f"missing column; expected {form}", record=rec, field=col)
    try:
        value = parse_json_text(row[col], path, record=rec, allow_nan=True)
    except InputError as exc:
        raise InputError(path, f"{str(exc).rsplit(': ', 1)[-1]}; expected {form}", record=rec, field=col) from None
    if not isinstance(value, list):
        raise InputError(path, not_list or f"expected {form}", record=rec, field=col)
    return value


def _spans(path: Path, rec: str, col: str, value: list[Any], text_len: int) -> tuple[tuple[int, int], ...]:
    """Validate ``[[start, end], ...]`` character spans inside a text of ``text_len`` characters."""
    out = []
    for pair in value:
        if not (isinstance(pair, list) and len(pair) == 2 and all(is_a(x, int) for x in pair)):
            raise InputError(path, f"span {pair!r}: expected [start, end] ints", record=rec, field=col)
        s, e = pair
        if not 0 <= s <= e <= text_len:
            raise InputError(path, f"span [{s}, {e}] out of range; expected 0 <= start <= end <= {text_len}", record=rec, field=col)
        out.append((s, e))
    return tuple(out)


def _parse_offsets(path: Path, rec: str, text: str, value: str) -> list[list[int]]:
    """Authors' ``"s, e;s, e"`` offset strings -> ``[[s, e], ...]`` within ``text``."""
    out = []
    for part in value.split(";"):
        bits = [b.strip() for b in part.split(",")]
        if len(bits) != 2 or not all(b.isdigit() for b in bits):
            raise InputError(path, f"review_span_offsets {value!r}: expected 's, e' pairs joined by ';'", record=rec, field="alignments")
        s, e = int(bits[0]), int(bits[1])
        if not 0 <= s <= e <= len(text):
            raise InputError(path, f"review span [{s}, {e}] out of range for a {len(text)}-character review", record=rec, field="alignments")
        out.append([s, e])
    return out


def _hf_alignments(path: Path, rec: str, row: dict[str, str]) -> list[tuple[str, dict]]:
    out = []
    for i in range(N_REVIEWS):
        col = f"review_{i}_alignments"
        for a in _json_list(path, rec, row, col, 'a JSON list of {"review": {"text": ...}} objects'):
            review = a.get("review") if isinstance(a, dict) else None
            if not isinstance(review, dict) or not isinstance(review.get("text"), str):
                raise InputError(path, 'alignment without a "review" object holding a "text" string', record=rec, field=col)
            out.append((f"review_{i}", review))
    return out


def _author_alignments(path: Path, rec: str, row: dict[str, str], texts: list[str]) -> list[tuple[str, dict]]:
    items = _json_list(path, rec, row, "alignments", 'a JSON list of {"review_name", "review_span_offsets"} objects',
                       "expected a JSON list of alignment objects")
    out = []
    for a in items:
        name = a.get("review_name") if isinstance(a, dict) else None
        offsets = a.get("review_span_offsets") if isinstance(a, dict) else None
        if not isinstance(name, str) or not name.startswith("review_") or not name[7:].isdigit() or int(name[7:]) >= N_REVIEWS:
            raise InputError(path, f"alignment {a!r}: expected review_name review_0..review_7", record=rec, field="alignments")
        if isinstance(offsets, float) and math.isnan(offsets):
            continue  # the authors' file marks "no review span" with NaN
        if not isinstance(offsets, str):
            raise InputError(path, f"alignment {a!r}: expected review_span_offsets 's, e;s, e'", record=rec, field="alignments")
        text = texts[int(name[7:])]
        spans = _parse_offsets(path, rec, text, offsets)
        out.append((name, {"text": " ... ".join(text[s:e] for s, e in spans), "offsets": spans}))
    return out


def review_side_alignments(pairs: list[tuple[str, dict]]) -> tuple[str, ...]:
    """Upstream ``_get_all_review_side_alignments`` + ``sorted``: dedupe on the JSON form of
    ``{"review_name", "review_align_dict", "review_span_text"}``, keep the texts, sort them."""
    unique = {
        json.dumps({"review_name": name, "review_align_dict": review, "review_span_text": review["text"]}): review["text"]
        for name, review in pairs
    }
    return tuple(sorted(unique.values()))


def _instance(path: Path, index: int, row: dict[str, str], split: str) -> Instance:
    rec = f"row {index}"
    authors = "review_0_highlight_spans" in row
    texts, documents = [], []
    for i in range(N_REVIEWS):
        tcol = f"review_{i}_text"
        if tcol not in row:
            raise InputError(path, "missing column; expected the review text", record=rec, field=tcol)
        text = row[tcol] or ""
        ocol = f"review_{i}_highlight_spans" if authors else f"review_{i}_offsets"
        spans = _spans(path, rec, ocol, _json_list(path, rec, row, ocol, "a JSON list of [start, end] pairs"), len(text))
        texts.append(text)
        documents.append(Document(doc_id=f"review_{i}", text=text, highlights=spans))
    output = row.get("summary_text" if authors else "output") or ""
    if split == "test":
        alignments: tuple[str, ...] = ()  # upstream: test has no gold alignments
    elif authors:
        alignments = review_side_alignments(_author_alignments(path, rec, row, texts))
    else:
        alignments = review_side_alignments(_hf_alignments(path, rec, row))
    return Instance(DATASET, split, str(index), index, tuple(documents), target=output, review_alignments=alignments,
                    extra={"layout": "authors" if authors else "hf",
                           **({"summary_name": row["summary_name"]} if "summary_name" in row else {})})


def _read_csv(path: Path, split: str) -> list[Instance]:
    csv.field_size_limit(1 << 30)
    try:
        with open_text(path, newline="") as fh:
            rows = list(csv.DictReader(fh))
    except (csv.Error, UnicodeDecodeError) as exc:
        raise InputError(path, f"cannot read as a UTF-8 CSV: {exc}") from None
    return [_instance(path, i, row, split) for i, row in enumerate(rows)]


def _split_of(f: Path) -> str:
    for prefix, split in FILE_SPLITS.items():
        if f.name.startswith(prefix):
            return split
    raise InputError(f, "cannot tell the split; expected a name starting with train, dev, validation or test")


def load(path: Path) -> LoadedDataset:
    """Load FuseReviews from a folder of split CSVs or from one split CSV file."""
    p = Path(path)
    if p.is_file():
        files = {_split_of(p): p}
    else:
        found = {FILE_SPLITS[f.stem]: f for f in sorted(p.glob("*.csv")) if f.stem in FILE_SPLITS}
        if not found:
            raise InputError(p, "no split CSV; expected train.csv, dev.csv and test.csv")
        files = {s: found[s] for s in SPLIT_ORDER if s in found}
    splits = {split: _read_csv(f, split) for split, f in files.items()}
    return LoadedDataset(name=DATASET, splits=splits, files=file_hashes(p, list(files.values())))
